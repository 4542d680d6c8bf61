"""When a background-thinking task last ran or gave up, per user, kept in `meta`."""

from __future__ import annotations

from typing import Any

from lobug.storage.vectors import read_meta, write_meta


def last(conn: Any, task: str, user_id: str) -> float | None:
    value = read_meta(conn, _key(task, user_id))
    return None if value is None else float(value)


def put(conn: Any, task: str, user_id: str, when: float) -> None:
    write_meta(conn, _key(task, user_id), repr(when))


def quiet(conn: Any, task: str, user_id: str, now: float, within_s: float) -> bool:
    """Whether the task ran (or gave up) for this user less than `within_s` ago."""
    when = last(conn, task, user_id)
    return when is not None and now - when < within_s


def users(conn: Any) -> list[str]:
    """The users memory holds anything about, or who said anything (hourly: an index scan)."""
    rows = conn.execute(
        "SELECT user_id FROM memories WHERE status = 'active' UNION SELECT user_id FROM turns"
    )
    return sorted(str(r[0]) for r in rows)


def _key(task: str, user_id: str) -> str:
    return f"reflect.{task}.{user_id}"
