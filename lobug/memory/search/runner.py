"""A QueryRequest run against the database: hybrid ranking, filters, floors, token budget.

Memories and raw turns (kind `episode`) are ranked separately (`hybrid`) and merged by final
score: both are on the same scale (relevance normalised per corpus, plus the same memory
terms). `run_parallel` computes the word lists while the query is being embedded, then the
vector list and the fusion in one more round trip; `rank_all` computes the same lists in one
connection and is what `explain` uses, so a why() reproduces query()'s ranking exactly.
`run_asked` is /v1/query's: it embeds the question without the speakers' names last read and
has the word lists' round trip check them. A search reads each candidate row and each
similarity once (`Plan.reads`, `corpus.Reads`).

Two floors: `QueryRequest.threshold` is seed 001 §6's similarity floor (the cosine similarity,
1 − cosine distance, of the query's vector and the result's stored vector: a result without a
stored vector has none and is dropped under a threshold); `QueryRequest.min_score` floors the
final fused score.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import Any

import numpy as np

from lobug.memory.query import (
    EPISODE,
    QueryFilters,
    QueryRequest,
    QueryResult,
    Reach,
    Source,
    tokens_of,
)
from lobug.memory.search import hybrid, when, who
from lobug.memory.search.context import WEIGHTS as CONTEXT
from lobug.memory.search.context import QuestionWords, context_ranks, context_scores
from lobug.memory.search.corpus import MEMORIES, TURNS, Corpus, Reads
from lobug.memory.search.hybrid import SearchHit
from lobug.memory.search.scoring import Fused, ScoringWeights, fuse
from lobug.memory.search.when import Period
from lobug.memory.vectors import replies
from lobug.storage.database import Database
from lobug.storage.sqlite import has_table, placeholders
from lobug.storage.vector_index import index_of
from lobug.storage.vectors import pack

DEPTH = 50  # candidates per ranked list
# Never returned, whatever the filter says: a soft-deleted memory is deleted for the user and
# only waits for its purge (seed 001 §7).
HIDDEN_STATUSES = ("soft_deleted",)
EPISODE_STORE = "private"  # turns are the owner's own conversation log


@dataclass(slots=True)  # not frozen: one per candidate, a frozen __init__ costs µs
class Ranked:
    corpus: Corpus
    hit: SearchHit
    row: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return EPISODE if self.corpus is TURNS else str(self.row["kind"])

    @property
    def text(self) -> str:
        return str(self.row[self.corpus.text])

    def explain(self) -> dict[str, Any]:
        assert self.hit.breakdown is not None  # rank_all always re-scores
        return self.hit.breakdown.as_dict()


def memory_reach(req: QueryRequest, exclude_since: float | None, now: float | None) -> Reach | None:
    """The memories the request reaches (`now`: one past its `expires_at` then is not found,
    seed 002), or None when it asks for none."""
    kinds = tuple(k for k in req.wanted if k != EPISODE)
    statuses = tuple(s for s in req.reach.statuses if s not in HIDDEN_STATUSES)
    if not kinds or not statuses or not req.reach.stores:
        return None
    return replace(
        req.reach,
        filters=req.filters or QueryFilters(),
        kinds=kinds,
        statuses=statuses,
        exclude_session_since=exclude_since,
        live_at=now,
    )


def turn_reach(req: QueryRequest, exclude_since: float | None = None) -> Reach | None:
    """The turns the request reaches (`exclude_since`: with `reach.exclude_session`, that
    session's turns said before it still count, as for memories: the prompt's working memory
    holds only the rest), or None when it asks for none."""
    f, reach = req.filters or QueryFilters(), req.reach
    # Turns have no category, pin, layer, importance or writer: a filter on those excludes them.
    narrowed = (
        reach.categories is not None
        or reach.layer is not None
        or f.agent_id is not None
        or f.run_id is not None
        or f.actor_id is not None
        or f.pinned is not None
        or f.importance_min is not None
        or f.importance_max is not None
    )
    if EPISODE not in req.wanted or EPISODE_STORE not in reach.stores or narrowed:
        return None
    return Reach(
        user_id=reach.user_id,
        filters=f,
        exclude_session=reach.exclude_session,
        exclude_session_since=exclude_since if reach.exclude_session else None,
        owner_turns=reach.owner_turns,
    )


VECTOR_LIST = ("vector", "context")  # the lists that need the query's vector
WORD_LISTS = ("bm25", "entity")
LATEST_TOP = 10  # the context list's first turns that a question about now orders newest first
Lists = dict[str, dict[str, list[int]]]  # corpus table -> list name -> ids, best first


@dataclass(frozen=True)
class Plan:
    """One search: the request and how to run it."""

    req: QueryRequest
    weights: ScoringWeights
    min_similarity: float | None = None  # the vector list's floor (the prompt's)
    depth: int = DEPTH
    # The prompt leaves out of the session only what the working memory still holds (the
    # chat knows since when): facts learned earlier in a long session come back.
    exclude_since: float | None = None
    period: Period | None = None  # what the question's "last spring" means (`at`)
    now: float | None = None  # when it is asked: expired memories are left out (`at`)
    # The joint fusion normalised per kind (`per_kind`): the prompt's, where the owner's
    # facts must hold their own against the turns they came from.
    per_kind: bool = False
    # The speakers of the user's turns, when the caller has read them already (`words`).
    speakers: tuple[str, ...] | None = None

    @classmethod
    def at(
        cls,
        req: QueryRequest,
        weights: ScoringWeights,
        now: float,
        *,
        past: bool = True,
        **how: Any,
    ) -> Plan:
        """The plan of `req` asked at `now`: with the period its words name, if any, and
        without a recency prior when it asks about what happened (`when.asks_past`) — unless
        `past` is off: the household's "Did I take my pills?" wants the latest (the prompt)."""
        if past and when.asks_past(req.query):
            weights = weights.timeless()
        return cls(req, weights, period=when.period(req.query, now), now=now, **how)

    @cached_property
    def words(self) -> QuestionWords:
        """The question's words over the turns, read once for this search's lists and lead."""
        said_when = when.period_words(self.req.query) if self.period is not None else ()
        user = self.req.reach.user_id
        return QuestionWords(user, self.req.query, self.speakers, said_when, self.reads)

    @cached_property
    def reads(self) -> Reads:
        """The rows and similarities this search has read, each read once (`corpus.Reads`)."""
        return Reads()

    @property
    def threshold(self) -> float | None:
        """Seed 001 §6: drop results whose cosine similarity to the query is below."""
        return self.req.threshold

    def corpora(self) -> list[tuple[Corpus, Reach]]:
        memories = memory_reach(self.req, self.exclude_since, self.now)
        found = [(MEMORIES, memories), (TURNS, turn_reach(self.req, self.exclude_since))]
        return [(corpus, flt) for corpus, flt in found if flt is not None]


