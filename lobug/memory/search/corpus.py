"""What can be searched (memories, turns) and who may see what: the filter every list applies."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lobug.conversation import OWNER_TURN
from lobug.memory.query import Reach
from lobug.memory.table.rows import unexpired

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
# No entity list over turns: a turn's entity links (turn_entities) come from the names in its
# text, which BM25 already counts, so fusing them too double-weights lexical agreement (measured
# before the links existed: docs/retrieval-eval.md).
TURNS = Corpus(
    "turns", "text", "turns_fts", "turn_vectors", "turn_id", ("vector", "bm25", "context")
)


def where_clause(corpus: Corpus, flt: Reach) -> tuple[str, list[Any]]:
    """SQL conditions on the base table (alias d) for the reach and its caller's filters."""
    f = flt.filters
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
        compare("d.pinned", "=", None if f.pinned is None else int(f.pinned))
        compare("d.importance", ">=", f.importance_min)
        compare("d.importance", "<=", f.importance_max)
        compare("d.agent_id", "=", f.agent_id)
        compare("d.run_id", "=", f.run_id)
        compare("d.actor_id", "=", f.actor_id)
        if not flt.superseded:
            clauses.append("d.valid_until IS NULL")
        if f.person is not None:
            clauses.append(person_linked("memory_entities", "memory_id"))
            params += [f.person.strip(), f.person.strip()]
        if flt.live_at is not None:
            clauses.append(unexpired("d"))
            params.append(flt.live_at)
        updated = "d.updated_at"
    else:
        if f.person is not None:  # a turn that names them (turn_entities, m013)
            clauses.append(person_linked("turn_entities", "turn_id"))
            params += [f.person.strip(), f.person.strip()]
        compare("d.role", "=", f.role)
        compare("d.speaker", "=", flt.speaker)
        if flt.owner_turns:
            clauses.append(f"d.{OWNER_TURN}")
        clauses.append("d.degraded = 0")  # an apology says nothing worth finding
        updated = "d.ts"
    compare(updated, ">=", f.updated_after)
    compare(updated, "<=", f.updated_before)
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
    compare("d.session_id", "=", f.session_id)
    if flt.exclude_session is not None:
        if flt.exclude_session_since is None:
            clauses.append("(d.session_id IS NULL OR d.session_id != ?)")
            params.append(flt.exclude_session)
        else:
            created = "d.created_at" if corpus.table == "memories" else "d.ts"
            clauses.append(f"(d.session_id IS NULL OR d.session_id != ? OR {created} < ?)")
            params += [flt.exclude_session, flt.exclude_session_since]
    return " AND ".join(clauses), params


def person_linked(links: str, key: str) -> str:
    """The row is linked (`links`: memory_entities or turn_entities) to a person entity of the
    given name or alias, any case: two parameters, the name twice."""
    return (
        f"EXISTS (SELECT 1 FROM {links} l JOIN entities e ON e.id = l.entity_id"
        f" WHERE l.{key} = d.id AND e.user_id = d.user_id AND e.type = 'person'"
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


def visible_ids(conn: Any, corpus: Corpus, flt: Reach, ids: Sequence[int]) -> set[int]:
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


Links = tuple[str | None, bool, int | None]  # a turn's session, whether it asks, what it answers


class Reads:
    """What one search has read, so it reads each thing once: the rows of its candidates (every
    column: the re-score, the context lists and the answering lists all ask for some) and
    the similarities its KNNs computed. One per search (`runner.Plan.reads`), never shared:
    it holds no row another search may not see, and nothing outlives the search."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[int, Any]] = {}  # table -> id -> row (None: no such row)
        self._links: dict[int, Links | None] = {}  # turn id -> its links (None: no such turn)
        self.similar: dict[tuple[str, int], float] = {}  # (vector table, id) -> cosine sim.

    def rows(self, conn: Any, corpus: Corpus, ids: Iterable[int]) -> dict[int, Any]:
        """The rows of `ids` that exist (`SELECT *`), reading only those not read before."""
        known = self._rows.setdefault(corpus.table, {})
        wanted = list(dict.fromkeys(ids))
        todo = [i for i in wanted if i not in known]
        for at in range(0, len(todo), 500):
            chunk = todo[at : at + 500]
            marks = ",".join("?" * len(chunk))
            found = conn.execute(f"SELECT * FROM {corpus.table} WHERE id IN ({marks})", chunk)
            known.update({int(r["id"]): r for r in found})
            known.update({i: None for i in chunk if i not in known})
        return {i: row for i in wanted if (row := known[i]) is not None}

    def links(self, conn: Any, ids: Iterable[int]) -> dict[int, Links]:
        """(session, whether it asks something: holds a "?", the turn it answers) of each turn
        of `ids` that exists: the context lists' few columns of their hundreds of candidates,
        read once for all of them (a whole row costs several times as much)."""
        wanted = list(dict.fromkeys(ids))
        todo = [i for i in wanted if i not in self._links]
        for at in range(0, len(todo), 500):
            chunk = todo[at : at + 500]
            marks = ",".join("?" * len(chunk))
            found = conn.execute(
                "SELECT id, session_id, instr(text, '?'), reply_to FROM turns"
                f" WHERE id IN ({marks})",
                chunk,
            )
            self._links.update(
                {int(r[0]): (r[1], bool(r[2]), None if r[3] is None else int(r[3])) for r in found}
            )
            self._links.update({i: None for i in chunk if i not in self._links})
        return {i: said for i in wanted if (said := self._links[i]) is not None}

    def texts(self, conn: Any, corpus: Corpus, ids: Iterable[int]) -> dict[int, str]:
        return {i: str(r[corpus.text]) for i, r in self.rows(conn, corpus, ids).items()}

    def nearest(self, table: str, found: Sequence[tuple[int, float]]) -> None:
        """Keep the similarity (1 − cosine distance) of each (id, distance) a KNN found."""
        self.similar.update(((table, i), 1.0 - d) for i, d in found)
