"""Turn and session rows: the conversation log every other part reads from."""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

# `turns.ref` of a user turn that came from /chat/audio. Device turns have no caller id of their
# own, so `ref` (free text, an importer's id for /v1/turns) says how the words arrived: spoken
# profile fields need the user's yes before they are kept (seed 001 §10, memory.write.consent).
VOICE_REF = "voice"


@dataclass(frozen=True)
class TurnRecord:
    id: int
    session_id: str
    device_id: str
    user_id: str
    role: str
    text: str
    ts: float
    ref: str | None = None
    action: str | None = None
    degraded: bool = False

    @property
    def voice(self) -> bool:
        """Heard by the device's microphone (/chat/audio), not typed."""
        return self.ref == VOICE_REF

    @classmethod
    def from_row(cls, row: Any) -> TurnRecord:
        values = {f.name: row[f.name] for f in dataclasses.fields(cls)}
        return cls(**{**values, "degraded": bool(values["degraded"])})

    def to_dict(self) -> dict[str, Any]:
        """The turn as /v1 shows it: the user and the degraded flag are not part of it."""
        return {k: v for k, v in vars(self).items() if k not in ("user_id", "degraded")}


def new_session_id() -> str:
    return "s-" + uuid.uuid4().hex[:16]


def resolve_session(
    conn: Any,
    *,
    device_id: str,
    session_id: str | None,
    now: float,
    idle_s: float,
    user_id: str = "default",
    trust: str = "full",
) -> str:
    """The given session, or the device's current one, or a new one after an idle gap.

    A session belongs to the trust of the caller that opened it (issue 25): a caller never
    joins a session of another trust, whether by device or by name, so one below the owner sees
    only turns it took part in. A named session of another trust stands for the caller's own
    session of that name (`scoped_session_id`), so a client that keeps sending the id it was
    given keeps one conversation, and neither caller can take a name from the other."""
    if session_id is None:
        row = conn.execute(
            "SELECT id, last_active FROM sessions WHERE device_id = ? AND trust = ?"
            " ORDER BY last_active DESC LIMIT 1",
            (device_id, trust),
        ).fetchone()
        if row is not None and now - row["last_active"] <= idle_s:
            session_id = row["id"]
        else:
            session_id = new_session_id()
    elif _session_trust(conn, session_id) not in (None, trust):
        session_id = scoped_session_id(session_id, trust)
        if _session_trust(conn, session_id) not in (None, trust):
            session_id = new_session_id()  # that name was taken on purpose: a fresh session
    conn.execute(
        "INSERT INTO sessions (id, user_id, device_id, started_at, last_active, trust)"
        " VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET last_active = MAX(last_active, excluded.last_active)",
        (session_id, user_id, device_id, now, now, trust),
    )
    return session_id


def scoped_session_id(session_id: str, trust: str) -> str:
    """The id, for a caller of `trust`, of a named session that another trust holds."""
    digest = hashlib.sha256(f"{trust}\0{session_id}".encode("utf-8", "surrogatepass"))
    return f"{trust}-{digest.hexdigest()[:16]}"


def session_trust(conn: Any, session_id: str) -> str:
    """The trust of the caller whose session it is ("full" for one not recorded)."""
    return _session_trust(conn, session_id) or "full"


def _session_trust(conn: Any, session_id: str) -> str | None:
    row = conn.execute("SELECT trust FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else str(row[0])


def insert_turn(
    conn: Any,
    *,
    session_id: str,
    role: str,
    text: str,
    ts: float,
    device_id: str = "default",
    user_id: str = "default",
    ref: str | None = None,
    action: str | None = None,
    degraded: bool = False,
    speaker: str | None = None,
    reply_to: int | None = None,
) -> TurnRecord:
    """speaker: who said it by name, when the caller knows (an imported conversation).
    reply_to: the turn it answers (the chat's reply: the user's turn); None: the session's
    latest turn, what a turn said next in a conversation answers (m015)."""
    cur = conn.execute(
        "INSERT INTO turns (user_id, session_id, device_id, role, text, ts, ref, action,"
        " degraded, speaker, reply_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
        " COALESCE(?, (SELECT MAX(id) FROM turns WHERE session_id = ?)))",
        (user_id, session_id, device_id, role, text, ts, ref, action, int(degraded), speaker,
         reply_to, session_id),
    )  # fmt: skip
    return TurnRecord(
        id=int(cur.lastrowid),
        session_id=session_id,
        device_id=device_id,
        user_id=user_id,
        role=role,
        text=text,
        ts=ts,
        ref=ref,
        action=action,
        degraded=degraded,
    )


def set_action(conn: Any, turn_id: int, action: str) -> None:
    conn.execute("UPDATE turns SET action = ? WHERE id = ?", (action, turn_id))


# Turns that carry the conversation: no noise (IGNORE) and no apologies (degraded replies).
# Working memory, summaries, turn embeddings and retrieval windows all mean these.
CONVERSATION_TURN = "(action IS NULL OR action != 'IGNORE') AND degraded = 0"
# Turns of the owner's sessions: what a lower-trust caller said never reaches the summaries,
# the base memory or the insights that every owner prompt carries (issue 25).
OWNER_TURN = "session_id NOT IN (SELECT id FROM sessions WHERE trust != 'full')"


def recent_context_turns(conn: Any, session_id: str, limit: int) -> list[TurnRecord]:
    """The newest turns that belong in working memory, oldest first."""
    rows = conn.execute(
        f"SELECT * FROM turns WHERE session_id = ? AND {CONVERSATION_TURN}"
        " ORDER BY id DESC LIMIT ?",
        (session_id, limit),
    ).fetchall()
    return [TurnRecord.from_row(r) for r in reversed(rows)]


def get_turn(conn: Any, turn_id: int) -> TurnRecord | None:
    row = conn.execute("SELECT * FROM turns WHERE id = ?", (turn_id,)).fetchone()
    return None if row is None else TurnRecord.from_row(row)