def ranked_lists(
    conn: Any, plan: Plan, vector: Sequence[float] | None, parts: Sequence[str]
) -> Lists:
    """The `parts` lists of every corpus the request covers. With the word lists (the round
    trip that runs while the question is embedded) it reads the question's words over the
    turns the context lists will rank (`QuestionWords.best`, memoised in `plan.words`): of
    the reach, and of the period and the speaker it names. They need no vector either."""
    found: Lists = {}
    for corpus, flt in plan.corpora():
        lists = hybrid.ranked_lists(
            conn,
            plan.req.query,
            vector,
            corpus=corpus,
            flt=flt,
            weights=plan.weights,
            depth=plan.depth,
            lists=[name for name in corpus.lists if name in parts],
            min_similarity=plan.min_similarity,
            question=plan.words,
            reads=plan.reads,
        )
        scopes = _scopes(conn, plan, corpus, flt)
        for name, inside in scopes.items():
            lists.update(scoped(conn, plan, vector, parts, corpus, inside, name, flt))
        if corpus is TURNS and "context" in parts:
            first = lists.get("who") or lists.get("context", [])
            lists.update(answering(conn, plan, first))
        if corpus is TURNS and "bm25" in parts:
            for reach in (flt, *scopes.values()):
                plan.words.best(conn, CONTEXT.depth, reach)
        found[corpus.table] = lists
    return found


