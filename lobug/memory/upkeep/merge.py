"""Merge one stored fact into another (consolidation): the kept row is reinforced, the other
archived as merged, its sources and entity links moved over; both sides get a MERGE event."""

from __future__ import annotations

from typing import Any

from lobug.memory.lifecycle.status import Sql, change_status
from lobug.memory.table import delta
from lobug.memory.table import rows as store
from lobug.memory.table.rows import MemoryRow
from lobug.memory.table.strength import Strength
from lobug.memory.write.reconcile import supersede

ACTOR = "consolidator"


def keeper(a: MemoryRow, b: MemoryRow) -> tuple[MemoryRow, MemoryRow]:
    """(kept, merged away): the pinned one, then the more often said, then the older."""
    kept = min((a, b), key=lambda r: (not r.pinned, -r.mention_count, r.created_at, r.id))
    return kept, (b if kept is a else a)


def merge_pair(
    conn: Any,
    a: MemoryRow,
    b: MemoryRow,
    *,
    now: float,
    strength: Strength,
    meta: dict[str, Any],
) -> int | None:
    """Merge the two (fresh from the DB, in the writer's transaction) if both are still active
    with the text that was judged; returns the kept id, None when nothing was done."""
    fresh = [store.get_memory(conn, row.id) for row in (a, b)]
    now_a, now_b = fresh
    if now_a is None or now_b is None:
        return None
    if any(f.status != "active" or f.content != r.content for f, r in ((now_a, a), (now_b, b))):
        return None
    kept, gone = keeper(now_a, now_b)
    if gone.pinned:
        return None  # the user's word is never retired
    store.mention_again(
        conn,
        kept,
        now=now,
        actor=ACTOR,
        meta={**meta, "reason": "consolidated", "merged": gone.id},
        said=gone.content,
        strength=strength,
    )
    # The duplicate's mentions and uses were the kept fact's all along.
    conn.execute(
        "UPDATE memories SET mention_count = mention_count + ? - 1, hits = hits + ?,"
        " importance = MAX(importance, ?) WHERE id = ?",
        (gone.mention_count, _hits(conn, gone.id), gone.importance, kept.id),
    )
    conn.execute(
        "INSERT OR IGNORE INTO memory_sources (memory_id, turn_id, reason)"
        " SELECT ?, turn_id, 'merged' FROM memory_sources WHERE memory_id = ?",
        (kept.id, gone.id),
    )
    conn.execute(
        "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id)"
        " SELECT ?, entity_id FROM memory_entities WHERE memory_id = ?",
        (kept.id, gone.id),
    )
    change_status(
        conn,
        gone,
        "archived",
        now=now,
        event="MERGE",
        actor=ACTOR,
        old_value=gone.content,
        new_value=kept.content,
        meta={**meta, "reason": "consolidated", "merged_into": kept.id},
        valid_until=now,
        updated_at=now,
        attributes=Sql(
            "json_set(CASE WHEN json_valid(attributes) THEN attributes ELSE '{}' END,"
            " '$.merged_into', ?)",
            (kept.id,),
        ),
    )
    delta.bump(
        conn,
        None,
        kept.id,
        "merged",
        delta.meta(kept.content, kept.category, kept.importance, kept.store),
        now,
        kept.user_id,
    )
    return kept.id


def _hits(conn: Any, memory_id: int) -> int:
    row = conn.execute("SELECT hits FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return int(row[0]) if row else 0


def retire_older(conn: Any, older: MemoryRow, newer: MemoryRow, *, meta: dict[str, Any],
                 now: float) -> bool:  # fmt: skip
    """`newer` updates or contradicts `older` (judged so): the older is superseded, as when a
    new statement replaces a stored fact ("newer wins", write.reconcile), if both still say
    what was judged. Returns whether it was."""
    fresh_old, fresh_new = store.get_memory(conn, older.id), store.get_memory(conn, newer.id)
    if fresh_old is None or fresh_new is None or fresh_new.status != "active":
        return False
    if fresh_old.content != older.content or fresh_new.content != newer.content:
        return False
    done = supersede(conn, older.id, newer.id, newer.content, actor=ACTOR, meta=meta, now=now)
    if done:
        shown = delta.meta(newer.content, newer.category, newer.importance, newer.store)
        delta.bump(conn, None, newer.id, "updated", shown, now, newer.user_id)
    return done
