"""Forgetting and its reversal (seeds 001 §7, 003; docs/memory.md, "Memory that lasts"): the
narrow TTL, a user's forget, an end date the writer gave, restore, confirm.

Decay only lowers a memory's rank and never deletes; the one automatic soft delete is the narrow
TTL (`ttl_soft_delete`). The conventions of `policies`: the caller's transaction, an explicit
`now`, one history row per status change. A soft-deleted memory loses its vector.
"""

from __future__ import annotations

from typing import Any

from lobug.memory.lifecycle.status import Sql, change_status
from lobug.memory.table.rows import add_history
from lobug.memory.table.salience import DAY

# Summaries are cascade inputs (the cascades keep and retire them), so no policy touches them.
IN_KINDS = "kind IN ('fact', 'insight', 'procedural', 'reflection')"
SEEN = "COALESCE(last_accessed, created_at)"  # "last seen": the last use, else creation
# The TTL (seed 001 §7): idle this long AND importance below this (the default importance of an
# ordinary memory), never used, never said again, mid layer, not pinned.
TTL_IDLE_DAYS = 60.0
TTL_IMPORTANCE_BELOW = 0.5


def ttl_soft_delete(
    conn: Any,
    now: float,
    purge_after_days: float = 30.0,
    *,
    actor: str = "system",
) -> int:
    """Seed 001 §7, narrowly: the memories of the TTL (above) → soft_deleted (purged
    purge_after_days later unless restored). Everything else stays."""
    rows = conn.execute(
        f"SELECT * FROM memories WHERE status IN ('active', 'archived') AND pinned = 0"
        f" AND decay_rate > 0 AND layer = 'mid' AND hits = 0 AND mention_count <= 1"
        f" AND {IN_KINDS} AND importance < ? AND ? - {SEEN} > ?",
        (TTL_IMPORTANCE_BELOW, now, TTL_IDLE_DAYS * DAY),
    ).fetchall()
    for row in rows:
        _soft_delete(
            conn,
            row,
            now,
            purge_after_days,
            event="TTL",
            meta={
                "reason": "ttl",
                "idle_days": round((now - (row["last_accessed"] or row["created_at"])) / DAY, 3),
            },
            actor=actor,
        )
    return len(rows)


def soft_delete(
    conn: Any,
    memory_id: int,
    now: float,
    purge_after_days: float = 30.0,
    *,
    actor: str = "user",
    reason: str = "forget",
) -> bool:
    """A user's forget (seed 001 §7): soft-deleted now, purged after purge_after_days."""
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None or row["status"] == "soft_deleted":
        return False
    _soft_delete(
        conn, row, now, purge_after_days, event="SOFT_DELETE", meta={"reason": reason}, actor=actor
    )
    return True


def restore(conn: Any, memory_id: int, now: float, actor: str = "user") -> bool:
    """Bring an archived or soft-deleted memory back; it counts as seen now."""
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None or row["status"] == "active":
        return False
    # A restore is the user vouching for the memory: full confidence, seen now, so the next
    # GC does not take it straight back. A soft-deleted memory lost its vector; an archived
    # one kept it.
    change_status(
        conn,
        row,
        "active",
        now=now,
        event="RESTORE",
        actor=actor,
        meta={"needs_vector": row["status"] == "soft_deleted"},
        purge_at=None,
        confidence=1.0,
        last_accessed=now,
        # Expired (seed 002) and restored: the user wants it back, for good.
        expires_at=Sql("CASE WHEN expires_at <= ? THEN NULL ELSE expires_at END", (now,)),
    )
    return True


def expire(conn: Any, now: float, purge_after_days: float = 30.0, *, actor: str = "system") -> int:
    """Seed 002: live memories past their `expires_at` (hidden from every read since) →
    soft_deleted, with an EXPIRE history row naming the time; purged purge_after_days later
    unless restored. Every kind, pinned or not: the writer asked for the end date."""
    rows = conn.execute(
        "SELECT * FROM memories WHERE status IN ('active', 'archived')"
        " AND expires_at IS NOT NULL AND expires_at <= ?",
        (now,),
    ).fetchall()
    for row in rows:
        _soft_delete(
            conn,
            row,
            now,
            purge_after_days,
            event="EXPIRE",
            meta={"reason": "expired", "expires_at": row["expires_at"]},
            actor=actor,
        )
    return len(rows)


def confirm(conn: Any, memory_id: int, now: float, actor: str = "user") -> bool:
    """Protect a memory (seed 003 confirm_fact): confidence 1 and decay_rate 0, for good."""
    row = conn.execute(
        "SELECT user_id, confidence, decay_rate FROM memories WHERE id = ?", (memory_id,)
    ).fetchone()
    if row is None:
        return False
    conn.execute("UPDATE memories SET confidence = 1.0, decay_rate = 0 WHERE id = ?", (memory_id,))
    add_history(
        conn,
        user_id=row["user_id"],
        memory_id=memory_id,
        event="UPDATE",
        actor=actor,
        now=now,
        meta={"confirmed": True, "confidence": row["confidence"], "decay_rate": row["decay_rate"]},
    )
    return True


def _soft_delete(
    conn: Any,
    row: Any,
    now: float,
    purge_after_days: float,
    *,
    event: str,
    meta: dict[str, Any],
    actor: str = "system",
) -> None:
    purge_at = now + purge_after_days * DAY
    change_status(
        conn,
        row,
        "soft_deleted",
        now=now,
        event=event,
        actor=actor,
        meta={**meta, "purge_at": purge_at},
        purge_at=purge_at,
    )
