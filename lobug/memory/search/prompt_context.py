"""Inline retrieval for the prompt: hybrid search over facts (and insights, at low weight) and
the base memory document.

Two reader round trips per turn: the word lists while the query is embedded, then
`read_context`: the base memory unless cached, the delta header, and the top facts for the
user's words — vector KNN above the similarity floor, BM25 and entity matches,
fused and re-scored (`search`). Facts from the current session are left out (seed 003): the
working memory already holds that conversation. Only while it does: in a session longer than
the working-memory window, facts learned before the window's oldest message come back.

Category context modes (seed 001 §5, `lobug.access.CategoryPolicy`): a category with context
`all` is always in the prompt — every active, not superseded memory of it, in its own section
(`read_always`, at most ALWAYS_MAX memories and about ALWAYS_BUDGET_TOKENS tokens, pinned and
important first); `rag` is there only when retrieved, at most `rag_length` of the category per
prompt; `none` never (only an explicit /v1/query naming it finds it). `pick_relevant` applies
the last two to the ranked facts, so the search asks for more than `k` (`depth`). GET
/v1/context uses the same two functions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from lobug.access import STORES, UNCATEGORIZED, CategoryPolicy
from lobug.memory.graph import related
from lobug.memory.query import EPISODE, QueryFilters, QueryRequest, QueryResult, Reach, tokens_of
from lobug.memory.search import runner as search
from lobug.memory.search import snippet
from lobug.memory.search.asking import only_asks
from lobug.memory.search.fts import query_tokens
from lobug.memory.search.scoring import ScoringWeights
from lobug.memory.summaries import base_memory
from lobug.memory.table import delta
from lobug.memory.table.rows import unexpired
from lobug.storage.sqlite import placeholders

CONTEXT_DEPTH = 20  # candidates per ranked list: the prompt takes a handful
HEADER_BULLETS = 3  # seed 001 §1
ALWAYS_MAX = 20  # memories of `all` categories in one prompt, at most
ALWAYS_BUDGET_TOKENS = 400  # and about this many tokens of them (the first always fits)
ALWAYS_TITLE = "[What you always know about the user]"
CONFIRM = "Ask the user to confirm before you remember: {}"
# What the turn's search ranks for the owner's prompt: the joint search /v1/query runs (issue
# 39), facts, summaries and the owner's own past exchanges ranked together.
PROMPT_KINDS = ("fact", "insight", "summary", EPISODE)
# The turn block's memory, at most about this many tokens (issue 39: p95 ≤ 150; each costs
# ~33 ms of prefill on a Pi), and only what scores at least FLOOR of the best found. The
# cosine floor (`memory.min_similarity`) is the vector list's only: a word or entity match
# has its own bar (two of the question's words, a named entity), and held to the cosine
# floor too it lost 8 of 58 evidence questions on LoCoMo conv-26 with MiniLM (issue 44, row
# 24, docs/seeds.md).
BUDGET_TOKENS = 140
FLOOR = 0.5


def long_term_section(base: str) -> str | None:
    base = base.strip()
    return f"[Long-term memory]\n{base}" if base else None


def relevant_section(texts: Sequence[str]) -> str | None:
    if not texts:
        return None
    return "[Relevant memories]\n" + "\n".join(f"- {text}" for text in texts)


def always_section(texts: Sequence[str]) -> str | None:
    if not texts:
        return None
    return ALWAYS_TITLE + "\n" + "\n".join(f"- {text}" for text in texts)


def confirm_section(texts: Sequence[str]) -> str | None:
    """Pending consent proposals (seed 001 §10): the assistant asks before memory keeps them."""
    return "\n".join(CONFIRM.format(text) for text in texts) or None


class Sections(NamedTuple):
    """The prompt's memory sections, split by how often they change (issue 22).

    `stable` changes only when background work rewrites it: the chat puts it in the system
    message, before the conversation, so the model's prompt cache holds from turn to turn.
    `turn` belongs to this turn only: the chat puts it right before the user's new words."""

    stable: list[str]
    turn: list[str]

    def all(self) -> list[str]:
        return [*self.stable, *self.turn]


