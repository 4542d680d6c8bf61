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
from lobug.memory.query import QueryRequest, QueryResult, Reach, tokens_of
from lobug.memory.search import runner as search
from lobug.memory.search.scoring import ScoringWeights
from lobug.memory.summaries import base_memory
from lobug.memory.table import delta
from lobug.memory.table.rows import unexpired

CONTEXT_DEPTH = 20  # candidates per ranked list: the prompt takes a handful
HEADER_BULLETS = 3  # seed 001 §1
ALWAYS_MAX = 20  # memories of `all` categories in one prompt, at most
ALWAYS_BUDGET_TOKENS = 400  # and about this many tokens of them (the first always fits)
ALWAYS_TITLE = "[What you always know about the user]"
CONFIRM = "Ask the user to confirm before you remember: {}"
PROMPT_KINDS = ("fact", "insight")  # what the turn's search ranks for the owner's prompt


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
        f" AND COALESCE(category, ?) IN ({','.join('?' * len(names))})"
    )
    params: list[Any] = [user_id, UNCATEGORIZED, *names]
    if stores is not None:
        sql += f" AND store IN ({','.join('?' * len(stores))})"
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
    `scoring.INSIGHT_WEIGHT`, so one is shown only when it ranks for these words; like the
    reflection, they read the owner's conversations: no one else's prompt gets them), above
    the similarity floor, not what the working memory still holds of this session (learned
    since `window_start`; None: all of it), in the caller's `stores` and `categories` (None:
    all). It ranks `depth(k)` of them: `pick_relevant` cuts them to `k` by the categories'
    context modes."""
    owner = set(STORES) <= set(stores) and categories is None
    req = QueryRequest.model_construct(
        query=text,
        kinds=list(PROMPT_KINDS if owner else ("fact",)),
        top_k=depth(k),
        reach=Reach(
            user_id=user_id,
            stores=tuple(stores),
            categories=None if categories is None else tuple(sorted(categories)),
            # Archived facts answer when they match best; replaced ones are not the truth now.
            superseded=False,
            exclude_session=session_id,
        ),
    )
    return search.Plan.at(
        req,
        weights,
        now,
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
    found: list[QueryResult]  # the relevant facts, context modes applied
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
    found = pick_relevant(ranked, policy, k, skip=skip)
    tied = related.related_results(
        conn,
        found,
        policy,
        user_id=user_id,
        stores=req.reach.stores,
        categories=req.reach.categories,
        skip=skip,
        now=now,
    )
    return TurnMemory(base, found, news, always, tied)


def _since(conn: Any, session_id: str, user_id: str, shown: int | None) -> int:
    """The revision the session has seen: what it was shown by this process (not yet written),
    or what the DB says (a session never seen counts as up to date), whichever is newer."""
    if shown is None:
        return delta.seen_rev(conn, session_id, user_id)
    row = conn.execute("SELECT rev FROM revisions WHERE session_id = ?", (session_id,)).fetchone()
    return shown if row is None else max(shown, int(row[0]))
