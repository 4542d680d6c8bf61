"""Session consolidation (seed 003): a session the user left is consolidated once.

On a session switch (the device's user turn lands in another session: a new session id, or
the old one idle past `chat.session_idle_minutes`) the memory hook enqueues one
`consolidate_session` job per ended, unconsolidated session of that device (`enqueue_ended`,
in the turn's transaction: one indexed read, no wait); the daily consolidation's schedule
enqueues the ones left behind (`enqueue_idle`).

The job makes sure every exchange of the session went through extraction (a missing `extract`
job is enqueued, a pending one waited for: NotReady), runs the consolidation on the session's
facts only (`Consolidator.run(only=...)`: duplicates among them and against what was stored
before, merged; updates and contradictions fingerprinted) and sets `sessions.consolidated_at`.
Idempotent: a consolidated session is skipped, a re-run merges nothing twice.
"""

from __future__ import annotations

from typing import Any

from lobug.conversation import CONVERSATION_TURN, TurnRecord
from lobug.memory import enqueue
from lobug.workers import queue

CONSOLIDATE_SESSION = "consolidate_session"
RECENT_SESSIONS = 5  # the device's latest sessions looked at per turn (indexed)
IDLE_BATCH = 50  # ended sessions the daily schedule enqueues at most
EXTRACTION_WAIT_S = 30.0


def _key(session_id: str) -> str:
    return f"{CONSOLIDATE_SESSION}:{session_id}"


def enqueue_ended(conn: Any, turn: TurnRecord, *, now: float, max_attempts: int) -> list[int]:
    """In the user turn's transaction: a job for each of the device's other recent sessions
    not consolidated yet (none already queued or given up on). A consolidated session the
    user comes back to is open again: its new exchanges are consolidated when it ends."""
    conn.execute(
        "UPDATE sessions SET consolidated_at = NULL WHERE id = ? AND consolidated_at IS NOT NULL",
        (turn.session_id,),
    )
    rows = conn.execute(
        "SELECT id, user_id FROM sessions WHERE device_id = ? AND id != ?"
        " AND consolidated_at IS NULL ORDER BY last_active DESC LIMIT ?",
        (turn.device_id, turn.session_id, RECENT_SESSIONS),
    ).fetchall()
    return [
        enqueue_session(conn, r["id"], r["user_id"], now=now, max_attempts=max_attempts)
        for r in rows
        if not _given_up(conn, r["id"])
    ]


def enqueue_idle(conn: Any, *, now: float, idle_s: float, max_attempts: int) -> list[int]:
    """The schedule's catch-up: sessions idle for `idle_s` and never consolidated."""
    rows = conn.execute(
        "SELECT id, user_id FROM sessions WHERE consolidated_at IS NULL AND last_active < ?"
        " ORDER BY last_active DESC LIMIT ?",
        (now - idle_s, IDLE_BATCH),
    ).fetchall()
    return [
        enqueue_session(conn, r["id"], r["user_id"], now=now, max_attempts=max_attempts)
        for r in rows
        if not _given_up(conn, r["id"])
    ]


def enqueue_session(
    conn: Any, session_id: str, user_id: str, *, now: float, max_attempts: int
) -> int:
    return queue.enqueue(
        conn,
        CONSOLIDATE_SESSION,
        {"user_id": user_id, "session_id": session_id},
        now=now,
        dedupe_key=_key(session_id),
        max_attempts=max_attempts,
    )


def _given_up(conn: Any, session_id: str) -> bool:
    """A job for it failed for good: `lobug jobs retry` runs it again, not every turn."""
    row = conn.execute(
        "SELECT 1 FROM jobs WHERE kind = ? AND state = 'failed' AND dedupe_key = ? LIMIT 1",
        (CONSOLIDATE_SESSION, _key(session_id)),
    ).fetchone()
    return row is not None


def is_consolidated(conn: Any, session_id: str) -> bool:
    row = conn.execute(
        "SELECT consolidated_at FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return row is None or row[0] is not None  # a session that is gone has nothing to do


def extraction_owed(conn: Any, session_id: str) -> tuple[list[tuple[int, int | None]], int]:
    """(the exchanges no extraction job ever saw: (user turn, its reply), how many are still
    pending or running)."""
    missing: list[tuple[int, int | None]] = []
    pending = 0
    users = conn.execute(
        f"SELECT id FROM turns WHERE session_id = ? AND role = 'user' AND {CONVERSATION_TURN}"
        " ORDER BY id",
        (session_id,),
    ).fetchall()
    for (turn_id,) in users:
        states = {
            r[0]
            for r in conn.execute(
                "SELECT state FROM jobs WHERE kind = ? AND dedupe_key = ?",
                (enqueue.EXTRACT, f"{enqueue.EXTRACT}:{turn_id}"),
            )
        }
        if states & {"pending", "running"}:
            pending += 1
        elif not states and not _extracted(conn, turn_id):
            missing.append((int(turn_id), _reply_to(conn, session_id, int(turn_id))))
    return missing, pending


def _extracted(conn: Any, turn_id: int) -> bool:
    row = conn.execute(
        "SELECT 1 FROM memory_sources WHERE turn_id = ? AND reason = 'extracted' LIMIT 1",
        (turn_id,),
    ).fetchone()
    return row is not None


def _reply_to(conn: Any, session_id: str, turn_id: int) -> int | None:
    row = conn.execute(
        "SELECT id, role FROM turns WHERE session_id = ? AND id > ? ORDER BY id LIMIT 1",
        (session_id, turn_id),
    ).fetchone()
    return int(row["id"]) if row is not None and row["role"] == "assistant" else None


def extract_missing(
    conn: Any,
    user_id: str,
    missing: list[tuple[int, int | None]],
    *,
    now: float,
    max_attempts: int,
) -> None:
    for user_turn, reply in missing:
        enqueue.extract(
            conn,
            user_id=user_id,
            user_turn_id=user_turn,
            assistant_turn_id=reply,
            now=now,
            max_attempts=max_attempts,
        )


def session_facts(conn: Any, session_id: str, user_id: str) -> list[int]:
    rows = conn.execute(
        "SELECT id FROM memories WHERE session_id = ? AND user_id = ? AND kind = 'fact'"
        " AND status = 'active' ORDER BY id",
        (session_id, user_id),
    )
    return [int(r[0]) for r in rows]


def mark_consolidated(conn: Any, session_id: str, *, now: float) -> None:
    conn.execute(
        "UPDATE sessions SET consolidated_at = ? WHERE id = ? AND consolidated_at IS NULL",
        (now, session_id),
    )
