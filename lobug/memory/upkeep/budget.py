"""The upkeep jobs' daily LLM budget: calls counted in `op_events`, a job waits when it is spent."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from lobug.memory.search import when
from lobug.memory.upkeep import events
from lobug.storage.database import Database
from lobug.workers.runner import NotReady

LLM_CALL = "upkeep_llm_call"


class LlmBudget:
    """`per_day` background LLM calls a day (the household's, `when.day_start`) for every
    upkeep job together."""

    def __init__(self, db: Database, clock: Callable[[], float], per_day: int) -> None:
        self.db = db
        self.clock = clock
        self.per_day = per_day

    async def left(self) -> int:
        used = await self.db.read(events.count_since, LLM_CALL, events.day_start(self.clock()))
        return max(0, self.per_day - used)

    async def take(self, what: str) -> None:
        """Before one call: NotReady until tomorrow when today's calls are spent (the job
        waits in the queue; `lobug jobs` shows why)."""
        if await self.left() <= 0:
            now = self.clock()
            wait = when.next_day_start(now) - now
            raise NotReady(
                f"{what}: today's upkeep LLM budget ({self.per_day} calls) is spent;"
                " waiting for tomorrow",
                max(60.0, wait),
            )

    async def spent(self, calls: int, *, ms: float = 0.0, ok: bool = True) -> None:
        await self.db.write(
            partial(events.record, op=LLM_CALL, now=self.clock(), ms=ms, ok=ok, n=calls)
        )