def sections(
    base: str,
    texts: Sequence[str],
    header: str | None = None,
    *,
    always: Sequence[str] = (),
    confirm: Sequence[str] = (),
    notes: Sequence[str] = (),
    turn_notes: Sequence[str] = (),
) -> Sections:
    """Seed 004 §2.3's sections and wording; empty ones left out. Stable: long-term memory,
    what is always known (context `all`), background thinking's `notes` (the weekly
    reflection). This turn's: the delta header (seed 001 §1), the relevant memories (facts,
    and insights that rank), `turn_notes` (procedures for this task), what to confirm."""
    stable = (long_term_section(base), always_section(always), *notes)
    turn = (header, relevant_section(texts), *turn_notes, confirm_section(confirm))
    return Sections([s for s in stable if s], [s for s in turn if s])


@dataclass(frozen=True)
class Always:
    """A memory of a category with context `all`."""

    id: int
    kind: str
    category: str | None
    text: str
    store: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def read_always(
    conn: Any,
    policy: CategoryPolicy,
    *,
    user_id: str,
    stores: Sequence[str] | None = None,
    categories: Sequence[str] | frozenset[str] | None = None,
    limit: int = ALWAYS_MAX,
    budget_tokens: int = ALWAYS_BUDGET_TOKENS,
    now: float | None = None,
) -> list[Always]:
    """Every active, still valid memory of the `all` categories (within `stores` and the
    allowed `categories`; None: no restriction): pinned, important and recent first, at most
    `limit` and about `budget_tokens` tokens."""
    names = [c for c in policy.with_context("all") if categories is None or c in categories]
    if not names or (stores is not None and not stores):
        return []
    sql = (
        "SELECT id, kind, category, content, store FROM memories WHERE user_id = ?"
        " AND status = 'active' AND valid_until IS NULL"
        f" AND COALESCE(category, ?) IN ({placeholders(names)})"
    )
    params: list[Any] = [user_id, UNCATEGORIZED, *names]
    if stores is not None:
        sql += f" AND store IN ({placeholders(stores)})"
        params += list(stores)
    if now is not None:  # seed 002: past its expires_at, hidden (issue 27)
        sql += f" AND {unexpired()}"
        params.append(now)
    rows = conn.execute(
        sql + " ORDER BY pinned DESC, importance DESC, updated_at DESC, id DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    kept: list[Always] = []
    used = 0
    for memory_id, kind, category, content, store in rows:
        used += tokens_of(content)
        if kept and used > budget_tokens:
            break
        kept.append(Always(int(memory_id), str(kind), category, str(content), str(store)))
    return kept


def read_always_for(
    conn: Any, req: QueryRequest, policy: CategoryPolicy, now: float | None = None
) -> list[Always]:
    """`read_always` within a request's user, stores and categories."""
    return read_always(
        conn,
        policy,
        user_id=req.reach.user_id,
        stores=req.reach.stores,
        categories=req.reach.categories,
        now=now,
    )


def pick_relevant(
    found: Sequence[QueryResult],
    policy: CategoryPolicy,
    k: int,
    skip: Collection[int] = (),
) -> list[QueryResult]:
    """The ranked facts the prompt shows: no `none` category, at most `rag_length` of a
    category, none already shown (`skip`: the always section), at most `k`. An archived fact
    is out of the prompt's default set: it comes in only as the best match, i.e. ranked above
    every current fact shown (issue 10: the allergy said once and archived still warns)."""
    kept: list[QueryResult] = []
    per: Counter[str] = Counter()
    current_shown = False
    for result in found:
        if len(kept) >= k:
            break
        if result.kind == EPISODE:  # the owner's own words: no category, no context mode
            kept.append(result)
            continue
        category = result.category or UNCATEGORIZED
        if result.id in skip or policy.context_mode(category) == "none":
            continue
        if result.status != "active" and current_shown:
            continue
        current_shown = current_shown or result.status == "active"
        cap = policy.rag_length(category)
        if cap is not None and per[category] >= cap:
            continue
        per[category] += 1
        kept.append(result)
    return kept


@dataclass(frozen=True)
class Shown:
    """A result as the prompt shows it: a fact as stored, an exchange as a dated snippet, a
    summary as its matching sentences (`snippet`)."""

    result: QueryResult
    text: str


def show(
    conn: Any,
    found: Sequence[QueryResult],
    question: str,
    *,
    budget_tokens: int | None = None,
    floor: float | None = None,
    now: float | None = None,
) -> list[Shown]:
    """`found` (best first) as the prompt shows them, those scoring at least `floor` of the
    first, until about `budget_tokens` tokens (the first always fits: the best match is worth
    its words); one that would pass the budget is left out, a shorter one after it may fit."""
    if not found:
        return []
    budget_tokens = BUDGET_TOKENS if budget_tokens is None else budget_tokens
    floor = FLOOR if floor is None else floor
    top = found[0].score
    found = [r for r in found if r is found[0] or r.score >= floor * top]
    said = _said(conn, [r.id for r in found if r.kind == EPISODE])
    # A memory found with the turn it came from says it once: the memory, in fewer words.
    told = _sources(conn, [r.id for r in found if r.kind != EPISODE])
    asked = set(query_tokens(question))
    kept: list[Shown] = []
    used = 0
    for result in found:
        if result.kind == EPISODE:
            if result.id not in said or result.id in told or _tells_nothing(result.text, asked):
                continue
            ts, role = said[result.id]
            text = snippet.exchange(result.text, question, ts=ts, role=role, now=now)
        elif result.kind == "summary":
            text = snippet.matching(result.text, question)
        else:
            text = result.text
        cost = tokens_of(text)
        if kept and used + cost > budget_tokens:
            continue
        kept.append(Shown(result, text))
        used += cost
    return kept


def _tells_nothing(text: str, asked: set[str]) -> bool:
    """A past turn that only asks ("Did I take my pills?" yesterday), or says no word the
    question does not (the same request made before), tells the model nothing."""
    return only_asks(text) or set(query_tokens(text)) <= asked


def _sources(conn: Any, ids: Sequence[int]) -> set[int]:
    """The turns the memories `ids` came from."""
    if not ids:
        return set()
    marks = placeholders(ids)
    rows = conn.execute(
        f"SELECT turn_id FROM memory_sources WHERE memory_id IN ({marks})", tuple(ids)
    )
    return {int(r[0]) for r in rows}


def _said(conn: Any, ids: Sequence[int]) -> dict[int, tuple[float, str]]:
    """(when, by whom: its role) of each turn id."""
    if not ids:
        return {}
    marks = placeholders(ids)
    rows = conn.execute(f"SELECT id, ts, role FROM turns WHERE id IN ({marks})", tuple(ids))
    return {int(r[0]): (float(r[1]), str(r[2])) for r in rows}


def depth(k: int) -> int:
    """How many ranked facts to ask for so that `pick_relevant` can still fill `k`."""
    return max(CONTEXT_DEPTH, 2 * k)


def context_plan(
    text: str,
    *,
    user_id: str,
    session_id: str,
    k: int,
    min_similarity: float,
    weights: ScoringWeights,
    window_start: float | None,
    now: float,
    stores: tuple[str, ...] = STORES,
    categories: Collection[str] | None = None,
) -> search.Plan:
    """The prompt's search: facts, and for the owner (every store, no category allowlist)
    theory-of-mind insights too (seed 001 §3: "surfaced in retrieval with low weight",
    `scoring.DEMOTED`, so one is shown only when it ranks for these words; like the
    reflection, they read the owner's conversations: no one else's prompt gets them), above
    the similarity floor, not what the working memory still holds of this session (learned
    since `window_start`; None: all of it), in the caller's `stores` and `categories` (None:
    all). It ranks `depth(k)` of them: `pick_relevant` cuts them to `k` by the categories'
    context modes."""
    owner = set(STORES) <= set(stores) and categories is None
    # A turn is the owner's own words (the private store): only the owner's prompt searches
    # them, as it does the insights.
    req = QueryRequest.model_construct(
        query=text,
        kinds=list(PROMPT_KINDS if owner else ("fact",)),
        # The owner's own words, not Lo-Bug's replies: a reply restates what the prompt held
        # (or what the model made up), and shown again it would feed on itself.
        filters=QueryFilters(role="user"),
        top_k=depth(k),
        reach=Reach(
            user_id=user_id,
            stores=tuple(stores),
            categories=None if categories is None else tuple(sorted(categories)),
            # Archived facts answer when they match best; replaced ones are not the truth now.
            superseded=False,
            exclude_session=session_id,
            owner_turns=True,  # a guest's words never speak as the owner's
        ),
    )
    # "Did I take my pills?" wants the latest: the past-tense rule (no recency prior for a
    # question about what happened, tuned on LoCoMo's) stays off the household's prompt.
    return search.Plan.at(
        req,
        weights,
        now,
        past=False,
        per_kind=True,
        min_similarity=min_similarity,
        depth=depth(k),
        exclude_since=window_start,
    )


@dataclass(frozen=True)
class News:
    """The delta header for a session (None: nothing new) and the revision it covers."""

    header: str | None
    rev: int


@dataclass(frozen=True)
class TurnMemory:
    """What the prompt gets from memory for one turn."""

    base: str | None  # None: not read (the caller has it cached)
    found: list[Shown]  # the relevant memories and exchanges, context modes and budget applied
    news: News
    always: list[Always]  # the `all` categories' memories
    # Facts tied to `found` by a relation edge: shown with them, but not asked for, so not
    # counted as uses (a neighbour shown every week must not grow strong from that alone).
    related: list[QueryResult] = field(default_factory=list)


def read_context(
    conn: Any,
    plan: search.Plan,
    vector: Sequence[float] | None,
    words: search.Lists,
    *,
    now: float,
    k: int,
    policy: CategoryPolicy,
    want_base: bool,
    shown: int | None = None,
) -> TurnMemory:
    """The hot path's reader round trip after the embedding: the base memory (unless cached),
    the delta header, the `all` categories' memories, the vector
    list, the fusion with the `words` lists ranked while embedding, the top `k` facts by the
    context modes, and 1-2 facts tied to them by a relation edge (seed 001 §2).

    The header is read, not taken: the caller marks it seen later, off the hot path (`shown`
    is what this process showed the session meanwhile).
    """
    req = plan.req
    user_id, session_id = req.reach.user_id, req.reach.exclude_session or ""
    base = base_memory.get_base(conn, user_id) if want_base else None
    since = _since(conn, session_id, user_id, shown)
    rev = delta.current_rev(conn, user_id)
    changes = delta.changes_since(conn, session_id, since, user_id=user_id)
    news = News(delta.render(changes, since, max_bullets=HEADER_BULLETS), max(rev, since))
    near = search.ranked_lists(conn, plan, vector, search.VECTOR_LIST) if vector else {}
    ranked = search.results(conn, plan, search.merge_lists(near, words), now=now, detail=False)
    always = read_always_for(conn, req, policy, now)
    skip = {a.id for a in always}
    found = show(conn, pick_relevant(ranked, policy, k, skip=skip), req.query, now=now)
    tied = related.related_results(
        conn,
        [s.result for s in found],
        policy,
        user_id=user_id,
        stores=req.reach.stores,
        categories=req.reach.categories,
        skip=skip,
        now=now,
    )
    used = sum(tokens_of(s.text) for s in found)
    fits = []
    # Within the same budget and inside `k` (seed 004: up to top-K facts): a neighbour is
    # shown only where it fits. It needs no similarity of its own: it is there for the
    # found fact it is tied to, which cleared the floor.
    for fact in tied[: max(0, k - len(found))]:
        used += tokens_of(fact.text)
        if used > BUDGET_TOKENS:
            break
        fits.append(fact)
    return TurnMemory(base, found, news, always, fits)


@dataclass(frozen=True)
class PromptMemory:
    """The prompt's memory for one turn: its sections, and what the relevant memories and
    the always-known section show (GET /v1/context lists them beside the sections)."""

    sections: Sections
    found: list[Shown] = field(default_factory=list)
    always: list[Always] = field(default_factory=list)


def _since(conn: Any, session_id: str, user_id: str, shown: int | None) -> int:
    """The revision the session has seen: what it was shown by this process (not yet written),
    or what the DB says (a session never seen counts as up to date), whichever is newer."""
    if shown is None:
        return delta.seen_rev(conn, session_id, user_id)
    row = conn.execute("SELECT rev FROM revisions WHERE session_id = ?", (session_id,)).fetchone()
    return shown if row is None else max(shown, int(row[0]))
