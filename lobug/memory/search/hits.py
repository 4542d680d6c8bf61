"""Retrieval bookkeeping, kept in memory and written in batches off the request path.

A retrieval must not cost a write transaction: the writer is shared with the background jobs,
and a turn would queue behind a long extraction or GC pass. So `HitBuffer.add` only counts and
`SeenMarks.mark` only remembers which delta revision a session was shown; the service's flush
(every `service.HIT_FLUSH_S`, and at shutdown) writes both in one transaction: `hits += n`,
`last_accessed = the last retrieval`, the memory's strength reinforced once (a use, however
many retrievals the interval held: `store.strength`); each session's seen revision
(`delta.mark_seen`). A hit is a counter, not a history row (issue 42: a row per retrieved memory
per flush was most of the file after a year, and explained nothing). A crash loses at most one
interval of hit counts (and may show a delta header once more), never a memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lobug.memory.table import delta
from lobug.memory.table.strength import Strength, reinforce_row

MAX_PENDING = 10_000  # ids; far more than a household's memories retrieved in an interval


class HitBuffer:
    def __init__(self) -> None:
        self._pending: dict[int, tuple[int, float]] = {}  # id -> (count, last retrieval)

    def add(self, memory_ids: Iterable[int], now: float) -> None:
        for memory_id in memory_ids:
            if memory_id not in self._pending and len(self._pending) >= MAX_PENDING:
                continue  # bounded; a lost hit only weakens a score a little
            count, _ = self._pending.get(memory_id, (0, now))
            self._pending[memory_id] = (count + 1, now)

    def __len__(self) -> int:
        return len(self._pending)

    def take(self) -> dict[int, tuple[int, float]]:
        pending, self._pending = self._pending, {}
        return pending

    def put_back(self, pending: dict[int, tuple[int, float]]) -> None:
        """A flush that failed (disk full, DB busy) keeps its counts for the next one."""
        for memory_id, (count, seen) in pending.items():
            old_count, old_seen = self._pending.get(memory_id, (0, seen))
            self._pending[memory_id] = (old_count + count, max(seen, old_seen))


def apply_hits(
    conn: Any, pending: dict[int, tuple[int, float]], *, now: float, strength: Strength
) -> int:
    """Write the counted hits (inside the caller's write transaction); returns memories touched.

    Memories deleted or purged since their retrieval are skipped.
    """
    touched = 0
    for memory_id, (count, seen) in sorted(pending.items()):
        row = conn.execute(
            "SELECT id, user_id, hits, decay_rate, last_accessed, created_at FROM memories"
            " WHERE id = ? AND status != 'soft_deleted'",
            (memory_id,),
        ).fetchone()
        if row is None:
            continue
        reinforce_row(conn, row, at=seen, strength=strength)
        conn.execute(
            "UPDATE memories SET hits = hits + ?,"
            " last_accessed = MAX(COALESCE(last_accessed, 0), ?) WHERE id = ?",
            (count, seen, memory_id),
        )
        touched += 1
    return touched


class SeenMarks:
    """The delta revision each (user, session) was shown, until written (and as an override
    for the next header of this process meanwhile)."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], int] = {}
        self._shown: dict[tuple[str, str], int] = {}

    def mark(self, user_id: str, session_id: str, rev: int) -> None:
        key = (user_id, session_id)
        self._pending[key] = max(rev, self._pending.get(key, 0))
        self._shown[key] = max(rev, self._shown.get(key, 0))
        while len(self._shown) > MAX_PENDING:
            self._shown.pop(next(iter(self._shown)))

    def shown(self, user_id: str, session_id: str) -> int | None:
        return self._shown.get((user_id, session_id))

    def take(self) -> dict[tuple[str, str], int]:
        pending, self._pending = self._pending, {}
        return pending

    def put_back(self, pending: dict[tuple[str, str], int]) -> None:
        for (user_id, session_id), rev in pending.items():
            key = (user_id, session_id)
            self._pending[key] = max(rev, self._pending.get(key, 0))


def apply_seen(conn: Any, pending: dict[tuple[str, str], int]) -> None:
    for (_, session_id), rev in sorted(pending.items()):
        delta.mark_seen(conn, session_id, rev)
