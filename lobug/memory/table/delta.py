"""Memory delta: what changed in a user's memory since a session last looked (seed 001 §1;
docs/memory-api.md, "The delta").

Two counters, both advanced only inside the caller's write transaction: the user's revision
(`meta` key `delta.rev.<user_id>`; each `bump` adds one and appends a `change_log` row with that
`rev`, the memory, the event, a small `meta` and the session that caused it, `""` for upkeep)
and each session's seen revision (`revisions.rev`). A new session starts at the current revision;
one that causes a change is registered just below it, so it sees its own writes. `take()` returns
what is newer and advances the mark (each change shown once per session); `changes_since()` only
reads. A reader (an API principal) keeps its own mark per session under `reader_key`, so a caller
who may see less cannot empty the owner's delta; client ids cannot contain the separator.
`change_log` keeps the newest `KEEP_ROWS` rows and copies memory text (a purge removes it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lobug.memory.table.rows import meta_add
from lobug.storage.vectors import read_meta

EVENTS = ("created", "updated", "merged", "deleted", "soft_deleted", "restored")
SYMBOLS = {
    "created": "+",
    "updated": "↑",
    "merged": "↔",
    "deleted": "−",
    "soft_deleted": "−",
    "restored": "↺",
}
SYSTEM_SESSION = ""  # change_log.session_id of changes that no session caused
READER_SEP = "\x1f"  # between a session id and a reader in `revisions.session_id`
KEEP_ROWS = 5000
MAX_FETCH = 200
MAX_TEXT_CHARS = 160  # per bullet: the header sits in every prompt
# Changes that are not a categorised memory carry a `kind` in their meta; it labels the bullet.
KIND_LABELS = {"summary": "summary", "base_memory": "long-term memory"}
PRIVATE = "private"  # summaries and the base memory are distilled from every store
_SPACES = re.compile(r"\s+")

Visible = Callable[["Change"], bool]


@dataclass(frozen=True)
class Change:
    rev: int
    memory_id: int | None
    event: str
    session_id: str
    meta: Mapping[str, Any]
    ts: float

    @classmethod
    def from_row(cls, row: Any) -> Change:
        try:
            meta = json.loads(row["meta"] or "{}")
        except ValueError:
            meta = {}
        return cls(
            rev=int(row["rev"]),
            memory_id=row["memory_id"],
            event=row["event"],
            session_id=row["session_id"],
            meta=meta if isinstance(meta, dict) else {},
            ts=float(row["ts"]),
        )

    @property
    def category(self) -> str | None:
        value = self.meta.get("category")
        return str(value) if value else None

    @property
    def store(self) -> str | None:
        value = self.meta.get("store")
        return str(value) if value else None

    @property
    def importance(self) -> float | None:
        value = self.meta.get("importance")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    @property
    def text(self) -> str:
        """What the bullet says: the memory's content (or a summary), on one line, clipped."""
        raw = self.meta.get("summary") or self.meta.get("content")
        if not raw:
            return f"memory #{self.memory_id}" if self.memory_id is not None else "(no text)"
        return _clip(str(raw))

    def summary(self, event: str | None = None) -> str:
        """`+created: [personal] The user's name is Alex (imp=0.8)` (no leading dash)."""
        event = event or self.event
        parts = [f"{SYMBOLS.get(event, '•')}{event}:"]
        label = self.category or KIND_LABELS.get(str(self.meta.get("kind")))
        if label:
            parts.append(f"[{_clip(label, 40)}]")
        parts.append(self.text)
        if event == "created" and self.importance is not None:
            parts.append(f"(imp={self.importance:g})")
        count = self.meta.get("count")
        if event == "merged" and isinstance(count, int) and count > 1:
            parts.append(f"({count} notes)")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """One item of the API's `delta` array."""
        return {
            "rev": self.rev,
            "event": self.event,
            "memory_id": self.memory_id,
            "category": self.category,
            "text": self.text,
            "importance": self.importance,
            "summary": self.summary(),
            "ts": self.ts,
        }


# -- writes (inside the caller's transaction) --------------------------------------------------
def meta(content: str, category: str | None, importance: float, store: str) -> dict[str, Any]:
    """What the header shows of a memory that changed (`bump`'s `meta`)."""
    return {"content": content, "category": category, "importance": importance, "store": store}


def bump(
    conn: Any,
    session_id: str | None,
    memory_id: int | None,
    event: str,
    meta: Mapping[str, Any] | None,
    now: float,
    user_id: str = "default",
) -> int:
    """Record one change; returns the user's new revision. Call in the write's transaction.

    `meta` keys the header uses: content (or summary), category, importance, store, and for
    merges count. `session_id` None means background upkeep that no session caused.
    """
    if event not in EVENTS:
        raise ValueError(f"unknown delta event {event!r} (known: {', '.join(EVENTS)})")
    session = _session_key(session_id)
    # No RETURNING: the stdlib fallback driver may carry an SQLite older than 3.35.
    meta_add(conn, _user_key(user_id))
    rev = current_rev(conn, user_id)
    cur = conn.execute(
        "INSERT INTO change_log (user_id, session_id, rev, memory_id, event, meta, ts)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (user_id, session, rev, memory_id, event, _json(meta), now),
    )
    if session:
        # A session that causes a change also sees it (registered just below it when new).
        conn.execute(
            "INSERT OR IGNORE INTO revisions (session_id, rev) VALUES (?, ?)", (session, rev - 1)
        )
    conn.execute("DELETE FROM change_log WHERE id <= ?", (int(cur.lastrowid) - KEEP_ROWS,))
    return rev


