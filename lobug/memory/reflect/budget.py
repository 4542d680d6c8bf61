"""The daily budget of background-thinking LLM calls, counted in `meta` (survives restarts).

A day is the household's calendar day (`search.when.day_start`: the machine's local zone)."""

from __future__ import annotations

from datetime import date
from typing import Any

from lobug.memory.search.when import day_start, next_day_start

DAY_S = 86400.0
_PREFIX = "reflect.llm_calls."
_EPOCH = date(1970, 1, 1).toordinal()


def day_of(now: float) -> int:
    """The household's date of `now` as days since 1970-01-01 (UTC's day on a UTC machine)."""
    return day_start(now).toordinal() - _EPOCH


def spent(conn: Any, now: float) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (_key(now),)).fetchone()
    return int(row[0]) if row else 0


def take(conn: Any, now: float, limit: int) -> bool:
    """Spend one call of today's `limit`; False (nothing spent) when the day's budget is gone.
    Call in a write transaction; older days' counts are dropped."""
    if spent(conn, now) >= limit:
        return False
    conn.execute("DELETE FROM meta WHERE key LIKE ? AND key != ?", (_PREFIX + "%", _key(now)))
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE"
        " SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
        (_key(now),),
    )
    return True


def next_day_in(now: float) -> float:
    """Seconds until the budget renews (the household's midnight)."""
    return next_day_start(now) - now


def _key(now: float) -> str:
    return f"{_PREFIX}{day_of(now)}"
