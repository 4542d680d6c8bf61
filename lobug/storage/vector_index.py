"""An in-memory copy of the sqlite-vec tables for exact KNN without scanning vec0 (issue 13;
why, and the measurements: docs/memory.md, "The vector index").

SQLite stays the source of truth: every write to a vector table also logs a row in
`vector_changes` in the same transaction (`record_change`; `REBUILD` when a table is created,
dropped or swapped), and before each search the index applies the changes logged since it last
looked (`_sync`), from any process. Past `EXACT_MAX` rows a query ranks every row by the Hamming
distance of its sign bits to the query's and scores the best `SHORTLIST` exactly; should the
filters hide nearly every shortlisted row, it scans every row instead.

Cosine distance is 1 − cos, as vec0's `distance_metric=cosine`; a zero vector has no direction
and is near nothing (vec0 returns NULL for it), so it is not indexed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lobug.storage.sqlite import has_table

log = logging.getLogger(__name__)

KEYS = {"memory_vectors": "memory_id", "turn_vectors": "turn_id"}
REBUILD = "*"  # a `vector_changes.tbl` that means: the tables were replaced, load them again
CHANGES_TABLE = "vector_changes"

Accept = Callable[[list[int]], set[int]]  # ids → the ones the caller may see
Scored = tuple[np.ndarray, np.ndarray]  # (similarity, id) of the rows a query scored
EXACT_MAX = 20_000  # rows up to which every query scores every row exactly
SHORTLIST = 2_000  # rows scored exactly past EXACT_MAX, chosen by their sign bits


def record_change(conn: Any, table: str, row_id: int = 0) -> None:
    """Log a write to `table` (a vector table, or REBUILD) for the indexes of every process."""
    conn.execute(f"INSERT INTO {CHANGES_TABLE} (tbl, row_id) VALUES (?, ?)", (table, row_id))


def index_of(conn: Any) -> VectorIndex | None:
    """The index attached to this connection by its Database, if any and current (None: use
    vec0, e.g. while the index loads again after the tables were replaced)."""
    index = getattr(conn, "vector_index", None)
    return index if isinstance(index, VectorIndex) and index.current(conn) else None


class _Table:
    """One vector table as a dense float32 matrix of unit rows, ids in a parallel array."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.code_bytes = 8 * -(-dim // 64)  # sign bits, padded to whole 64-bit words
        self.codes = np.zeros((0, self.code_bytes), dtype=np.uint8)
        self.ids = np.zeros(0, dtype=np.int64)
        self.size = 0
        self.pos: dict[int, int] = {}

    def put(self, row_id: int, blob: bytes | None) -> None:
        vector = None if blob is None else _unit(blob, self.dim)
        if vector is None:
            self.remove(row_id)
            return
        at = self.pos.get(row_id)
        if at is None:
            at = self.size
            if at == len(self.ids):
                self._grow(max(1024, 2 * at))
            self.size += 1
            self.pos[row_id] = at
            self.ids[at] = row_id
        self.matrix[at] = vector
        self.codes[at] = self.signs(vector)

    def remove(self, row_id: int) -> None:
        at = self.pos.pop(row_id, None)
        if at is None:
            return
        last = self.size - 1
        if at != last:  # keep the rows dense: the last row takes the hole
            moved = int(self.ids[last])
            self.matrix[at] = self.matrix[last]
            self.codes[at] = self.codes[last]
            self.ids[at] = moved
            self.pos[moved] = at
        self.size = last

    def _grow(self, capacity: int) -> None:
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        codes = np.zeros((capacity, self.code_bytes), dtype=np.uint8)
        ids = np.zeros(capacity, dtype=np.int64)
        matrix[: self.size] = self.matrix[: self.size]
        codes[: self.size] = self.codes[: self.size]
        ids[: self.size] = self.ids[: self.size]
        self.matrix, self.codes, self.ids = matrix, codes, ids

    def signs(self, vector: np.ndarray) -> np.ndarray:
        packed = np.packbits(vector > 0)
        return np.pad(packed, (0, self.code_bytes - len(packed)))

    def candidates(self, query: np.ndarray, shortlist: int | None) -> Scored:
        """(similarity, id) of every row, or of the `shortlist` rows whose signs are nearest
        the query's (Hamming distance), each scored exactly."""
        if shortlist is None or self.size <= shortlist:
            return self.matrix[: self.size] @ query, self.ids[: self.size].copy()
        words = self.codes[: self.size].view(np.uint64)
        mask = self.signs(query).view(np.uint64)
        hamming = np.bitwise_count(words ^ mask).sum(axis=1, dtype=np.uint32)
        return self.scored_at(query, np.argpartition(hamming, shortlist - 1)[:shortlist])

    def scored_at(self, query: np.ndarray, rows: Any) -> Scored:
        """(similarity, id) of the rows at these positions, scored exactly."""
        return self.matrix[rows] @ query, self.ids[rows]

    def similarities(self, query: np.ndarray, row_ids: Sequence[int]) -> dict[int, float]:
        """Of the rows of `row_ids` that have a vector (a search asks for a few dozen)."""
        return {
            row_id: float(self.matrix[at] @ query)
            for row_id in row_ids
            if (at := self.pos.get(row_id)) is not None
        }


