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
        await llm.take("consolidation")
        await llm.spent(1)
        with pytest.raises(NotReady) as waiting:
            await llm.take("consolidation")
        assert waiting.value.retry_in == 2 * 3600.0  # until Auckland's midnight
        clock.now = utc(2026, 3, 15, 11, 30)  # 00:30 on the 16th: a new day
        assert await llm.left() == 1
        await llm.spent(1)
        clock.now = utc(2026, 3, 16, 0, 30)  # UTC's new day, Auckland's afternoon: still spent
        assert await llm.left() == 0