def _scopes(conn: Any, plan: Plan, corpus: Corpus, flt: Reach) -> dict[str, Reach]:
    """The reach within the period the question names (`when`) and, over the turns, within
    what the speaker it names said (`who`), if it names one."""
    scopes = {}
    if plan.period is not None:
        scopes["when"] = replace(flt, said_in=plan.period)
    if corpus is TURNS and (name := plan.words.named_speaker(conn)):
        scopes["who"] = replace(flt, speaker=name)
    return scopes


def answering(conn: Any, plan: Plan, ids: Sequence[int]) -> dict[str, list[int]]:
    """Among the turns `ids` (the context list's, best first; the named speaker's when there is
    one), those that could give the answer a question's kind wants: for one asking when
    (`when.asks_when`), the turns that tell a time (`dated`: "When did Melanie go to the
    museum?"); for one asking how things stand now (`when.asks_now`), the first `LATEST_TOP`
    newest first (`latest`: of the statements that match, the last one said is how things
    stand). Nothing for any other question."""
    question = plan.req.query
    lists: dict[str, list[int]] = {}
    if ids and when.asks_when(question):
        texts = plan.reads.texts(conn, TURNS, ids)
        lists["dated"] = [i for i in ids if when.says_when(texts.get(i, ""))]
    if ids and when.asks_now(question):
        rows = plan.reads.rows(conn, TURNS, ids[:LATEST_TOP])
        lists["latest"] = sorted(rows, key=lambda i: (-float(rows[i]["ts"]), i))
    return lists


def scoped(
    conn: Any,
    plan: Plan,
    vector: Sequence[float] | None,
    parts: Sequence[str],
    corpus: Corpus,
    inside: Reach,
    name: str,
    outer: Reach,
) -> dict[str, list[int]]:
    """The question names a period ("last spring": `when`) or a speaker ("Liam's": `who`):
    one more list of the rows within it, so what was said then, or by them, comes first
    without hiding everything else. Turns are ranked by their context score within it
    (`search.context`: words and meaning, a reply credited with the question it answers,
    whoever asked it), memories by meaning. Its weight is what the vector, word and context
    lists within the scope once added up to (`scoring.LIST_WEIGHTS`)."""
    if corpus is not TURNS:
        if "vector" not in parts or vector is None or not has_table(conn, corpus.vectors):
            return {}
        found = hybrid.vector_knn(
            conn, vector, plan.depth, corpus=corpus, flt=inside, reads=plan.reads
        )
        return {name: [i for i, _ in found]}
    if "context" not in parts:
        return {}
    nearest: list[tuple[int, float]] = []
    if vector is not None and has_table(conn, corpus.vectors):
        deep = max(plan.depth, CONTEXT.depth)
        nearest = hybrid.vector_knn(conn, vector, deep, corpus=corpus, flt=inside, reads=plan.reads)
    ranks = context_ranks(
        conn,
        plan.req.query,
        nearest,
        plan.depth,
        flt=inside,
        outer=outer,
        question=plan.words,
        reads=plan.reads,
    )
    return {name: ranks}


