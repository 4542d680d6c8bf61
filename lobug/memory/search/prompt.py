"""Inline retrieval for the prompt: hybrid search over facts and the base memory document.

One reader round trip per turn (`read_context`): the base memory unless cached, and the top
facts for the user's words — vector KNN above the similarity floor, BM25 and entity matches,
fused and re-scored (`search`). Facts from the current session are left out (seed 003): the
working memory already holds that conversation. Only while it does: in a session longer than
the working-memory window, facts learned before the window's oldest message come back.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from lobug.memory.query import QueryFilters, QueryRequest, QueryResult
from lobug.memory.search import runner as search
from lobug.memory.search.scoring import ScoringWeights
from lobug.memory.store import delta
from lobug.memory.summaries import base_memory
from lobug.storage.database import Database

BASE_TTL_S = 30.0  # a base memory written by another process (CLI import) shows up this soon
CONTEXT_DEPTH = 20  # candidates per ranked list: the prompt takes a handful
HEADER_BULLETS = 3  # seed 001 §1


def long_term_section(base: str) -> str | None:
    base = base.strip()
    return f"[Long-term memory]\n{base}" if base else None


def relevant_section(texts: Sequence[str]) -> str | None:
    if not texts:
        return None
    return "[Relevant memories]\n" + "\n".join(f"- {text}" for text in texts)


def sections(base: str, texts: Sequence[str], header: str | None = None) -> list[str]:
    """Seed 004 §2.3 order: long-term memory, the delta header (seed 001 §1), the relevant
    memories; empty ones left out."""
    found = (long_term_section(base), header, relevant_section(texts))
    return [s for s in found if s]


class BaseMemoryCache:
    """The base memory per user, kept in memory: it is in every prompt and changes rarely.

    Invalidated when a cascade in this process rewrites it; a TTL catches other writers.
    """

    def __init__(self, ttl_s: float = BASE_TTL_S, monotonic: Callable[[], float] = time.monotonic):
        self.ttl_s = ttl_s
        self.monotonic = monotonic
        self._entries: dict[str, tuple[str, float]] = {}

    def get(self, user_id: str) -> str | None:
        entry = self._entries.get(user_id)
        if entry is None or self.monotonic() - entry[1] > self.ttl_s:
            return None
        return entry[0]

    def put(self, user_id: str, content: str) -> None:
        self._entries[user_id] = (content, self.monotonic())

    def invalidate(self, user_id: str | None = None) -> None:
        if user_id is None:
            self._entries.clear()
        else:
            self._entries.pop(user_id, None)


def context_plan(
    text: str,
    *,
    user_id: str,
    session_id: str,
    k: int,
    min_similarity: float,
    weights: ScoringWeights,
    window: int,
) -> search.Plan:
    """The prompt's search: facts only, above the similarity floor, not what the working
    memory (`window` messages) still holds of this session."""
    req = QueryRequest(
        text=text,
        kinds=("fact",),
        # Archived facts answer when they match best; replaced ones are not the truth now.
        filters=QueryFilters(user_id=user_id, superseded=False),
        top_k=k,
        exclude_session_id=session_id,
    )
    return search.Plan(
        req, weights, min_similarity=min_similarity, depth=max(CONTEXT_DEPTH, 2 * k), window=window
    )


@dataclass(frozen=True)
class News:
    """The delta header for a session (None: nothing new) and the revision it covers."""

    header: str | None
    rev: int


def read_context(
    conn: Any,
    plan: search.Plan,
    vector: Sequence[float] | None,
    *,
    want_base: bool,
    shown: int | None = None,
) -> tuple[str | None, search.Lists, News]:
    """The hot path's first reader round trip: the base memory (unless cached), the delta
    header and the vector list; the word lists run beside it on another connection.

    The header is read, not taken: the caller marks it seen later, off the hot path (`shown`
    is what this process showed the session meanwhile).
    """
    user_id, session_id = plan.req.filters.user_id, plan.req.exclude_session_id or ""
    base = base_memory.get_base(conn, user_id) if want_base else None
    since = _since(conn, session_id, user_id, shown)
    rev = delta.current_rev(conn, user_id)
    changes = delta.changes_since(conn, session_id, since, user_id=user_id)
    news = News(delta.render(changes, since, max_bullets=HEADER_BULLETS), max(rev, since))
    lists = search.ranked_lists(conn, plan, vector, search.VECTOR_LIST) if vector else {}
    return base, lists, news


async def context(
    db: Database,
    plan: search.Plan,
    vector: Awaitable[Sequence[float] | None],
    *,
    want_base: bool,
    now: float,
    shown: int | None = None,
) -> tuple[str | None, list[QueryResult], News]:
    """Base memory, delta header and the top facts.

    The word lists need no vector: they run on a reader connection while the query is being
    embedded (an Ollama round trip, or CPU for a local model), so after the embedding only the
    KNN scan and the fusion remain on the turn's critical path.
    """
    words = await search.while_embedding(db, plan, vector)
    base, near, news = await db.read(
        partial(read_context, want_base=want_base, shown=shown), plan, words.vector
    )
    lists = search.merge_lists(near, await words.lists)
    return base, await db.read(partial(search.results, now=now), plan, lists), news


def _since(conn: Any, session_id: str, user_id: str, shown: int | None) -> int:
    """The revision the session has seen: what it was shown by this process (not yet written),
    or what the DB says (a session never seen counts as up to date), whichever is newer."""
    if shown is None:
        return delta.seen_rev(conn, session_id, user_id)
    row = conn.execute("SELECT rev FROM revisions WHERE session_id = ?", (session_id,)).fetchone()
    return shown if row is None else max(shown, int(row[0]))
