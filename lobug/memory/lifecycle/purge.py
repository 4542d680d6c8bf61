"""Hard deletion: a purged memory leaves no content behind in any table, index or vector."""

from __future__ import annotations

from typing import Any

from lobug.memory.table.rows import add_history
from lobug.memory.vectors.knn import drop_memory_vector
from lobug.storage.sqlite import has_table


def purge_memory(
    conn: Any,
    memory_id: int,
    actor: str = "system",
    *,
    now: float,
    reason: str = "purge",
    scrub: bool = True,
) -> bool:
    """Delete a memory and everything derived from it; keep one PURGE row without content.

    Raises if `memory_vectors` exists but cannot be written (sqlite-vec not loaded): a purge
    that silently left the vector behind would not be a purge. The source turns stay: they
    are the conversation log, not something derived from the memory.
    """
    row = conn.execute(
        "SELECT id, user_id, status FROM memories WHERE id = ?", (memory_id,)
    ).fetchone()
    if row is None:
        return False
    previous = conn.execute("PRAGMA secure_delete").fetchone()[0]
    # secure_delete overwrites freed pages with zeros, so the text is gone from the file too,
    # not only unreachable.
    conn.execute("PRAGMA secure_delete = ON")
    try:
        counts = _delete_everything(conn, memory_id)
        if scrub:
            scrub_fts(conn)
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(previous)}")
    add_history(
        conn,
        user_id=row["user_id"],
        memory_id=memory_id,
        event="PURGE",
        actor=actor,
        now=now,
        meta={"reason": reason, "status": row["status"], **counts},
    )
    return True


def purge_due(conn: Any, now: float, actor: str = "system") -> int:
    """Purge every soft-deleted memory whose purge_at has come."""
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM memories WHERE status = 'soft_deleted' AND purge_at IS NOT NULL"
            " AND purge_at <= ? ORDER BY id",
            (now,),
        )
    ]
    for memory_id in ids:
        purge_memory(conn, memory_id, actor, now=now, reason="purge_due", scrub=False)
    if ids:
        scrub_fts(conn)
    return len(ids)


def scrub_fts(conn: Any) -> None:
    """Merge the FTS5 segments: a delete leaves tombstones, 'optimize' drops the old terms."""
    if has_table(conn, "memories_fts"):
        conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")


def _delete_everything(conn: Any, memory_id: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    vectors = drop_memory_vector(conn, memory_id, strict=True)
    if vectors is not None:  # no vector table, nothing to count
        counts["vectors"] = vectors
    entity_ids = [
        r[0]
        for r in conn.execute(
            "SELECT entity_id FROM memory_entities WHERE memory_id = ?", (memory_id,)
        )
    ]
    counts["entity_links"] = conn.execute(
        "DELETE FROM memory_entities WHERE memory_id = ?", (memory_id,)
    ).rowcount
    # An entity only this memory mentioned is itself derived from it (a name, an address). One
    # the conversation log names too stays: the turns keep their links, as they keep their text.
    counts["entities"] = sum(
        conn.execute(
            "DELETE FROM entities WHERE id = ?"
            " AND NOT EXISTS (SELECT 1 FROM memory_entities WHERE entity_id = ?)"
            " AND NOT EXISTS (SELECT 1 FROM turn_entities WHERE entity_id = ?)",
            (eid, eid, eid),
        ).rowcount
        for eid in entity_ids
    )
    counts["relations"] = conn.execute(
        "DELETE FROM relations WHERE from_id = ? OR to_id = ?", (memory_id, memory_id)
    ).rowcount
    counts["sources"] = conn.execute(
        "DELETE FROM memory_sources WHERE memory_id = ?", (memory_id,)
    ).rowcount
    counts["changes"] = conn.execute(
        "DELETE FROM change_log WHERE memory_id = ?", (memory_id,)
    ).rowcount
    # Pending or finished jobs about it (an embed job's payload names the memory).
    counts["jobs"] = conn.execute(
        "DELETE FROM jobs WHERE kind = 'embed_memory' AND json_extract(payload, '$.memory_id') = ?",
        (memory_id,),
    ).rowcount
    # Other memories' history may quote its text (the fact it superseded, a merge).
    content = conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
    for column in ("old_value", "new_value"):
        conn.execute(
            f"UPDATE history SET {column} = NULL WHERE {column} = ? AND memory_id != ?",
            (content, memory_id),
        )
    conn.execute("UPDATE memories SET supersedes = NULL WHERE supersedes = ?", (memory_id,))
    # Earlier history rows carry the content (ADD new_value, ARCHIVE old_value, …).
    counts["history"] = conn.execute(
        "DELETE FROM history WHERE memory_id = ?", (memory_id,)
    ).rowcount
    conn.execute("DELETE FROM memories WHERE id = ?", (memory_id,))  # the FTS trigger follows
    return counts