def finish(
    conn: Any,
    plan: Plan,
    lists: Lists,
    *,
    now: float,
    similarity: Similarity | None = None,
) -> list[Ranked]:
    """Fuse and re-score; every candidate, best first (ties: memories first), the first turns
    by the size of their context score too (`lead`).

    One corpus: its lists fused as they are. Memories and turns together: one fusion over
    joint lists, so a weak match in a small store (five facts: the best of them first in its
    own lists) does not outrank a strong one in the big store. A joint vector list is ordered
    by the similarity to the query (`similarity`: the caller's, so the cut reuses what it looked
    up); a joint word list interleaves the corpora's ranks (BM25 scores of two tables are not
    comparable)."""
    present = [corpus for corpus in (MEMORIES, TURNS) if corpus.table in lists]
    similarity = similarity or Similarity(conn, None, plan.reads)
    similarity.read_keys({i for ids in lists.get(TURNS.table, {}).values() for i in ids})
    if len(present) == 1:
        corpus = present[0]
        hits, rows = hybrid.fuse_and_rescore(
            conn,
            lists[corpus.table],
            corpus=corpus,
            weights=plan.weights,
            now=now,
            reads=plan.reads,
        )
        ranked = [Ranked(corpus, h, rows[h.id]) for h in hits if h.id in rows]
        return lead(conn, plan, ranked, similarity)
    names = sorted({n for c in present for n in lists[c.table]}, key=hybrid.LIST_ORDER.index)
    joint = {name: _joint(present, lists, name, similarity) for name in names}
    w = plan.weights
    fused = fuse(joint, w.rrf_k, w.list_weights)
    if plan.per_kind:
        fused = normalised_per_kind(fused, present, lists, w)
    found: dict[int, Ranked] = {}  # tagged id -> the re-scored row
    for corpus in present:
        local = [
            Fused(_untag(f.id)[1], f.rrf, f.rrf_norm, f.ranks)
            for f in fused
            if _untag(f.id)[0] is corpus
        ]
        hits, rows = hybrid.rescored(
            conn, local, corpus=corpus, weights=w, now=now, reads=plan.reads
        )
        for hit in hits:
            if hit.id in rows:
                found[_tag(corpus, hit.id)] = Ranked(corpus, hit, rows[hit.id])
    ranked = [found[f.id] for f in fused if f.id in found]
    # Stable: equal scores keep the fused order, so explain reproduces a ranking exactly.
    ranked.sort(key=lambda r: -r.hit.score)
    return lead(conn, plan, ranked, similarity)


def normalised_per_kind(
    fused: Sequence[Fused], present: Sequence[Corpus], lists: Lists, w: ScoringWeights
) -> list[Fused]:
    """The joint fusion's relevance normalised per corpus: by the best score a row of its own
    corpus could reach, first in every list that corpus entered. Turns enter more lists than
    memories can (context, who, the answering lists), so normalised by every list a fact first
    in each of its three would count 0.4 and lose to a turn second in two; here it counts 1.
    The order of the fusion is kept: the re-score orders by relevance."""
    best = {
        corpus.table: sum(
            float(w.list_weights.get(name, 1.0)) / (w.rrf_k + 1)
            for name, ids in lists[corpus.table].items()
            if ids
        )
        for corpus in present
    }
    out = []
    for f in fused:
        top = best[_untag(f.id)[0].table]
        out.append(Fused(f.id, f.rrf, f.rrf / top if top else 0.0, f.ranks))  # not `replace`: µs
    return out


def lead(conn: Any, plan: Plan, ranked: list[Ranked], similarity: Similarity) -> list[Ranked]:
    """The turns among the first `context_top` results, re-scored with `w_context` times their
    context score by its size (`context.context_scores`), best first again: the rest keep
    their place (a boost only moves a turn up among the first). A turn said outside the
    period the question names gets none: the `when` list puts what was said then first,
    and the same words said another time must not overtake it."""
    w = plan.weights
    start, end = plan.period or (float("-inf"), float("inf"))
    top = [
        r
        for r in ranked[: w.context_top]
        if r.corpus is TURNS and start <= float(r.row["ts"]) < end
    ]
    if not top or w.w_context <= 0:
        return ranked
    # Their similarities and those of the questions they answer, in one read.
    asked = [int(r.row["reply_to"]) for r in top if r.row["reply_to"] is not None]
    similarity.read(TURNS, [r.hit.id for r in top] + asked)
    scores = context_scores(
        conn,
        plan.req.reach.user_id,
        plan.req.query,
        [r.hit.id for r in top],
        partial(similarity.of, TURNS),
        question=plan.words,
        reads=plan.reads,
    )
    # In place: the hits are this search's own (made by its re-score), and three `replace`
    # calls per turn cost more than the context score they carry.
    for item in ranked[: w.context_top]:
        if item.hit.id in scores and item.corpus is TURNS:
            item.hit.context = w.w_context * scores[item.hit.id]
            item.hit.score += item.hit.context
    return sorted(ranked, key=lambda r: -r.hit.score)


