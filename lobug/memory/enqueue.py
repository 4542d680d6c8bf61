"""The memory jobs, enqueued inside the transaction that commits their data."""

from __future__ import annotations

from typing import Any

from lobug.workers import queue

EMBED_TURN = "embed_turn"
EXTRACT = "extract"
CASCADE_SHORT = "cascade_short"
CASCADE_LONG = "cascade_long"
EMBED_MEMORY = "embed_memory"
KINDS = (EMBED_TURN, EXTRACT, CASCADE_SHORT, CASCADE_LONG, EMBED_MEMORY)


def embed_turn(conn: Any, turn_id: int, *, now: float) -> int:
    return queue.enqueue(conn, EMBED_TURN, {"turn_id": turn_id}, now=now)


def embed_memory(conn: Any, memory_id: int, *, now: float) -> int:
    """A vector for a memory written without one (remember, restore); one pending per memory."""
    return queue.enqueue(
        conn,
        EMBED_MEMORY,
        {"memory_id": memory_id},
        now=now,
        dedupe_key=f"{EMBED_MEMORY}:{memory_id}",
    )


def extract(
    conn: Any,
    *,
    user_id: str,
    user_turn_id: int,
    assistant_turn_id: int | None,
    now: float,
) -> int:
    payload = {
        "user_id": user_id,
        "user_turn_id": user_turn_id,
        "assistant_turn_id": assistant_turn_id,
    }
    return queue.enqueue(
        conn,
        EXTRACT,
        payload,
        now=now,
        dedupe_key=f"{EXTRACT}:{user_turn_id}",
    )


def per_user(conn: Any, kind: str, *, user_id: str, now: float) -> int:
    """At most one pending job of `kind` per user (the dedupe key): cascade checks and the
    scheduled upkeep and reflection jobs."""
    return queue.enqueue(
        conn,
        kind,
        {"user_id": user_id},
        now=now,
        dedupe_key=f"{kind}:{user_id}",
    )
