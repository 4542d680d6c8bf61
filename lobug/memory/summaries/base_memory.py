"""The base memory: one living document per user, always in the prompt (seed 004 §2.1)."""

from __future__ import annotations

from typing import Any

from lobug.memory.store import delta
from lobug.memory.store.rows import add_history


def get_base(conn: Any, user_id: str) -> str:
    row = conn.execute("SELECT content FROM base_memory WHERE user_id = ?", (user_id,)).fetchone()
    return "" if row is None else str(row[0])


def set_base(
    conn: Any, user_id: str, content: str, *, now: float, actor: str, meta: dict[str, Any]
) -> None:
    """Overwrite the document; history keeps the old and the new text (memory_id NULL), and
    the sessions' delta header says it was rewritten."""
    old = get_base(conn, user_id)
    conn.execute(
        "INSERT INTO base_memory (user_id, content, updated_at) VALUES (?, ?, ?)"
        " ON CONFLICT(user_id) DO UPDATE SET content = excluded.content,"
        " updated_at = excluded.updated_at",
        (user_id, content, now),
    )
    add_history(
        conn,
        user_id=user_id,
        memory_id=None,
        event="UPDATE",
        old_value=old,
        new_value=content,
        actor=actor,
        now=now,
        meta={"target": "base_memory", **meta},
    )
    delta.base_rewritten(conn, user_id, content, now)