def _tag(corpus: Corpus, row_id: int) -> int:
    """One id space for the joint lists: memories even, turns odd."""
    return 2 * row_id + (corpus is TURNS)


def _untag(key: int) -> tuple[Corpus, int]:
    return (TURNS if key % 2 else MEMORIES), key // 2


def _joint(present: Sequence[Corpus], lists: Lists, name: str, similarity: Similarity) -> list[int]:
    per = [[_tag(c, i) for i in lists[c.table].get(name, [])] for c in present]
    if name == "vector" and similarity.blob is not None:
        scored = [
            (similarity.of(c, i), _tag(c, i)) for c in present for i in lists[c.table].get(name, [])
        ]
        return [key for sim, key in sorted(scored, key=lambda s: -(s[0] or 0.0))]
    merged: list[int] = []
    for rank in range(max((len(p) for p in per), default=0)):
        merged += [p[rank] for p in per if rank < len(p)]
    return merged


def rank_all(conn: Any, plan: Plan, vector: Sequence[float] | None, *, now: float) -> list[Ranked]:
    """Every candidate, best first, in one connection (explain)."""
    lists = ranked_lists(conn, plan, vector, VECTOR_LIST + WORD_LISTS)
    return finish(conn, plan, lists, now=now, similarity=Similarity(conn, vector, plan.reads))


class Similarity:
    """Cosine similarity (1 − cosine distance) of the query's vector and a result's stored
    vector (sqlite-vec `vec_distance_cosine` on memory_vectors / turn_vectors); None without
    a query vector, without a stored vector, or for a zero vector (no direction at all). A
    reply to a question is as near as the nearer of its own vector and its key, the question
    with the reply (`vectors.replies`, at its KEY_WEIGHT).

    What the search's KNNs found is taken from them (`reads`); the rest is read in batches
    (`read`, `read_keys`) from the vector index, or row by row from sqlite-vec without one."""

    def __init__(
        self, conn: Any, vector: Sequence[float] | None, reads: Reads | None = None
    ) -> None:
        self.conn = conn
        self.vector = vector
        self.reads = reads or Reads()
        self.index = index_of(conn)
        self.blob = None if vector is None else pack(vector)
        self._tables: dict[str, bool] = {}
        self._known: dict[tuple[str, int], float | None] = {}  # the fusion's, for the cut
        self._unit: np.ndarray | None = None

    def __call__(self, item: Ranked) -> float | None:
        return self.of(item.corpus, item.hit.id)

    def of(self, corpus: Corpus, row_id: int) -> float | None:
        own = self._own(corpus, row_id)
        if corpus is not TURNS or self.vector is None or not self._has(replies.TABLE):
            return own
        key = (replies.TABLE, row_id)
        if key not in self._known:
            self.read_keys([row_id])
        keyed = self._known[key]
        return own if keyed is None or (own is not None and own >= keyed) else keyed

    def read(self, corpus: Corpus, row_ids: Collection[int]) -> None:
        """The stored vectors' similarities of these rows, in one look at the vector index
        (without one, `of` reads them from sqlite-vec row by row)."""
        if self.vector is None or self.index is None or not self._has(corpus.vectors):
            return
        table = corpus.vectors
        todo = [
            i
            for i in dict.fromkeys(row_ids)
            if (table, i) not in self._known and (table, i) not in self.reads.similar
        ]
        if todo:
            found = self.index.similarities(self.conn, table, self.vector, todo)
            self._known.update(((table, i), found.get(i)) for i in todo)

    def read_keys(self, turn_ids: Collection[int]) -> None:
        """The replies' keys among these turns, in one read (`finish`: every turn of the
        lists, before their order is read), so `of` looks none up one by one."""
        if self.vector is None or not self._has(replies.TABLE):
            return
        todo = [i for i in turn_ids if (replies.TABLE, i) not in self._known]
        if self._unit is None:
            query = np.asarray(self.vector, dtype=np.float32)
            self._unit = query / (float(np.linalg.norm(query)) or 1.0)
        found = replies.similarity(self.conn, self._unit, todo) if todo else {}
        self._known.update(((replies.TABLE, i), found.get(i)) for i in todo)

    def _own(self, corpus: Corpus, row_id: int) -> float | None:
        if self.blob is None or not self._has(corpus.vectors):
            return None
        key = (corpus.vectors, row_id)
        if (near := self.reads.similar.get(key)) is not None:
            return near
        if key not in self._known and self.index is not None:
            self.read(corpus, [row_id])
        if key not in self._known:
            row = self.conn.execute(
                f"SELECT vec_distance_cosine(embedding, ?) FROM {corpus.vectors}"
                f" WHERE {corpus.vec_key} = ?",
                (self.blob, row_id),
            ).fetchone()
            self._known[key] = None if row is None or row[0] is None else 1.0 - float(row[0])
        return self._known[key]

    def _has(self, table: str) -> bool:
        if table not in self._tables:
            self._tables[table] = has_table(self.conn, table)
        return self._tables[table]


