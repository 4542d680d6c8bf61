"""What the nightly GC forgets so that no table grows with how often the household asks (issue 42).

Kept: every failed job (the operator's to read) and a week of finished ones; the history that
explains a memory (every event but retrieval hits, which are a counter on the memory); the seen
revision of every session that looked at the memory within a month; the vector changes an
index may still need. `memory_events` (30 days, `table/memory_events.py`), `change_log`
(`delta.KEEP_ROWS`) and `pair_checks` (`upkeep/pairs.py`) have their own bounds.
"""

from __future__ import annotations

from typing import Any

from lobug.storage.sqlite import has_table
from lobug.storage.vector_index import CHANGES_TABLE, prune_changes
from lobug.workers import queue

DAY_S = 86400.0
FINISHED_JOBS_DAYS = 7.0  # `lobug jobs` shows what ran this week; failed ones stay until purged
SEEN_DAYS = 30.0  # a session that looked at nothing newer than a month-old change is gone
OP_EVENTS_DAYS = 90.0  # /v1/stats reads 7 days of the hourly counts; a season for the operator
UNAPPLIED_CHANGES = 1000  # vector changes kept when no ready index of this daemon applied them


def prune(conn: Any, *, now: float, applied_changes: int | None) -> dict[str, int]:
    """Every prune, in the caller's write transaction; rows deleted per table.

    `applied_changes`: the last `vector_changes` id the daemon's in-memory index applied
    (None: it is off or not ready, so only the newest `UNAPPLIED_CHANGES` are kept; an index
    that finds a gap in the ids it has not seen loads again, `storage.vector_index`)."""
    return {
        "jobs": queue.purge(conn, states=("done",), older_than=now - FINISHED_JOBS_DAYS * DAY_S),
        "history": hits(conn),
        "revisions": revisions(conn, now=now),
        "vector_changes": vector_changes(conn, applied_changes),
        "op_events": int(
            conn.execute(
                "DELETE FROM op_events WHERE bucket < ?", (now - OP_EVENTS_DAYS * DAY_S,)
            ).rowcount
        ),
    }


def hits(conn: Any) -> int:
    """Retrieval `HIT` rows written before hits became a counter only (`memories.hits`)."""
    return int(conn.execute("DELETE FROM history WHERE event = 'HIT'").rowcount)


def revisions(conn: Any, *, now: float) -> int:
    """Seen marks (`delta`) of sessions that have not looked since a change older than
    `SEEN_DAYS`: every look marks the current revision, so they have not looked for that long.
    Should one come back, it starts from the current revision, like a new session. (A mark
    that is up to date must stay: without it the changes made before the next look would
    read as seen.)"""
    users = conn.execute(
        "SELECT (SELECT MAX(c.rev) FROM change_log c WHERE c.user_id = substr(meta.key, 11)"
        " AND c.ts < ?) FROM meta WHERE key LIKE 'delta.rev.%'",
        (now - SEEN_DAYS * DAY_S,),
    ).fetchall()
    if not users:
        return 0
    # Below every user's month-old revision, a mark is stale for whichever user it belongs to.
    stale = min(int(u[0] or 0) for u in users)
    return int(conn.execute("DELETE FROM revisions WHERE rev < ?", (stale,)).rowcount)


def vector_changes(conn: Any, applied: int | None) -> int:
    """The changes the daemon's index applied (all when it is off: the newest few kept), the
    newest row always, so an index elsewhere (`lobug mcp`) still sees the gap it must fill."""
    if not has_table(conn, CHANGES_TABLE):
        return 0
    row = conn.execute(f"SELECT MAX(id) FROM {CHANGES_TABLE}").fetchone()
    if row[0] is None:
        return 0
    newest = int(row[0])
    upto = newest - UNAPPLIED_CHANGES if applied is None else min(applied, newest - 1)
    return prune_changes(conn, upto) if upto > 0 else 0
