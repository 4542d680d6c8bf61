"""Turn and session rows: the conversation log every other part reads from."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

from lobug.access import OWNER

# `turns.ref` of a user turn that came from /chat/audio. Device turns have no caller id of their
# own, so `ref` (free text, an importer's id for /v1/turns) says how the words arrived: spoken
# profile fields need the user's yes before they are kept (seed 001 §10, memory.write.consent).
VOICE_REF = "voice"
SESSION_KEY = "session_key"  # meta: the secret behind `scoped_session_id`


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
    owner: str = OWNER,
) -> str:
    """The given session, or the device's current one, or a new one after an idle gap.

    A session belongs to the principal that opened it (issue 38; `access.Principal.owner`:
    the household's owner, one bearer token, one paired device, one stranger's address), for
    one user and at one trust: no other caller joins it, by device or by name, so each sees
    only turns it took part in. A name another caller holds stands for the caller's own
    session of that name (`scoped_session_id`, keyed by a secret of this database, so nobody
    can claim it in advance): a client that keeps sending the name it chose, or the id it was
    given, keeps one conversation, and no caller can take a name from another."""
    if session_id is None:
        row = conn.execute(
            "SELECT id, last_active FROM sessions WHERE device_id = ? AND owner = ?"
            " AND user_id = ? AND trust = ? ORDER BY last_active DESC LIMIT 1",
            (device_id, owner, user_id, trust),
        ).fetchone()
        if row is not None and now - row["last_active"] <= idle_s:
            session_id = row["id"]
        else:
            session_id = new_session_id()
    else:
        session_id = named_session(conn, session_id, owner=owner, user_id=user_id, trust=trust)
    conn.execute(
        "INSERT INTO sessions (id, user_id, device_id, started_at, last_active, trust, owner)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET last_active = MAX(last_active, excluded.last_active)",
        (session_id, user_id, device_id, now, now, trust, owner),
    )
    return session_id


def named_session(conn: Any, session_id: str, *, owner: str, user_id: str, trust: str) -> str:
    """The session a caller means by a name (`resolve_session`), which may not exist yet."""
    if _may_join(conn, session_id, owner, user_id, trust):
        return session_id
    scoped = scoped_session_id(conn, session_id, owner, user_id, trust)
    if _may_join(conn, scoped, owner, user_id, trust):
        return scoped
    return new_session_id()  # only a forged or colliding id: a fresh session


def scoped_session_id(conn: Any, session_id: str, owner: str, user_id: str, trust: str) -> str:
    """The id of a caller's own session of a name another caller holds: a keyed hash, so it
    looks like any new session's id and cannot be worked out, or taken first, by anyone else."""
    key = _session_key(conn)
    message = "\0".join((owner, user_id, trust, session_id)).encode("utf-8", "surrogatepass")
    return "s-" + hmac.new(key, message, hashlib.sha256).hexdigest()[:16]


def _may_join(conn: Any, session_id: str, owner: str, user_id: str, trust: str) -> bool:
    row = conn.execute(
        "SELECT owner, user_id, trust FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return row is None or tuple(row) == (owner, user_id, trust)


def _session_key(conn: Any) -> bytes:
    """This database's secret for scoped session ids, made on first use (in the caller's
    write transaction); it never leaves the file."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (SESSION_KEY,)).fetchone()
    if row is not None:
        return bytes.fromhex(row[0])
    key = secrets.token_bytes(32)
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (SESSION_KEY, key.hex()))
    return key


def session_trust(conn: Any, session_id: str) -> str:
    """The trust of the caller whose session it is ("full" for one not recorded)."""
    row = conn.execute("SELECT trust FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return "full" if row is None else str(row[0])


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
