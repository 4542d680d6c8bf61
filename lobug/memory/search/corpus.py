"""What can be searched (memories, turns) and who may see what: the filter every list applies."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lobug.conversation import OWNER_TURN
from lobug.memory.query import Reach
from lobug.memory.table.rows import unexpired
from lobug.storage.sqlite import placeholders, tuples

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
            clauses.append(f"d.{column} IN ({placeholders(values)})" if values else "0")
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
            params += [flt.user_id, f.person.strip(), f.person.strip()]
        if flt.live_at is not None:
            clauses.append(unexpired("d"))
            params.append(flt.live_at)
        updated = "d.updated_at"
    else:
        if f.person is not None:  # a turn that names them (turn_entities, m013)
            clauses.append(person_linked("turn_entities", "turn_id"))
            params += [flt.user_id, f.person.strip(), f.person.strip()]
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
    user with the given name or alias, any case: three parameters, the user and the name
    twice. The linked rows are one set per statement, not looked up row by row: a person no
    row names has the KNN widen over every row (10k turns: 13 ms of lookups a query)."""
    return (
        f"d.id IN (SELECT l.{key} FROM {links} l JOIN entities e ON e.id = l.entity_id"
        " WHERE e.user_id = ? AND e.type = 'person'"
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
    test = f"d.category IN ({placeholders(categories)})"
    if UNCATEGORIZED in categories:
        test = f"({test} OR d.category IS NULL)"
    clauses.append(test)
    params.extend(categories)


def visible_ids(conn: Any, corpus: Corpus, flt: Reach, ids: Sequence[int]) -> set[int]:
    """Which of ids pass the filter (for lists ranked by an index that cannot filter)."""
    return Reads().visible(conn, corpus, flt, ids)


# The question a turn answers, read with whatever else is read of it: the turn it replies to
# (`turns.reply_to`, m015), when that turn, of the same session, asks something (holds a "?").
ANSWERS = (
    "(SELECT q.id FROM turns q WHERE q.id = d.reply_to AND q.session_id = d.session_id"
    " AND instr(q.text, '?') > 0)"
)


# A filter that may see few rows (`narrow`) has them read first, up to this many: the KNN
# scores them alone and every other list tests ids against them, where the nearest of all,
# filtered, looked up thousands of rows to keep k (a bound on work, not on what is found).
NARROW_ROWS = 2048


def narrow(corpus: Corpus, flt: Reach) -> bool:
    """Whether `flt` names what may see few rows, each found by an index: over the turns a
    period, a speaker, a person or a session; over the memories a person (their period is read
    through the source turns and their session has no index: row by row, either)."""
    f = flt.filters
    if corpus is not TURNS:
        return f.person is not None
    return any(v is not None for v in (f.person, f.session_id, flt.said_in, flt.speaker))


class Reads:
    """What one search has read, so it reads each thing once: the rows of its candidates (every
    column: the re-score, the context lists and the answering lists all ask for some), which
    ids each filter sees, the question each turn answers, and the similarities its KNNs
    computed. One per search (`runner.Plan.reads`), never shared: it holds no row another
    search may not see, and nothing outlives the search."""

    def __init__(self) -> None:
        self._rows: dict[str, dict[int, Any]] = {}  # table -> id -> row (None: no such row)
        self._answers: dict[int, int | None] = {}  # turn id -> the question it answers
        self._seen: dict[tuple[Any, ...], dict[int, bool]] = {}  # filter -> id -> it sees it
        self._shared: dict[tuple[str, str], bool] = {}  # (table, user) -> another user's rows
        self._every: dict[tuple[Any, ...], frozenset[int] | None] = {}  # filter -> all it sees
        self.similar: dict[tuple[str, int], float] = {}  # (vector table, id) -> cosine sim.

    def rows(self, conn: Any, corpus: Corpus, ids: Iterable[int]) -> dict[int, Any]:
        """The rows of `ids` that exist (`SELECT *`, as dicts), reading only those not read
        before."""
        known = self._rows.setdefault(corpus.table, {})

        def read(chunk: Sequence[int]) -> Iterator[tuple[int, Any]]:
            marks = placeholders(chunk)
            found = tuples(conn).execute(
                f"SELECT * FROM {corpus.table} WHERE id IN ({marks})", chunk
            )
            names = [column[0] for column in found.description]  # once, not per row
            for r in found:
                row = dict(zip(names, r, strict=True))
                yield row["id"], row

        wanted = _read_missing(known, ids, read)
        return {i: row for i in wanted if (row := known[i]) is not None}

    def visible(self, conn: Any, corpus: Corpus, flt: Reach, ids: Iterable[int]) -> set[int]:
        """Which of `ids` `flt` sees, each id looked up once per filter (by rowid: an index
        that cannot filter ranked them); the question a turn answers is read with it."""
        if (every := self.every(conn, corpus, flt)) is not None:
            return {i for i in ids if i in every}
        where, params = where_clause(corpus, flt)
        seen = self._seen.setdefault((corpus.table, where, *params), {})
        # A turn's answered question is read with it, for the turns the filter shows only.
        answers = f", coalesce({ANSWERS}, 0)" if corpus is TURNS else ""

        def read(chunk: Sequence[int]) -> Iterator[tuple[int, bool]]:
            marks = placeholders(chunk)
            # NOT INDEXED: look the ids up by rowid. Without statistics (a database not yet
            # ANALYZEd) the planner chose the user_id index and scanned every row of the user
            # (100k turns: 6.8 ms instead of 0.03 ms per call, twice per search).
            found = tuples(conn).execute(
                f"SELECT d.id{answers} FROM {corpus.table} d NOT INDEXED"
                f" WHERE d.id IN ({marks}) AND {where}",
                (*chunk, *params),
            )
            for r in found:
                if answers:
                    self._answers[int(r[0])] = int(r[1]) or None  # 0: none (ids start at 1)
                yield int(r[0]), True

        return {i for i in _read_missing(seen, ids, read, absent=False) if seen[i]}

    def every(self, conn: Any, corpus: Corpus, flt: Reach) -> frozenset[int] | None:
        """Every id a narrow filter sees (`narrow`), when it sees at most `NARROW_ROWS` rows;
        else None. Read once per filter, by the filter's own index: `visible` and `replies`
        then test ids against the set, and the KNN scores these rows alone."""
        if not narrow(corpus, flt):
            return None
        where, params = where_clause(corpus, flt)
        key = (corpus.table, where, *params)
        if key not in self._every:
            # One row, not up to 2,049: their count and ids as one JSON array (a period of 4,000
            # turns is found too wide in 0.7 ms where reading the rows took 1.6).
            count, ids = conn.execute(
                f"SELECT count(*), json_group_array(id) FROM"
                f" (SELECT d.id FROM {corpus.table} d WHERE {where} LIMIT ?)",
                (*params, NARROW_ROWS + 1),
            ).fetchone()
            self._every[key] = frozenset(json.loads(ids)) if count <= NARROW_ROWS else None
        return self._every[key]

    def shared(self, conn: Any, corpus: Corpus, user_id: str) -> bool:
        """Whether the table holds rows of another user than `user_id`, read once: two seeks
        of an index led by user_id (the first user above this one, the first below)."""
        key = (corpus.table, user_id)
        if key not in self._shared:
            self._shared[key] = any(
                conn.execute(
                    f"SELECT 1 FROM {corpus.table} WHERE user_id {op} ? LIMIT 1", (user_id,)
                ).fetchone()
                is not None
                for op in (">", "<")
            )
        return self._shared[key]

    def replies(self, conn: Any, flt: Reach, ids: Iterable[int]) -> set[int]:
        """The turns `flt` sees that reply to any of `ids` (`turns.reply_to`, m015), the
        question each answers read with them."""
        where, params = where_clause(TURNS, flt)
        seen = self._seen.setdefault((TURNS.table, where, *params), {})
        every = self.every(conn, TURNS, flt)
        if every is not None:  # its rows are known: tested here, not in every statement
            where, params = "d.user_id = ?", [flt.user_id]
        found: set[int] = set()
        for chunk in _chunks(sorted(set(ids))):
            marks = placeholders(chunk)
            rows = tuples(conn).execute(
                # By the reply_to index (m015), whatever else the filter names: the planner
                # may pick the user_id one, every turn of the user (see `visible`).
                f"SELECT d.id, coalesce({ANSWERS}, 0) FROM turns d INDEXED BY"
                f" idx_turns_reply_to WHERE d.reply_to IN ({marks}) AND {where}",
                (*chunk, *params),
            )
            for turn_id, asked in rows:
                if every is None or turn_id in every:
                    seen[turn_id] = True
                    self._answers[turn_id] = int(asked) or None
                    found.add(turn_id)
        return found

    def answers(self, conn: Any, ids: Iterable[int]) -> dict[int, int]:
        """The question each of the turns `ids` answers (`ANSWERS`), for those that answer
        one: the context lists' one column of their hundreds of candidates, read once."""

        def read(chunk: Sequence[int]) -> Iterator[tuple[int, Any]]:
            marks = placeholders(chunk)
            sql = f"SELECT d.id, {ANSWERS} FROM turns d WHERE d.id IN ({marks})"
            return ((int(r[0]), r[1]) for r in tuples(conn).execute(sql, chunk))

        wanted = _read_missing(self._answers, ids, read)
        return {i: int(asked) for i in wanted if (asked := self._answers[i]) is not None}

    def texts(self, conn: Any, corpus: Corpus, ids: Iterable[int]) -> dict[int, str]:
        return {i: str(r[corpus.text]) for i, r in self.rows(conn, corpus, ids).items()}

    def nearest(self, table: str, found: Sequence[tuple[int, float]]) -> None:
        """Keep the similarity (1 − cosine distance) of each (id, distance) a KNN found."""
        self.similar.update(((table, i), 1.0 - d) for i, d in found)


def _read_missing(
    known: dict[int, Any],
    ids: Iterable[int],
    read: Callable[[Sequence[int]], Iterable[tuple[int, Any]]],
    absent: Any = None,
) -> list[int]:
    """`ids`, each once in order, after reading those `known` lacks: `read(chunk)` gives the
    (id, value) it finds, a chunk at a time (`_chunks`); an id it does not give is `absent`."""
    wanted = list(dict.fromkeys(ids))
    for chunk in _chunks([i for i in wanted if i not in known]):
        known.update(read(chunk))
        known.update((i, absent) for i in chunk if i not in known)
    return wanted


def _chunks(ids: Sequence[int], size: int = 500) -> list[Sequence[int]]:
    """`ids` in slices of `size`: one statement's bound parameters stay few."""
    return [ids[at : at + size] for at in range(0, len(ids), size)]