class VectorIndex:
    """Both vector tables in memory, kept in step with SQLite through `vector_changes`.

    Loading every vector happens off the lock, on the thread that asked for it (`build`, then
    `refresh` when one is owed), never on a search's: a search that finds the tables replaced
    (a `REBUILD` change) or changes it never saw (ids pruned by another process's GC) marks the
    index stale and scans sqlite-vec until the owner's `refresh` has loaded them again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[str, _Table] = {}
        self._applied = 0  # the last vector_changes id reflected here
        self.ready = False
        self.stale = False  # a load is owed: the tables were replaced, or a load failed
        self._seen: int | None = None  # the last change id when the last load found no tables
        self.dim: int | None = None
        # The last scoring of each table: a search asks the same query of the same table up to
        # three times (its own reach, the period and the speaker it names: other filters only).
        self._last: dict[str, tuple[_Table, int, bytes, int | None, Scored]] = {}

    # -- loading and keeping in step -------------------------------------------------------
    def build(self, conn: Any) -> int:
        """Load every vector (at start, on a reader connection); returns how many. Searches
        meanwhile scan sqlite-vec; the loaded tables are swapped in under the lock."""
        started = time.perf_counter()
        self.stale = True  # until this load is in (a failure leaves it owed)
        applied, dim, tables = _read_all(conn)
        with self._lock:
            self._tables = tables or {}
            self._last = {}
            self._applied = applied
            self.dim = dim
            self.ready = tables is not None
            self._seen = None if self.ready else applied
            self.stale = False
        count = sum(t.size for t in self._tables.values())
        log.info("vector index: %d vectors loaded in %.2f s", count, time.perf_counter() - started)
        return count

    def refresh(self, conn: Any) -> int | None:
        """Load again when a load is owed, or when the tables may have appeared since the
        last load found none (a vector change was logged since); None when nothing was owed."""
        if self.ready:
            return None
        if not self.stale and self._seen is not None and _last_change(conn) == self._seen:
            return None
        return self.build(conn)

    def current(self, conn: Any) -> bool:
        """Apply the changes logged since the last look; whether the index can answer."""
        if not self.ready:
            return False
        with self._lock:
            self._sync(conn)
            return self.ready

    def _sync(self, conn: Any) -> None:
        if not self.ready:
            return
        changes = conn.execute(
            f"SELECT id, tbl, row_id FROM {CHANGES_TABLE} WHERE id > ? ORDER BY id",
            (self._applied,),
        ).fetchall()
        if not changes:
            return
        # Ids are never reused and only the GC deletes them: a gap is changes this index never
        # saw (another process pruned them), so like a swap it needs a full load.
        if changes[0][0] != self._applied + 1 or any(tbl == REBUILD for _, tbl, _ in changes):
            self.ready = False
            self.stale = True
            log.info("vector index: the vector tables changed wholesale; loading them again")
            return
        for change_id, table, row_id in changes:
            found = self._tables.get(table)
            if found is not None:
                row = conn.execute(
                    f"SELECT embedding FROM {table} WHERE {KEYS[table]} = ?", (row_id,)
                ).fetchone()
                found.put(int(row_id), None if row is None else row[0])
            self._applied = int(change_id)

    @property
    def applied(self) -> int:
        return self._applied

    # -- queries ---------------------------------------------------------------------------
    def nearest(
        self,
        conn: Any,
        table: str,
        query: Sequence[float],
        k: int,
        *,
        accept: Accept,
        max_distance: float | None = None,
    ) -> list[tuple[int, float]]:
        """(id, cosine distance) of the k nearest rows `accept` keeps, nearest first.

        Exact up to EXACT_MAX rows; past it, over the SHORTLIST rows nearest by sign bits (and
        over every row if the filters leave fewer than k of those)."""
        unit = self._query(query)
        if unit is None or k <= 0:
            return []
        with self._lock:
            found = self._current(conn, table)
            if found is None or found.size == 0:
                return []
            short = SHORTLIST if found.size > EXACT_MAX else None
            sims, ids = self._scored(table, found, unit, short)
        hits = _best(sims, ids, k, accept, max_distance)
        if len(hits) < k and short is not None:
            with self._lock:
                sims, ids = self._scored(table, found, unit, None)
            hits = _best(sims, ids, k, accept, max_distance)
        return hits

    def _scored(self, table: str, found: _Table, unit: np.ndarray, short: int | None) -> Scored:
        """`found.candidates`, or the last call's when nothing changed since (under the lock:
        at 10k rows the product reads 15 MB, ~1.5 ms)."""
        key = unit.tobytes()
        last = self._last.get(table)
        if last is not None and last[:4] == (found, self._applied, key, short):
            return last[4]
        scored = found.candidates(unit, short)
        self._last[table] = (found, self._applied, key, short, scored)
        return scored

    def among(
        self,
        conn: Any,
        table: str,
        query: Sequence[float],
        row_ids: Sequence[int],
        k: int,
        *,
        max_distance: float | None = None,
    ) -> list[tuple[int, float]]:
        """(id, cosine distance) of the k rows of `row_ids` nearest the query, nearest first
        (ties: the lower id, as `nearest`): the rows a narrow filter sees, read by the caller,
        scored alone instead of filtering the nearest of all."""
        unit = self._query(query)
        if unit is None or k <= 0:
            return []
        with self._lock:
            found = self._current(conn, table)
            if found is None:
                return []
            sims, ids = found.scored_at(
                unit, [p for i in row_ids if (p := found.pos.get(i)) is not None]
            )
        return _best(sims, ids, k, lambda batch: set(batch), max_distance)

    def similarities(
        self, conn: Any, table: str, query: Sequence[float], row_ids: Sequence[int]
    ) -> dict[int, float]:
        """Cosine similarity of `query` and the stored vector of each of `row_ids` that has
        one, under one look at the changes (a search asks for all it needs at once)."""
        unit = self._query(query)
        if unit is None or not row_ids:
            return {}
        with self._lock:
            found = self._current(conn, table)
            return {} if found is None else found.similarities(unit, row_ids)

    def _current(self, conn: Any, table: str) -> _Table | None:
        """`table` after the changes logged since the last look (under the lock)."""
        self._sync(conn)
        return self._tables.get(table)

    def _query(self, query: Sequence[float]) -> np.ndarray | None:
        vector = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        if self.dim is None or vector.shape != (self.dim,) or norm == 0.0:
            return None
        return vector / norm

    def stats(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "vectors": {name: t.size for name, t in self._tables.items()},
            "bytes": sum(t.matrix.nbytes + t.ids.nbytes for t in self._tables.values()),
        }


def _best(
    sims: np.ndarray,
    ids: np.ndarray,
    k: int,
    accept: Accept,
    max_distance: float | None,
) -> list[tuple[int, float]]:
    """The k best rows `accept` keeps (ties: the lower id). Candidates are taken best first in
    growing slices (k + 8, then as many as the share kept so far says: `wider`) and filtered
    by `accept`, until k are kept or none is left."""
    if max_distance is not None:
        keep = sims >= 1.0 - max_distance
        sims, ids = sims[keep], ids[keep]
    total = len(ids)
    fetch = min(total, k + 8)
    taken = 0
    hits: list[tuple[int, float]] = []
    while taken < total:
        batch = _first(sims, ids, fetch)[taken:]
        batch_ids = [int(i) for i in ids[batch]]
        visible = accept(batch_ids)
        hits += [
            (row_id, 1.0 - float(sims[at]))
            for row_id, at in zip(batch_ids, batch, strict=True)
            if row_id in visible
        ]
        taken = fetch
        if len(hits) >= k:
            break
        fetch = min(total, taken + wider(k, len(hits), taken))
    return hits[:k]


def _first(sims: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """Positions of the n best rows by similarity, then the lower id, best first: the same rows
    however large n, so each slice `_best` takes continues the one before (`argpartition`
    alone keeps any of the rows tied at its edge, and which depended on the slice's size)."""
    if n < len(ids):
        edge = sims[np.argpartition(-sims, n - 1)[n - 1]]
        above = np.flatnonzero(sims > edge)
        tied = np.flatnonzero(sims == edge)
        rows = np.concatenate([above, tied[np.argsort(ids[tied])][: n - len(above)]])
    else:
        rows = np.arange(len(ids))
    return rows[np.lexsort((ids[rows], -sims[rows]))]


def wider(k: int, kept: int, taken: int) -> int:
    """How many more candidates to check for k rows when the filter kept `kept` of the `taken`
    checked so far: enough for the rest at that share, and half as many again
    (a period keeping ~40% of the nearest had 832 of them looked up at ×4, now ~650 with
    rarely a third look: bench_api_query --period); ×4 in all when it kept none. Every
    filtered best-of widens so: this index's KNN, sqlite-vec's (`knn.nearest`) and the
    `bm25` list's (`lexical.bm25_ranks`)."""
    if kept <= 0:
        return 3 * taken
    return max(8, -(-3 * (k - kept) * taken // (2 * kept)))  # ceil, in whole numbers


def prune_changes(conn: Any, upto: int) -> int:
    """Forget the changes an index has applied (the daemon's GC); returns rows deleted."""
    if not has_table(conn, CHANGES_TABLE):
        return 0
    return int(conn.execute(f"DELETE FROM {CHANGES_TABLE} WHERE id <= ?", (upto,)).rowcount)


def _last_change(conn: Any) -> int:
    """The last vector change id ever issued (pruned ones included: AUTOINCREMENT's record)."""
    row = conn.execute(
        "SELECT seq FROM sqlite_sequence WHERE name = ?", (CHANGES_TABLE,)
    ).fetchone()
    return 0 if row is None else int(row[0])


def _read_all(conn: Any) -> tuple[int, int | None, dict[str, _Table] | None]:
    """(the last change id, the dimension, every table) read from SQLite; no tables (None)
    before the vector tables exist."""
    if not has_table(conn, CHANGES_TABLE) or not all(has_table(conn, t) for t in KEYS):
        return 0, None, None
    applied = _last_change(conn)  # first: a change made while reading is applied again
    dim = _stored_dim(conn)
    if dim is None:
        return applied, None, None
    tables = {}
    for table, key in KEYS.items():
        found = _Table(dim)
        for row_id, blob in conn.execute(f"SELECT {key}, embedding FROM {table}"):
            found.put(int(row_id), blob)
        tables[table] = found
    return applied, dim, tables


def _unit(blob: bytes, dim: int) -> np.ndarray | None:
    vector = np.frombuffer(blob, dtype=np.float32)
    if vector.shape != (dim,):
        return None
    norm = float(np.linalg.norm(vector))
    return None if norm == 0.0 else vector / norm


def _stored_dim(conn: Any) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'embedding_dim'").fetchone()
    return None if row is None else int(row[0])
