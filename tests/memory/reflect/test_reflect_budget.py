"""The background-thinking LLM budget is per day of the household's calendar, not UTC's
(issue 25, item 21)."""

from __future__ import annotations

from memory_kit import MemoryEnv
from tz_kit import AUCKLAND, machine_zone, utc

from lobug.memory.reflect import budget


async def test_the_budget_renews_at_the_households_midnight(mem: MemoryEnv) -> None:
    with machine_zone(AUCKLAND):  # midnight is 11:00 UTC in March
        evening = utc(2026, 3, 15, 10, 30)  # 23:30 in Auckland
        assert await mem.db.write(budget.take, evening, 1)
        assert not await mem.db.write(budget.take, evening + 600, 1)
        assert budget.next_day_in(evening) == 1800.0
        # UTC's midnight is the middle of Auckland's afternoon: the same day, still spent.
        assert await mem.db.write(budget.take, utc(2026, 3, 15, 23, 30), 1)  # 12:30 on the 16th
        assert not await mem.db.write(budget.take, utc(2026, 3, 16, 0, 30), 1)
        assert await mem.db.read(budget.spent, utc(2026, 3, 16, 0, 30)) == 1
