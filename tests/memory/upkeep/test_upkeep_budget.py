"""The upkeep jobs' LLM budget is per day of the household's calendar, not UTC's (issue 25,
item 21): the job waits until the household's midnight."""

from __future__ import annotations

from typing import Any

import pytest
from memory_kit import MemoryEnv
from tz_kit import AUCKLAND, machine_zone, utc

from lobug.memory.upkeep.budget import LlmBudget
from lobug.workers.runner import NotReady


async def test_the_budget_renews_at_the_households_midnight(mem: MemoryEnv, clock: Any) -> None:
    llm = LlmBudget(mem.db, clock, per_day=1)
    with machine_zone(AUCKLAND):  # midnight is 11:00 UTC in March
        clock.now = utc(2026, 3, 15, 9)  # 22:00 in Auckland
        await llm.take("consolidation", "default")
        with pytest.raises(NotReady) as waiting:
            await llm.take("consolidation", "default")
        assert waiting.value.retry_in == 2 * 3600.0  # until Auckland's midnight
        await llm.take("consolidation", "guest")  # another user's own budget
        clock.now = utc(2026, 3, 15, 11, 30)  # 00:30 on the 16th: a new day
        await llm.take("consolidation", "default")
        clock.now = utc(2026, 3, 16, 0, 30)  # UTC's new day, Auckland's afternoon: still spent
        with pytest.raises(NotReady):
            await llm.take("consolidation", "default")
