"""Memory lifecycle policies (seeds 000, 001 §7, 003; docs/memory.md, "Lifecycle"): scores,
promotion, archive, demotion, capacity, and `run_gc`, the pass that runs every policy
(forgetting is in `forgetting`, hard deletion in `purge`).

Every function works in the caller's write transaction, takes an explicit `now` and returns
counts. Status changes write one `history` row per memory; rescoring writes none, so history
does not grow by the size of the store every night. Nothing the user told us and uses is lost
(issue 10): archiving only takes a memory out of the prompt's default set. Pinned memories are
never archived, demoted or evicted; confirmed ones (decay_rate 0) never archived or demoted;
summaries belong to the cascades.
"""

from __future__ import annotations

from typing import Any

from lobug.config import LifecycleConfig
from lobug.memory.lifecycle.forgetting import IN_KINDS, SEEN, expire, ttl_soft_delete
from lobug.memory.lifecycle.purge import purge_due
from lobug.memory.lifecycle.status import change_status
from lobug.memory.table.rows import add_history
from lobug.memory.table.salience import DAY, SALIENCE, Salience
from lobug.memory.table.strength import retrievability, seen_at

# The GC's thresholds (constants, issue 24; what an owner sets is in LifecycleConfig).
PROMOTE_HITS = 3  # seed 000: mid → long once used this often...
PROMOTE_SEEN_WITHIN_DAYS = 7.0  # ...and seen within this window
ARCHIVE_SCORE_BELOW = 0.5  # a mid memory scoring below this is archived, a long one demoted
MID_CAPACITY = 500  # mid memories per user; the weakest beyond are archived


def store_scores(conn: Any, now: float, salience: Salience = SALIENCE) -> int:
    """Store each live memory's seed-000 score and its retrievability now in attributes
    (score, retrievability, scored_at: for explain and listing; ranking computes its own)."""
    rows = conn.execute(f"SELECT * FROM memories WHERE status != 'soft_deleted' AND {IN_KINDS}")
    count = 0
    for row in rows.fetchall():
        score = salience.score(row, now).total
        kept = retrievability(float(row["decay_rate"]), (now - seen_at(row)) / DAY)
        conn.execute(
            "UPDATE memories SET attributes = json_set(attributes, '$.score', ?,"
            " '$.retrievability', ?, '$.scored_at', ?) WHERE id = ?",
            (round(score, 6), round(kept, 6), now, row["id"]),
        )
        count += 1
    return count


def promote(conn: Any, now: float, *, actor: str = "system") -> int:
    """mid → long for memories used often (PROMOTE_HITS) and seen within the window."""
    rows = conn.execute(
        f"SELECT id, user_id, hits, layer FROM memories WHERE status = 'active' AND layer = 'mid'"
        f" AND {IN_KINDS} AND hits >= ? AND ? - {SEEN} <= ?",
        (PROMOTE_HITS, now, PROMOTE_SEEN_WITHIN_DAYS * DAY),
    ).fetchall()
    for row in rows:
        _change_layer(conn, row, "long", "PROMOTE", {"hits": row["hits"]}, now=now, actor=actor)
    return len(rows)


def demote_or_archive(
    conn: Any,
    now: float,
    salience: Salience = SALIENCE,
    max_age_days: float = 30.0,
    *,
    actor: str = "system",
) -> dict[str, int]:
    """Archive weak or long-idle mid memories (out of the prompt's default set, still
    findable); demote weak long ones to mid. Never deletes."""
    rows = conn.execute(
        f"SELECT * FROM memories WHERE status = 'active' AND pinned = 0 AND decay_rate > 0"
        f" AND {IN_KINDS}"
    ).fetchall()
    archived = demoted = 0
    for row in rows:
        score = salience.score(row, now)
        # Idle age (since last use), not creation age: a memory still in use is not stale.
        if row["layer"] == "mid" and (
            score.total < ARCHIVE_SCORE_BELOW or score.age_days > max_age_days
        ):
            reason = "low_score" if score.total < ARCHIVE_SCORE_BELOW else "idle"
            change_status(
                conn,
                row,
                "archived",
                now=now,
                event="ARCHIVE",
                actor=actor,
                meta={
                    "reason": reason,
                    "score": round(score.total, 6),
                    "age_days": round(score.age_days, 3),
                },
            )
            archived += 1
        elif row["layer"] == "long" and score.total < ARCHIVE_SCORE_BELOW:
            meta = {"score": round(score.total, 6)}
            _change_layer(conn, row, "mid", "DEMOTE", meta, now=now, actor=actor)
            demoted += 1
    return {"archived": archived, "demoted": demoted}


def capacity_cleanup(
    conn: Any,
    now: float,
    mid_capacity: int = MID_CAPACITY,
    *,
    actor: str = "system",
) -> int:
    """Archive the lowest-scored unpinned mid memories of each user beyond mid_capacity."""
    archived = 0
    users = conn.execute(
        f"SELECT user_id, COUNT(*) AS n FROM memories WHERE status = 'active' AND layer = 'mid'"
        f" AND {IN_KINDS} GROUP BY user_id HAVING n > ?",
        (mid_capacity,),
    ).fetchall()
    for user in users:
        rows = conn.execute(
            f"SELECT * FROM memories WHERE status = 'active' AND layer = 'mid' AND pinned = 0"
            f" AND {IN_KINDS} AND user_id = ?",
            (user["user_id"],),
        ).fetchall()
        # Weakest first; among equals the longest idle, then the oldest row.
        ranked = sorted(
            rows,
            key=lambda r: (
                SALIENCE.score(r, now).total,
                r["last_accessed"] or r["created_at"],
                r["id"],
            ),
        )
        for row in ranked[: max(0, user["n"] - mid_capacity)]:
            change_status(
                conn,
                row,
                "archived",
                now=now,
                event="ARCHIVE",
                actor=actor,
                meta={"reason": "capacity"},
            )
            archived += 1
    return archived


def run_gc(
    conn: Any, now: float, cfg: LifecycleConfig | None = None, *, actor: str = "system"
) -> dict[str, int]:
    """One GC pass (seed 000 order): expiry (seed 002), scores, promote, archive, capacity,
    TTL, purge. From the config: purge_after_days and archive_idle_days; the rest are the
    module constants."""
    cfg = cfg or LifecycleConfig()
    expired = expire(conn, now, cfg.purge_after_days, actor=actor)
    rescored = store_scores(conn, now)
    promoted = promote(conn, now, actor=actor)
    moved = demote_or_archive(conn, now, max_age_days=cfg.archive_idle_days, actor=actor)
    evicted = capacity_cleanup(conn, now, actor=actor)
    ttl = ttl_soft_delete(conn, now, purge_after_days=cfg.purge_after_days, actor=actor)
    purged = purge_due(conn, now, actor)
    return {
        "rescored": rescored,
        "promoted": promoted,
        "demoted": moved["demoted"],
        "archived": moved["archived"] + evicted,
        "soft_deleted": ttl + expired,
        "expired": expired,
        "purged": purged,
    }


def _change_layer(
    conn: Any, row: Any, layer: str, event: str, meta: dict[str, Any], *, now: float, actor: str
) -> None:
    """mid ↔ long, with its history row (the layer is the only column that changes)."""
    conn.execute("UPDATE memories SET layer = ? WHERE id = ?", (layer, row["id"]))
    add_history(
        conn,
        user_id=row["user_id"],
        memory_id=row["id"],
        event=event,
        actor=actor,
        now=now,
        old_value=row["layer"],
        new_value=layer,
        meta=meta,
    )
