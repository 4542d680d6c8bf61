"""The base memory: one living document per user, always in the prompt (seed 004 §2.1)."""

from __future__ import annotations

import time
from typing import Any

from lobug.memory.table import delta
from lobug.memory.table.rows import add_history


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


BASE_TTL_S = 30.0  # a base memory written by another process (CLI import) shows up this soon


class BaseMemoryCache:
    """The base memory per user, kept in memory: it is in every prompt and changes rarely.

    Invalidated when a cascade in this process rewrites it; a TTL catches other writers. A
    read that began before an invalidation cannot put what it read back (`generation`): a turn
    that read the old base while a cascade rewrote it would otherwise cache the old one.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, float]] = {}
        self._generation = 0

    @property
    def generation(self) -> int:
        """Take it before reading the base from the database; hand it to `put`."""
        return self._generation

    def get(self, user_id: str) -> str | None:
        entry = self._entries.get(user_id)
        if entry is None or time.monotonic() - entry[1] > BASE_TTL_S:
            return None
        return entry[0]

    def put(self, user_id: str, content: str, generation: int) -> None:
        if generation == self._generation:  # else the base was rewritten after it was read
            self._entries[user_id] = (content, time.monotonic())

    def invalidate(self, user_id: str) -> None:
        self._generation += 1
        self._entries.pop(user_id, None)