@dataclass(frozen=True)
class Kept:
    """A result that passed the cut and its similarity to the query (None: no vector for one)."""

    item: Ranked
    similarity: float | None = None


def cut(ranked: Sequence[Ranked], plan: Plan, similarity: Similarity | None = None) -> list[Kept]:
    """min_score, the similarity threshold, then top_k, then the token budget (always at least
    one result). Similarities are looked up best first, only until top_k results are kept."""
    req = plan.req
    kept: list[Kept] = []
    used = 0
    if similarity is not None:  # the first top_k in one read; more only under a threshold
        for corpus in (MEMORIES, TURNS):
            similarity.read(corpus, [r.hit.id for r in ranked[: req.top_k] if r.corpus is corpus])
    for item in ranked:
        if len(kept) >= req.top_k:
            break
        if plan.req.min_score is not None and item.hit.score < plan.req.min_score:
            break  # sorted by score: nothing after this one passes either
        similar = similarity(item) if similarity is not None else None
        if plan.threshold is not None and (similar is None or similar < plan.threshold):
            continue  # not sorted by similarity: a later one may pass
        cost = tokens_of(item.text)
        if req.budget_tokens is not None and kept and used + cost > req.budget_tokens:
            break
        kept.append(Kept(item, similar))
        used += cost
    return kept


def results(
    conn: Any,
    plan: Plan,
    lists: Lists,
    *,
    now: float,
    vector: Sequence[float] | None = None,
    detail: bool = True,
) -> list[QueryResult]:
    """Fuse, re-score, cut, and attach the memories' source turns. Each result's `explain`
    says its `similarity` to the query's `vector` (what a threshold is compared with; None
    without a vector on either side). Without `detail` (the prompt, which shows only the
    text) there are no sources and no explain: building them was a third of a turn's search."""
    similarity = Similarity(conn, vector, plan.reads) if vector is not None else None
    kept = cut(finish(conn, plan, lists, now=now, similarity=similarity), plan, similarity)
    ids = [k.item.hit.id for k in kept if k.item.corpus is MEMORIES] if detail else []
    sources = memory_sources(conn, ids)
    return [_result(k.item, sources, k.similarity, detail) for k in kept]


@dataclass
class Pending:
    """The query vector (awaited) and the word lists, still running on a reader connection."""

    vector: Sequence[float] | None
    lists: asyncio.Future[Lists]


async def while_embedding(
    db: Database, plan: Plan, vector: Awaitable[Sequence[float] | None]
) -> Pending:
    """Start the word lists (they need no vector), then wait for the vector."""
    words = asyncio.ensure_future(db.read(ranked_lists, plan, None, WORD_LISTS))
    try:
        return Pending(await vector, words)
    except BaseException:
        words.cancel()
        raise


def merge_lists(near: Lists, words: Lists) -> Lists:
    return {table: {**near.get(table, {}), **found} for table, found in words.items()}


def with_vector_list(
    conn: Any, plan: Plan, vector: Sequence[float] | None, words: Lists, *, now: float
) -> list[QueryResult]:
    """The vector list, then fusion and cut with the word lists already ranked. Without a
    vector (no embedder reachable) the context lists still rank turns by their words."""
    near = ranked_lists(conn, plan, vector, VECTOR_LIST)
    return results(conn, plan, merge_lists(near, words), now=now, vector=vector)


