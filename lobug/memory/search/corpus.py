"""What can be searched (memories, turns) and who may see what: the filter every list applies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

UNCATEGORIZED = "general"  # what lobug.access calls a memory without a category


@dataclass(frozen=True)
class Corpus:
    """Where one kind of searchable row lives: base table, FTS table, vector table."""

    table: str
    text: str
    fts: str
    vectors: str
    vec_key: str
    lists: tuple[str, ...]  # the ranked lists hybrid_search fuses by default


MEMORIES = Corpus(
    "memories",
    "content",
    "memories_fts",
    "memory_vectors",
    "memory_id",
    ("vector", "bm25", "entity"),
)
# Turns have no entity links: their entity list is a name match in the text, which BM25 already
# counts, so fusing it too double-weights lexical agreement (measured: docs/retrieval-eval.md).
TURNS = Corpus(
    "turns", "text", "turns_fts", "turn_vectors", "turn_id", ("vector", "bm25", "context")
)


@dataclass(frozen=True)
class SearchFilter:
    user_id: str = "default"
    statuses: tuple[str, ...] = ("active",)  # memories only
    # Memories only: False leaves out facts a newer statement replaced (valid_until is set).
    superseded: bool = True
    agent_id: str | None = None  # memories only: who wrote it (seed 001 §6.1)
    run_id: str | None = None
    actor_id: str | None = None
    kinds: tuple[str, ...] | None = None  # memories only
    stores: tuple[str, ...] | None = None  # memories only: the caller's trust level
    categories: tuple[str, ...] | None = None  # memories only: the agent's allowlist
    roles: tuple[str, ...] | None = None  # turns only
    exclude_session: str | None = None
    # With exclude_session: rows of that session created before this time still count (the
    # conversation that taught them has left the working memory). None: exclude them all.
    exclude_session_since: float | None = None
    session: str | None = None  # only rows of this session
    pinned: bool | None = None  # memories only
    layer: str | None = None  # memories only: mid | long
    importance_min: float | None = None  # memories only
    importance_max: float | None = None
    updated_after: float | None = None  # memories: updated_at; turns: ts
    updated_before: float | None = None
    # [start, end): said in this period — turns by ts, memories by the turns they came from
    # (their creation time when they have none): what "last spring" in a question selects.
    said_in: tuple[float, float] | None = None
    speaker: str | None = None  # turns only: said by this person (turns.speaker)
    # Memories only (seed 002 people index): linked through memory_entities to a person
    # entity whose name or alias is this (any case). Turns have no entity links: none match.
    person: str | None = None
    # Memories only (seed 002): those whose `expires_at` is past at this time are left out.
    live_at: float | None = None


def where_clause(corpus: Corpus, flt: SearchFilter) -> tuple[str, list[Any]]:
    """SQL conditions on the base table (alias d) for the filter."""
    clauses: list[str] = ["d.user_id = ?"]
    params: list[Any] = [flt.user_id]

    def one_of(column: str, values: Sequence[str] | None) -> None:
        if values is not None:
            clauses.append(f"d.{column} IN ({','.join('?' * len(values))})" if values else "0")
            params.extend(values)

    def compare(expression: str, op: str, value: Any) -> None:
        if value is not None:
            clauses.append(f"{expression} {op} ?")
            params.append(value)

    if corpus.table == "memories":
        one_of("status", flt.statuses)
        one_of("kind", flt.kinds)
        one_of("store", flt.stores)
        _categories(clauses, params, flt.categories)
        compare("d.layer", "=", flt.layer)
        compare("d.pinned", "=", None if flt.pinned is None else int(flt.pinned))
        compare("d.importance", ">=", flt.importance_min)
        compare("d.importance", "<=", flt.importance_max)
        compare("d.agent_id", "=", flt.agent_id)
        compare("d.run_id", "=", flt.run_id)
        compare("d.actor_id", "=", flt.actor_id)
        if not flt.superseded:
            clauses.append("d.valid_until IS NULL")
        if flt.person is not None:
            clauses.append(PERSON_LINKED)
            params += [flt.person.strip(), flt.person.strip()]
        if flt.live_at is not None:
            clauses.append("(d.expires_at IS NULL OR d.expires_at > ?)")
            params.append(flt.live_at)
        updated = "d.updated_at"
    else:
        if flt.person is not None:
            clauses.append("0")
        one_of("role", flt.roles)
        compare("d.speaker", "=", flt.speaker)
        clauses.append("d.degraded = 0")  # an apology says nothing worth finding
        updated = "d.ts"
    compare(updated, ">=", flt.updated_after)
    compare(updated, "<=", flt.updated_before)
    if flt.said_in is not None:
        start, end = flt.said_in
        if corpus.table == "memories":
            clauses.append(
                "(EXISTS (SELECT 1 FROM memory_sources s JOIN turns t ON t.id = s.turn_id"
                " WHERE s.memory_id = d.id AND t.ts >= ? AND t.ts < ?)"
                " OR (NOT EXISTS (SELECT 1 FROM memory_sources s WHERE s.memory_id = d.id)"
                " AND d.created_at >= ? AND d.created_at < ?))"
            )
            params += [start, end, start, end]
        else:
            clauses.append("d.ts >= ? AND d.ts < ?")
            params += [start, end]
    compare("d.session_id", "=", flt.session)
    if flt.exclude_session is not None:
        if flt.exclude_session_since is None:
            clauses.append("(d.session_id IS NULL OR d.session_id != ?)")
            params.append(flt.exclude_session)
        else:
            created = "d.created_at" if corpus.table == "memories" else "d.ts"
            clauses.append(f"(d.session_id IS NULL OR d.session_id != ? OR {created} < ?)")
            params += [flt.exclude_session, flt.exclude_session_since]
    return " AND ".join(clauses), params


PERSON_LINKED = (
    "EXISTS (SELECT 1 FROM memory_entities me JOIN entities e ON e.id = me.entity_id"
    " WHERE me.memory_id = d.id AND e.user_id = d.user_id AND e.type = 'person'"
    " AND (e.canonical_name = ? COLLATE NOCASE OR EXISTS (SELECT 1 FROM json_each(e.aliases)"
    " WHERE lower(value) = lower(?))))"
)


def _categories(clauses: list[str], params: list[Any], categories: Sequence[str] | None) -> None:
    """Allowlisted categories; an uncategorised memory counts as `general` (lobug.access)."""
    if categories is None:
        return
    if not categories:
        clauses.append("0")
        return
    test = f"d.category IN ({','.join('?' * len(categories))})"
    if UNCATEGORIZED in categories:
        test = f"({test} OR d.category IS NULL)"
    clauses.append(test)
    params.extend(categories)


def visible_ids(conn: Any, corpus: Corpus, flt: SearchFilter, ids: Sequence[int]) -> set[int]:
    """Which of ids pass the filter (for lists ranked by an index that cannot filter)."""
    if not ids:
        return set()
    where, params = where_clause(corpus, flt)
    marks = ",".join("?" * len(ids))
    # NOT INDEXED: look the ids up by rowid. Without statistics (a database not yet ANALYZEd)
    # the planner chose the user_id index and scanned every row of the user (100k turns:
    # 6.8 ms instead of 0.03 ms per call, twice per search).
    rows = conn.execute(
        f"SELECT d.id FROM {corpus.table} d NOT INDEXED WHERE d.id IN ({marks}) AND {where}",
        (*ids, *params),
    )
    return {int(r[0]) for r in rows}
