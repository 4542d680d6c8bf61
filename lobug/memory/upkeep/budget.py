"""Daily budgets of background LLM calls, per user and per kind of work, counted in `meta`.

One atomic check-and-spend (`take`, in the writer's transaction): two workers can never both
take the last call. A day is the household's calendar day (`search.when.day_start`: the
machine's local zone); older days' counts are dropped as a new day's is written. Background
thinking (reflection, insights: `reflection.llm_calls_per_day`, reflect/jobs.py) and upkeep
(consolidation: `upkeep.llm_calls_per_day`, `LlmBudget`) each have their own, per user (seed
001 §4: per tenant). The upkeep jobs' calls are also counted in `op_events` with their
latency, for `/v1/stats`."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date
from functools import partial
from typing import Any

from lobug.memory.search.when import day_start, next_day_start
from lobug.memory.table.rows import meta_add
from lobug.memory.upkeep import events
from lobug.storage.database import Database
from lobug.storage.vectors import read_meta
from lobug.workers.runner import NotReady

LLM_CALL = "upkeep_llm_call"
BUDGET = "upkeep"  # upkeep.llm_calls_per_day, per user
_EPOCH = date(1970, 1, 1).toordinal()
DAY_S = 86400.0


def take(conn: Any, name: str, user_id: str, now: float, limit: int, amount: int = 1) -> bool:
    """Spend `amount` of today's `limit` of `name` for `user_id` (calls, or bytes); False
    (nothing spent) when they are gone. Call in a write transaction."""
    if spent(conn, name, user_id, now) >= limit:
        return False
    spend(conn, name, user_id, now, amount)
    return True


def spend(conn: Any, name: str, user_id: str, now: float, amount: int) -> None:
    """Count `amount` into today's `name`, whatever is left (what was already accepted)."""
    prefix, key = _prefix(name, user_id), _key(_prefix(name, user_id), now)
    conn.execute("DELETE FROM meta WHERE key LIKE ? AND key != ?", (prefix + "%", key))
    meta_add(conn, key, amount)


def spent(conn: Any, name: str, user_id: str, now: float) -> int:
    return int(read_meta(conn, _key(_prefix(name, user_id), now)) or 0)


def next_day_in(now: float) -> float:
    """Seconds until the budgets renew (the household's midnight)."""
    return next_day_start(now) - now


def _prefix(name: str, user_id: str) -> str:
    return f"budget.{name}.{user_id}."


def _key(prefix: str, now: float) -> str:
    return f"{prefix}{day_start(now).toordinal() - _EPOCH}"


class LlmBudget:
    """`per_day` upkeep LLM calls a day (the household's, `when.day_start`) for each user."""

    def __init__(self, db: Database, clock: Callable[[], float], per_day: int) -> None:
        self.db = db
        self.clock = clock
        self.per_day = per_day

    async def take(self, what: str, user_id: str) -> None:
        """Before one call: spend it, or NotReady until tomorrow when today's calls are spent
        (the job waits in the queue; `lobug jobs` shows why). A reminder's retry inside the
        call is counted in `op_events`, not spent again."""
        now = self.clock()
        if not await self.db.write(take, BUDGET, user_id, now, self.per_day):
            raise NotReady(
                f"{what}: today's upkeep LLM budget ({self.per_day} calls) is spent;"
                " waiting for tomorrow",
                max(60.0, next_day_in(now)),
            )

    async def record(self, calls: int, started: float, *, ok: bool = True) -> None:
        """The calls made since `started` (`time.perf_counter`; a reminder's retry is a
        second), for `/v1/stats`."""
        ms = (time.perf_counter() - started) * 1000.0
        await self.db.write(
            partial(events.record, op=LLM_CALL, now=self.clock(), ms=ms, ok=ok, n=calls)
        )