async def run_parallel(
    db: Database, plan: Plan, vector: Awaitable[Sequence[float] | None], *, now: float
) -> list[QueryResult]:
    """The search with the word lists computed while the query is embedded; then the KNN and
    the fusion in one more reader round trip."""
    words = await while_embedding(db, plan, vector)
    lists = await words.lists
    return await db.read(partial(with_vector_list, now=now), plan, words.vector, lists)


ATTEMPTS = 3  # a query asked again while the speakers keep changing under it: the last read holds


async def run_asked(
    db: Database,
    speakers: who.Speakers,
    plan_for: Callable[[tuple[str, ...]], Plan],
    embed: Callable[[tuple[str, ...]], Awaitable[Awaitable[Sequence[float] | None]]],
    *,
    user_id: str,
    now: float,
) -> list[QueryResult]:
    """`run_parallel` for a question whose speakers' names are left out of what is embedded
    (`who.without_speakers`): `embed` starts embedding the question without the names, and
    `plan_for` plans the search with them. The names are the ones last read (`speakers`);
    the word lists' round trip reads them again, and should they have changed, the question
    is embedded and searched again with the new ones — no round trip of their own."""
    names = speakers.known(user_id)
    if names is None:
        names = await db.read(speakers.read, user_id)
    for attempt in range(ATTEMPTS):
        plan = plan_for(names)
        vector = await embed(names)
        last = attempt == ATTEMPTS - 1
        words = asyncio.ensure_future(db.read(_checked_words, plan, speakers, last))
        try:
            asked = await vector
        except BaseException:
            words.cancel()
            raise
        found = await words
        if isinstance(found, tuple):
            names = found
            continue
        return await db.read(partial(with_vector_list, now=now), plan, asked, found)
    raise AssertionError("the last attempt keeps the names it read")  # pragma: no cover


def _checked_words(
    conn: Any, plan: Plan, speakers: who.Speakers, last: bool
) -> Lists | tuple[str, ...]:
    """The word lists, or the speakers as the turns say now when they differ from the plan's
    (unless this is the `last` attempt)."""
    names = speakers.read(conn, plan.req.reach.user_id)
    if names != plan.speakers and not last:
        return names
    return ranked_lists(conn, plan, None, WORD_LISTS)


def memory_sources(conn: Any, ids: Sequence[int]) -> dict[int, tuple[dict[str, Any], ...]]:
    """The turns each memory came from (provenance), oldest first, one entry per turn."""
    if not ids:
        return {}
    marks = placeholders(ids)
    rows = conn.execute(
        f"SELECT DISTINCT s.memory_id, s.turn_id, t.ref FROM memory_sources s"
        f" JOIN turns t ON t.id = s.turn_id WHERE s.memory_id IN ({marks})"
        f" ORDER BY s.memory_id, s.turn_id",
        tuple(ids),
    ).fetchall()
    found: dict[int, list[dict[str, Any]]] = {}
    for memory_id, turn_id, ref in rows:
        found.setdefault(int(memory_id), []).append({"turn_id": int(turn_id), "ref": ref})
    return {k: tuple(v) for k, v in found.items()}


def _result(
    item: Ranked,
    sources: Mapping[int, tuple[dict[str, Any], ...]],
    similarity: float | None = None,
    detail: bool = True,
) -> QueryResult:
    row = item.row
    explain = {**item.explain(), "similarity": similarity} if detail else {}
    if item.corpus is TURNS:
        return QueryResult(
            id=item.hit.id,
            kind=EPISODE,
            category=None,
            text=item.text,
            score=item.hit.score,
            store=EPISODE_STORE,
            sources=[Source(turn_id=item.hit.id, ref=row["ref"])],
            explain=explain,
        )
    return QueryResult(
        id=item.hit.id,
        kind=item.kind,
        category=row["category"],
        text=item.text,
        score=item.hit.score,
        store=str(row["store"]),
        sources=[Source(**s) for s in sources.get(item.hit.id, ())],
        explain=explain,
        status=row["status"],
        valid_until=row["valid_until"],
    )
