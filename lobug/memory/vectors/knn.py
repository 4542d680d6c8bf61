"""Vector rows and the one KNN query (`nearest`, cosine distance) every search goes through.

`memory_vectors` holds the vectors of live (active and archived) memories: an archived fact stays
findable by meaning (issue 10); a soft-deleted one loses its vector (`status.change_status`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from lobug.memory.table.rows import MemoryRow
from lobug.storage.sqlite import has_table, placeholders
from lobug.storage.vector_index import KEYS, Accept, index_of, record_change, wider
from lobug.storage.vectors import pack

log = logging.getLogger(__name__)

VEC_MAX_K = 4096  # sqlite-vec's ceiling for `k = ?`
# vec0 cannot filter by our columns: fetch more neighbours than k (k + OVERSAMPLE, or
# k × OVERSAMPLE_RATIO when larger), filter, and widen the net by the share the filter kept
# (`vector_index.wider`) while rows it drops (other users, archived, other stores) crowd out
# the kept ones. The exact scan costs more with a larger k, so start a little above it: one
# user's active facts (the common case) need no more.
OVERSAMPLE = 8
OVERSAMPLE_RATIO = 1.25

# memory_vectors holds every live memory a search can find by meaning: facts, and what the
# daemon distils from them (issue 12: summaries, reflections, insights, procedures).
VECTOR_KINDS = ("fact", "summary", "reflection", "insight", "procedural")
VECTOR_STATUSES = ("active", "archived")


def put_memory_vector(conn: Any, memory_id: int, vector: Sequence[float]) -> None:
    # vec0 has no upsert: delete first so a re-run of the same job cannot trip the primary key.
    conn.execute("DELETE FROM memory_vectors WHERE memory_id = ?", (memory_id,))
    conn.execute(
        "INSERT INTO memory_vectors (memory_id, embedding) VALUES (?, ?)", (memory_id, pack(vector))
    )
    record_change(conn, "memory_vectors", memory_id)


def drop_memory_vector(conn: Any, memory_id: int, *, strict: bool = False) -> int | None:
    """Remove a memory's vector; returns the rows deleted, None when there is no vector table.

    Without sqlite-vec loaded the vec0 table cannot be touched: by default that is a warning
    (retrieval filters by status anyway, and an embed job rewrites the vector), `strict` raises
    the driver's error instead (a purge that left the vector behind would be no purge).
    """
    if not has_table(conn, "memory_vectors"):
        return None
    try:
        deleted = conn.execute("DELETE FROM memory_vectors WHERE memory_id = ?", (memory_id,))
        if deleted.rowcount:
            record_change(conn, "memory_vectors", memory_id)
        return int(deleted.rowcount)
    except Exception as exc:  # noqa: BLE001 - the driver's OperationalError, either driver
        if strict:
            raise
        log.warning("cannot drop the vector of memory %s: %s", memory_id, exc)
        return 0


def facts_without_vector(conn: Any, limit: int) -> list[int]:
    """Live facts with no vector (oldest first); [] when there is no vector table."""
    if not has_table(conn, "memory_vectors"):
        return []
    rows = conn.execute(
        "SELECT id FROM memories WHERE kind = 'fact' AND status IN ('active', 'archived')"
        " AND id NOT IN (SELECT memory_id FROM memory_vectors) ORDER BY id LIMIT ?",
        (limit,),
    ).fetchall()
    return [int(r[0]) for r in rows]


def put_turn_vector(conn: Any, turn_id: int, vector: Sequence[float]) -> None:
    conn.execute("DELETE FROM turn_vectors WHERE turn_id = ?", (turn_id,))
    conn.execute(
        "INSERT INTO turn_vectors (turn_id, embedding) VALUES (?, ?)", (turn_id, pack(vector))
    )
    record_change(conn, "turn_vectors", turn_id)


def has_turn_vector(conn: Any, turn_id: int) -> bool:
    row = conn.execute("SELECT 1 FROM turn_vectors WHERE turn_id = ?", (turn_id,)).fetchone()
    return row is not None


def nearest(
    conn: Any,
    table: str,
    vector: Sequence[float],
    k: int,
    *,
    accept: Accept,
    max_distance: float | None = None,
) -> list[tuple[int, float]]:
    """(id, cosine distance) of the k nearest rows of `table` that `accept` keeps, nearest
    first, none farther than `max_distance`.

    The daemon searches its in-memory copy of the vectors (`storage.vector_index`, exact);
    without one (the CLI, tests) sqlite-vec's exact scan of `table`.
    """
    if k <= 0:
        return []
    index = index_of(conn)
    if index is not None:
        return index.nearest(conn, table, vector, k, accept=accept, max_distance=max_distance)
    blob = pack(vector)
    fetch = min(VEC_MAX_K, max(k + OVERSAMPLE, int(k * OVERSAMPLE_RATIO)))
    while True:
        near = conn.execute(
            f"SELECT {KEYS[table]}, distance FROM {table} WHERE embedding MATCH ? AND k = ?"
            " ORDER BY distance",
            (blob, fetch),
        ).fetchall()
        fetched = len(near)
        # A zero vector (no words the embedder knows) has no cosine distance: it is near nothing.
        near = [r for r in near if r[1] is not None]
        far = max_distance is not None and bool(near) and float(near[-1][1]) > max_distance
        if max_distance is not None:
            near = [r for r in near if float(r[1]) <= max_distance]
        ids = [int(r[0]) for r in near]
        kept = accept(ids) if ids else set()
        hits = [(int(r[0]), float(r[1])) for r in near if int(r[0]) in kept]
        # Past the distance floor a wider net cannot find anything closer.
        if len(hits) >= k or far or fetched < fetch or fetch >= VEC_MAX_K:
            return hits[:k]
        fetch = min(VEC_MAX_K, fetch + wider(k, len(hits), fetched))


def among(
    conn: Any,
    table: str,
    vector: Sequence[float],
    row_ids: Sequence[int],
    k: int,
    *,
    max_distance: float | None = None,
) -> list[tuple[int, float]]:
    """(id, cosine distance) of the k rows of `row_ids` nearest `vector`, nearest first, none
    farther than `max_distance`: for a filter that sees few rows, which are read first (the
    vector index; without one sqlite-vec's `vec_distance_cosine`, row by row)."""
    if k <= 0 or not row_ids:
        return []
    index = index_of(conn)
    if index is not None:
        return index.among(conn, table, vector, row_ids, k, max_distance=max_distance)
    blob = pack(vector)
    found = []
    for at in range(0, len(row_ids), 500):
        chunk = row_ids[at : at + 500]
        found += conn.execute(
            f"SELECT {KEYS[table]}, vec_distance_cosine(embedding, ?) FROM {table}"
            f" WHERE {KEYS[table]} IN ({placeholders(chunk)})",
            (blob, *chunk),
        ).fetchall()
    near = [
        (int(i), float(d))
        for i, d in found
        if d is not None and (max_distance is None or float(d) <= max_distance)
    ]
    return sorted(near, key=lambda hit: (hit[1], hit[0]))[:k]  # ties: the lower id first


def nearest_facts(
    conn: Any,
    vector: Sequence[float],
    *,
    user_id: str,
    k: int,
    max_distance: float | None = None,
) -> list[tuple[MemoryRow, float]]:
    """The k active facts of `user_id` closest to `vector`, nearest first, with their distance."""

    def accept(ids: list[int]) -> set[int]:
        marks = placeholders(ids)
        rows = conn.execute(
            f"SELECT id FROM memories WHERE id IN ({marks}) AND user_id = ?"
            " AND kind = 'fact' AND status = 'active'",
            (*ids, user_id),
        )
        return {int(r[0]) for r in rows}

    near = nearest(conn, "memory_vectors", vector, k, accept=accept, max_distance=max_distance)
    if not near:
        return []
    marks = placeholders(near)
    rows = conn.execute(
        f"SELECT * FROM memories WHERE id IN ({marks})", [memory_id for memory_id, _ in near]
    ).fetchall()
    by_id = {int(r["id"]): MemoryRow.from_row(r) for r in rows}
    return [(by_id[i], distance) for i, distance in near if i in by_id]