def summary_written(conn: Any, user_id: str, memory_id: int, text: str, now: float) -> int:
    """A cascade summary is news: `+created: [summary] The user and Lo-Bug talked about …`."""
    meta = {"kind": "summary", "content": text, "store": PRIVATE}
    return bump(conn, None, memory_id, "created", meta, now, user_id)


def base_rewritten(conn: Any, user_id: str, content: str, now: float) -> int:
    """A base-memory rewrite is news: `↑updated: [long-term memory] rewritten (…)`."""
    words = len(content.split())
    text = f"The user's long-term profile was rewritten ({words} words)."
    meta = {"kind": "base_memory", "summary": text, "store": PRIVATE}
    return bump(conn, None, None, "updated", meta, now, user_id)


def mark_seen(conn: Any, session_id: str, rev: int, *, reader: str | None = None) -> None:
    """The session (as `reader`, when given) has seen everything up to `rev` (never moves
    backwards)."""
    session = reader_key(session_id, reader)
    conn.execute(
        "INSERT INTO revisions (session_id, rev) VALUES (?, ?) ON CONFLICT(session_id)"
        " DO UPDATE SET rev = MAX(rev, excluded.rev)",
        (session, rev),
    )


# -- reads -------------------------------------------------------------------------------------
def current_rev(conn: Any, user_id: str = "default") -> int:
    return int(read_meta(conn, _user_key(user_id)) or 0)


def seen_rev(
    conn: Any, session_id: str, user_id: str = "default", *, reader: str | None = None
) -> int:
    """The session's seen revision (the reader's, when given; a reader new to the session starts
    at the session's); a session never seen before counts as up to date."""
    keys = [reader_key(session_id, reader)] if reader is not None else []
    for key in (*keys, _session_key(session_id)):
        row = conn.execute("SELECT rev FROM revisions WHERE session_id = ?", (key,)).fetchone()
        if row:
            return int(row[0])
    return current_rev(conn, user_id)


def changes_since(
    conn: Any,
    session_id: str,
    rev: int | None = None,
    *,
    user_id: str = "default",
    visible: Visible | None = None,
) -> list[Change]:
    """The user's changes newer than `rev` (default: the session's seen revision), oldest
    first: at most MAX_FETCH of the newest, those `visible` keeps (e.g. by the caller's stores
    and categories). Read-only: nothing is marked seen."""
    since = seen_rev(conn, session_id, user_id) if rev is None else rev
    if current_rev(conn, user_id) <= since:  # the common case costs one primary-key lookup
        return []
    rows = conn.execute(
        "SELECT rev, memory_id, event, session_id, meta, ts FROM change_log"
        " WHERE user_id = ? AND rev > ? ORDER BY id DESC LIMIT ?",
        (user_id, since, MAX_FETCH),
    ).fetchall()
    changes = [Change.from_row(row) for row in reversed(rows)]
    return [c for c in changes if visible is None or visible(c)]


def take(
    conn: Any,
    session_id: str,
    user_id: str = "default",
    *,
    visible: Visible | None = None,
    reader: str | None = None,
) -> tuple[list[Change], int, int]:
    """`(changes, since_rev, new_rev)` for the session, then mark them seen (write transaction)
    for `reader` only when given (see `reader_key`), else for the session itself."""
    since = seen_rev(conn, session_id, user_id, reader=reader)
    new = current_rev(conn, user_id)
    changes = changes_since(conn, session_id, since, user_id=user_id, visible=visible)
    mark_seen(conn, session_id, new, reader=reader)
    return changes, since, new


def render(changes: Iterable[Change], since_rev: int, *, max_bullets: int = 3) -> str | None:
    """`Memory updates since rev X:` and at most `max_bullets` bullets, newest changes kept.

    Several changes to one memory read as one bullet: its latest state, still "created" when it
    was created in the window, and nothing at all when it was created and deleted in it.
    """
    items = _coalesce(list(changes))
    if not items or max_bullets < 1:
        return None
    shown = items[-max_bullets:]
    lines = [f"Memory updates since rev {since_rev}:"]
    lines += [f"- {change.summary(event)}" for change, event in shown]
    if len(items) > len(shown):
        lines.append(f"(+{len(items) - len(shown)} more)")
    return "\n".join(lines)


def _coalesce(changes: list[Change]) -> list[tuple[Change, str]]:
    created = {c.memory_id for c in changes if c.event == "created" and c.memory_id is not None}
    latest: dict[int, Change] = {}
    for change in changes:
        if change.memory_id is not None:
            latest[change.memory_id] = change
    result: list[tuple[Change, str]] = []
    for change in changes:
        if change.memory_id is None:
            result.append((change, change.event))
            continue
        if latest[change.memory_id] is not change:
            continue
        event = change.event
        if change.memory_id in created:
            if event in ("deleted", "soft_deleted"):
                continue  # born and gone within the window: not news
            if event in ("updated", "merged", "restored"):
                event = "created"
        result.append((change, event))
    return result


def _clip(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    # One line, bounded: memory text must not break the prompt's structure.
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _json(meta: Mapping[str, Any] | None) -> str:
    return json.dumps(dict(meta or {}), ensure_ascii=False, default=str)


def _user_key(user_id: str) -> str:
    return f"delta.rev.{user_id}"


def reader_key(session_id: str, reader: str | None) -> str:
    """The `revisions` key of a session as seen by one reader (None: the session itself)."""
    session = _session_key(session_id)
    if reader is None:
        return session
    if not isinstance(reader, str) or not reader:
        raise TypeError("reader must be a non-empty string")
    return f"{session}{READER_SEP}{reader}"


def _session_key(session_id: str | None) -> str:
    if session_id is None:
        return SYSTEM_SESSION
    if not isinstance(session_id, str):
        raise TypeError(f"session_id must be a string, got {type(session_id).__name__}")
    return session_id
