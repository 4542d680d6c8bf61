"""The previous session's gist: what the same caller and Lo-Bug said last time, for the next.

Seed 004 keeps one working-memory deque whatever the gap; Lo-Bug starts a new session after
`chat.session_idle_minutes` of silence (issue 44, rows 2 and 3). Someone who talked at breakfast
and says "about what I said this morning" at lunch would find the assistant blank but for the
facts extraction kept, so the new session's prompt opens with its predecessor's gist: the
session's record if consolidation wrote one (seed 002: what the user wanted, how it ended, what
is still open), else its last few exchanges, compact and dated ("today at 8:10").

It is read once, when the session's window is loaded (`WorkingMemory`), and stays the same for
the whole session, so the system message it closes breaks the prompt's cached prefix once per
session, at its first turn (issue 22). The previous session is the same principal's (the same
`sessions.owner`, user and trust, issue 38), never another caller's; a stranger's (public trust,
an address that the next stranger may get) carries nothing over.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from lobug.conversation import CONVERSATION_TURN
from lobug.memory.query import cut_to_tokens, tokens_of

GIST_MESSAGES = 6  # the last exchanges shown when the session has no record: three
GIST_TOKENS = 120  # at most about this many tokens (~4 s of prefill on a Pi, once a session)
WORDS_TOKENS = 30  # of the user's words in one message, cut at a word beyond
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")


def previous_gist(conn: Any, session_id: str, *, zone: Any = None) -> str | None:
    """The gist section of the session before `session_id` of the same principal, or None
    (no previous session with a conversation, a stranger's session)."""
    row = conn.execute(
        "SELECT owner, user_id, trust, started_at FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    if row is None or row["trust"] == "public":
        return None
    prev = conn.execute(
        "SELECT s.id, s.last_active FROM sessions s WHERE s.owner = ? AND s.user_id = ?"
        " AND s.trust = ? AND s.id != ? AND s.last_active <= ? AND EXISTS (SELECT 1 FROM"
        f" turns WHERE turns.session_id = s.id AND {CONVERSATION_TURN})"
        " ORDER BY s.last_active DESC LIMIT 1",
        (row["owner"], row["user_id"], row["trust"], session_id, row["started_at"]),
    ).fetchone()
    if prev is None:
        return None
    body = _record(conn, prev["id"]) or _last_exchanges(conn, prev["id"])
    if not body:
        return None
    when = _when(float(prev["last_active"]), float(row["started_at"]), zone)
    return f"[Your previous conversation with the user, {when}]\n{body}"


def _record(conn: Any, session_id: str) -> str | None:
    """Seed 002's record of the session, as a few lines (None: consolidation wrote none)."""
    row = conn.execute(
        "SELECT request, outcome, open_items FROM session_summaries WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    lines = [f"The user wanted: {row['request']}", f"How it ended: {row['outcome']}"]
    try:
        open_items = [str(item) for item in json.loads(row["open_items"] or "[]")]
    except ValueError:
        open_items = []
    if open_items:
        lines.append("Still open: " + "; ".join(open_items))
    return _within(lines)


def _last_exchanges(conn: Any, session_id: str) -> str:
    """The session's last messages: the user's words (cut at WORDS_TOKENS) and the first
    sentence of each reply, the latest kept first when they do not all fit."""
    rows = conn.execute(
        f"SELECT role, text FROM turns WHERE session_id = ? AND {CONVERSATION_TURN}"
        " ORDER BY id DESC LIMIT ?",
        (session_id, GIST_MESSAGES),
    ).fetchall()
    rows = list(reversed(rows))
    while rows and rows[0]["role"] != "user":  # a reply opens nothing
        rows.pop(0)
    lines = [
        f"The user said: {_cut(r['text'])}"
        if r["role"] == "user"
        else f"You said: {_first_sentence(r['text'])}"
        for r in rows
    ]
    return _within(lines)


def _within(lines: list[str]) -> str:
    """The lines in order, the latest kept when they do not all fit in GIST_TOKENS."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines):
        cost = tokens_of(line)
        if kept and used + cost > GIST_TOKENS:
            break
        kept.append(line)
        used += cost
    return "\n".join(reversed(kept))


def _cut(text: str) -> str:
    return cut_to_tokens(" ".join(text.split()), WORDS_TOKENS)


def _first_sentence(reply: str) -> str:
    """A spoken reply leads with its answer; the rest (a suggestion, a question back) is what
    the gist can do without."""
    found = _SENTENCE.match(reply.strip())
    return _cut(found.group(1) if found else reply)


def _when(last: float, now: float, zone: Any) -> str:
    """ "today at 8:10", "yesterday at 19:30" or "on 3 May 2026 at 8:10" (the household's
    calendar: `zone` None is local)."""
    then = datetime.fromtimestamp(last, zone)
    back = (datetime.fromtimestamp(now, zone).date() - then.date()).days
    clock = f"{then.hour}:{then.minute:02d}"
    if back == 0:
        return f"today at {clock}"
    if back == 1:
        return f"yesterday at {clock}"
    return f"on {then.day} {then:%B %Y} at {clock}"
