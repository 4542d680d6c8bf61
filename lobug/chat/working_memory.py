"""Working memory: a bounded deque of messages per session, reloaded from `turns` on a miss."""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Any

from lobug.chat.earlier import previous_gist
from lobug.conversation import TurnRecord, recent_context_turns
from lobug.storage.database import Database

Message = dict[str, str]
Entry = tuple[int, float, Message]  # (turn id, when it was said, message)


class Window:
    """One session's messages, whether older ones of the session exist outside it, and the
    gist of the same caller's session before it (`chat.earlier`; None: none)."""

    __slots__ = ("earlier", "entries", "truncated")

    def __init__(self, entries: list[Entry], truncated: bool, earlier: str | None = None) -> None:
        self.entries: deque[Entry] = deque(entries)
        self.truncated = truncated
        self.earlier = earlier


class WorkingMemory:
    """What the LLM sees as the conversation; the database is the truth, this is its cache.
    The window slides in blocks (issue 22: down to half of `size` when full, so the prompt
    cache holds; docs/architecture.md, "The turn"). Sessions are kept in LRU order so a daemon
    that has served many devices stays bounded."""

    def __init__(self, db: Database, size: int = 20, max_sessions: int = 256) -> None:
        self.db = db
        self.size = size
        self.keep = max(1, size // 2)  # what a full window slides down to
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[str, Window] = OrderedDict()

    async def messages(self, session_id: str) -> list[Message]:
        return [message for _, _, message in (await self._window(session_id)).entries]

    async def earlier(self, session_id: str) -> str | None:
        """The previous session's gist, read once with the window: the same for the whole
        session, so the prompt's prefix it sits in stays cached (issue 22)."""
        return (await self._window(session_id)).earlier

    async def _window(self, session_id: str) -> Window:
        window = self._sessions.get(session_id)
        if window is None:
            turns, gist = await self.db.read(self._load, session_id)
            window = self._sessions.get(session_id)  # another request may have loaded it
            if window is None:
                entries = _from_a_user_turn([_message(t) for t in turns])
                window = Window(entries, len(turns) >= self.size, gist)
                self._remember(session_id, window)
        self._sessions.move_to_end(session_id)
        return window

    def _load(self, conn: Any, session_id: str) -> tuple[list[TurnRecord], str | None]:
        return recent_context_turns(conn, session_id, self.size), previous_gist(conn, session_id)

    def window_start(self, session_id: str) -> float | None:
        """When the oldest message held was said, while older ones of the session are out of
        the window; None while it holds the whole session. The prompt's search leaves out
        what the window holds."""
        window = self._sessions.get(session_id)
        if window is None or not window.truncated or not window.entries:
            return None
        return window.entries[0][1]

    async def append(self, turn: TurnRecord) -> None:
        window = self._sessions.get(turn.session_id)
        if window is None:
            await self._window(turn.session_id)  # loads history, which already holds `turn`
            return
        if len(window.entries) >= self.size:
            while len(window.entries) >= self.keep:
                window.entries.popleft()
            # A reply whose question slid out answers nothing the model can see, and at the
            # slide it is prefilled again with the rest: the kept half starts on the user's
            # words (chat templates such as Gemma's also want user first).
            while window.entries and window.entries[0][2]["role"] != "user":
                window.entries.popleft()
            window.truncated = True
        window.entries.append(_message(turn))

    def discard(self, session_id: str, turn_id: int) -> None:
        """Take a turn back out (it turned out to be noise); the row stays in the log."""
        window = self._sessions.get(session_id)
        if window is not None:
            kept = [entry for entry in window.entries if entry[0] != turn_id]
            window.entries = deque(kept)

    def _remember(self, session_id: str, window: Window) -> None:
        self._sessions[session_id] = window
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)


def _from_a_user_turn(entries: list[Entry]) -> list[Entry]:
    """`entries` from the first of the user's words on: a window cut by a limit may open on a
    reply whose question is out of it."""
    for i, (_, _, message) in enumerate(entries):
        if message["role"] == "user":
            return entries[i:]
    return entries


def _message(turn: TurnRecord) -> Entry:
    return turn.id, turn.ts, {"role": turn.role, "content": turn.text}
