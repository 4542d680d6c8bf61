"""Forgetting and its reversal (seeds 001 §7, 003): decay, TTL soft delete, restore, confirm.

Shares the conventions of `lifecycle`: the caller's transaction, an explicit `now`, one history
row per status change (`status.change_status`). A memory leaving `active` loses its vector
(`memory_vectors` holds active memories only), so a restore needs a re-embed.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from lobug.memory.lifecycle.status import Sql, change_status
from lobug.memory.search.scoring import DAY, ebbinghaus
from lobug.memory.store.rows import add_history

# Summaries are cascade inputs (the cascades keep and retire them), so no policy touches them.
KINDS = ("fact", "insight", "procedural", "reflection")
IN_KINDS = "kind IN ('fact', 'insight', 'procedural', 'reflection')"
SEEN = "COALESCE(last_accessed, created_at)"  # "last seen": the last use, else creation


def apply_decay(
    conn: Any,
    now: float,
    soft_delete_below: float = 0.05,
    purge_after_days: float = 30.0,
    *,
    actor: str = "system",
) -> dict[str, int]:
    """Ebbinghaus decay of active facts; below the threshold they are soft-deleted."""
    rows = conn.execute(
        "SELECT * FROM memories WHERE status = 'active' AND pinned = 0 AND decay_rate > 0"
        " AND kind IN ('fact', 'insight')"
    ).fetchall()
    decayed: Counter[str] = Counter()
    deleted = 0
    for row in rows:
        # Decay from the later of the last access and the last decay run: applying the whole
        # idle time again each night would compound (c·e^-r·e^-2r·…) instead of c·e^-r·days.
        attributes = json.loads(row["attributes"] or "{}")
        since = max(
            float(row["last_accessed"] or row["created_at"]),
            float(attributes.get("decayed_at") or 0.0),
        )
        days = max(0.0, (now - since) / DAY)
        confidence = ebbinghaus(row["confidence"], row["decay_rate"], days)
        if confidence < soft_delete_below:
            _soft_delete(
                conn,
                row,
                now,
                purge_after_days,
                event="SOFT_DELETE",
                meta={"reason": "decay", "confidence": round(confidence, 6)},
                confidence=confidence,
                actor=actor,
            )
            deleted += 1
        elif days > 0:
            conn.execute(
                "UPDATE memories SET confidence = ?,"
                " attributes = json_set(attributes, '$.decayed_at', ?) WHERE id = ?",
                (confidence, now, row["id"]),
            )
            decayed[row["user_id"]] += 1
    for user_id, count in sorted(decayed.items()):
        add_history(
            conn,
            user_id=user_id,
            memory_id=None,
            event="DECAY",
            actor=actor,
            now=now,
            meta={"decayed": count},
        )
    return {"decayed": sum(decayed.values()), "soft_deleted": deleted}


def ttl_soft_delete(
    conn: Any,
    now: float,
    idle_days: float = 60.0,
    importance_below: float = 0.5,
    purge_after_days: float = 30.0,
    *,
    actor: str = "system",
) -> int:
    """Seed 001 §7: idle > idle_days AND importance < T AND not pinned → soft_deleted."""
    rows = conn.execute(
        f"SELECT * FROM memories WHERE status IN ('active', 'archived') AND pinned = 0"
        f" AND decay_rate > 0 AND {IN_KINDS} AND importance < ? AND ? - {SEEN} > ?",
        (importance_below, now, idle_days * DAY),
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
    # A restore is the user vouching for the memory: full confidence, decay clock reset, so
    # the next GC does not take it straight back.
    change_status(
        conn,
        row,
        "active",
        now=now,
        event="RESTORE",
        actor=actor,
        meta={"needs_vector": True},
        purge_at=None,
        confidence=1.0,
        last_accessed=now,
        attributes=Sql("json_set(attributes, '$.decayed_at', ?)", (now,)),
    )
    return True


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
    confidence: float | None = None,
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
        **({} if confidence is None else {"confidence": confidence}),
    )
