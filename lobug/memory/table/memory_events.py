"""Seed 001 §14's per-event operational rows (`memory_events`), beside `op_events`' hourly
aggregates (`upkeep/events.py`); which path writes which node is docs/seeds.md, row 181.

One row per memory event: who (user, thread), where (`node`), what (`op`, `status`), which
memory and category, and the best neighbour's similarity when one was measured; no content.
Each row is written inside a transaction that already happens, never in one of its own (the
prompt's searches are noted in memory and written with the retrieval hits). In the store layer
so that every writer, the cascades included, may call it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lobug.storage.sqlite import placeholders

HOTPATH, CONTEXT, WORKER = "hotpath", "context", "worker"  # nodes (and "episodic": cascades)
OK, ERROR, SKIPPED = "ok", "error", "skipped"  # statuses
DAY_S = 86400.0
RETENTION_DAYS = 30  # rows older than this are pruned by the daily GC (the aggregates stay)
STATS_DAYS = 7
MAX_PENDING = 1_000  # context searches held between two flushes at most
# History events of a GC pass, as per-event operations (`from_history`).
HISTORY_OPS = {
    "ARCHIVE": "archive",
    "SOFT_DELETE": "delete",
    "TTL": "ttl",
    "EXPIRE": "expire",  # seed 002: past its expires_at
    "PURGE": "purge",
    "PROMOTE": "promote",
    "DEMOTE": "demote",
}


def emit(
    conn: Any,
    node: str,
    op: str,
    *,
    user_id: str,
    now: float,
    status: str = OK,
    thread_id: str | None = None,
    memory_id: int | None = None,
    category: str | None = None,
    sim: float | None = None,
) -> None:
    """One event row, in the caller's write transaction. sim: a similarity (1 - cosine
    distance) to the best neighbour, when one was measured."""
    conn.execute(
        "INSERT INTO memory_events"
        " (user_id, thread_id, node, op, status, memory_id, category, sim, ts)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            user_id,
            thread_id,
            node,
            op,
            status,
            memory_id,
            category,
            None if sim is None else round(sim, 4),
            now,
        ),
    )


def similarity(*distances: float | None) -> float | None:
    """The similarity of the first cosine distance known (the best neighbour's), or None."""
    return next((1.0 - d for d in distances if d is not None), None)


def from_history(conn: Any, after_id: int, *, node: str, now: float) -> int:
    """One event per status or layer change written to `history` after row `after_id` (a GC
    pass's: archive, delete, ttl, purge, promote, demote); returns how many."""
    marks = placeholders(HISTORY_OPS)
    rows = conn.execute(
        "SELECT h.user_id, h.memory_id, h.event, m.category FROM history h"
        " LEFT JOIN memories m ON m.id = h.memory_id"
        f" WHERE h.id > ? AND h.event IN ({marks}) ORDER BY h.id",
        (after_id, *HISTORY_OPS),
    ).fetchall()
    for user_id, memory_id, event, category in rows:
        emit(
            conn,
            node,
            HISTORY_OPS[event],
            user_id=user_id,
            now=now,
            memory_id=memory_id,
            category=category,
        )
    return len(rows)


def prune(conn: Any, *, now: float, days: float = RETENTION_DAYS) -> int:
    """Forget the event rows older than `days` (the daily GC); returns how many."""
    return int(
        conn.execute("DELETE FROM memory_events WHERE ts < ?", (now - days * DAY_S,)).rowcount
    )


class SearchEvents:
    """Context searches noted on the hot path (no write), written by the next hits flush in
    its transaction (`write`). Bounded: past `MAX_PENDING` a search goes uncounted."""

    def __init__(self) -> None:
        self._rows: list[dict[str, Any]] = []

    def searched(
        self, user_id: str, thread_id: str | None, found: Sequence[Any] | None, now: float
    ) -> None:
        """A context search: `found` the facts it put in the prompt (best first; the first is
        the event's memory), None when the search failed."""
        if len(self._rows) >= MAX_PENDING:
            return
        top = found[0] if found else None
        self._rows.append(
            {
                "node": CONTEXT,
                "op": "search",
                "user_id": user_id,
                "now": now,
                "status": ERROR if found is None else OK,
                "thread_id": thread_id,
                "memory_id": None if top is None else top.id,
                "category": None if top is None else top.category,
            }
        )

    def take(self) -> list[dict[str, Any]]:
        rows, self._rows = self._rows, []
        return rows

    def put_back(self, rows: list[dict[str, Any]]) -> None:
        """A flush that failed keeps its events for the next one."""
        self._rows = (rows + self._rows)[:MAX_PENDING]


def write(conn: Any, rows: Sequence[dict[str, Any]]) -> None:
    """`SearchEvents.take`'s events, in the caller's write transaction."""
    for row in rows:
        emit(conn, **row)


def by_node(conn: Any, start: float, *, days: int = STATS_DAYS) -> dict[str, Any]:
    """The event rows since `start` (a day's start) by node and operation: the count, by
    status and by day (oldest first), for `/v1/stats`'s `operations.events`."""
    rows = conn.execute(
        "SELECT node, op, status, CAST((ts - ?) / ? AS INTEGER) AS day, COUNT(*)"
        " FROM memory_events WHERE ts >= ? GROUP BY node, op, status, day"
        " ORDER BY node, op, status, day",
        (start, DAY_S, start),
    ).fetchall()
    nodes: dict[str, dict[str, Any]] = {}
    for node, op, status, day, count in rows:
        entry = nodes.setdefault(node, {}).setdefault(
            op, {"count": 0, "by_status": {}, "by_day": [0] * days}
        )
        entry["count"] += count
        entry["by_status"][status] = entry["by_status"].get(status, 0) + count
        entry["by_day"][min(int(day), days - 1)] += count
    return nodes
