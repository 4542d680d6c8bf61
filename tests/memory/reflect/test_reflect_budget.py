"""The daily LLM budgets (memory/upkeep/budget.py) are per day of the household's calendar, not
UTC's (issue 25, item 21), per user and per kind of work, and spent atomically."""

from __future__ import annotations

import asyncio

from memory_kit import MemoryEnv
from tz_kit import AUCKLAND, machine_zone, utc

from lobug.memory.upkeep import budget


async def test_the_budget_renews_at_the_households_midnight(mem: MemoryEnv) -> None:
    def take(now: float, user: str = "default", name: str = "thinking") -> bool:
        return bool(mem.db.write_sync(lambda c: budget.take(c, name, user, now, 1)))

    with machine_zone(AUCKLAND):  # midnight is 11:00 UTC in March
        evening = utc(2026, 3, 15, 10, 30)  # 23:30 in Auckland
        assert take(evening)
        assert not take(evening + 600)
        assert take(evening + 600, user="guest")  # each user has their own
        assert take(evening + 600, name="upkeep")  # and each kind of work
        assert budget.next_day_in(evening) == 1800.0
        # UTC's midnight is the middle of Auckland's afternoon: the same day, still spent.
        assert take(utc(2026, 3, 15, 23, 30))  # 12:30 on the 16th
        assert not take(utc(2026, 3, 16, 0, 30))
        spent = mem.db.read_sync(lambda c: budget.spent(c, "thinking", "default", utc(2026, 3, 16)))
        assert spent == 1


async def test_two_workers_never_both_take_the_last_call(mem: MemoryEnv, clock: object) -> None:
    now = utc(2026, 3, 15, 9)
    taken = await asyncio.gather(
        *(mem.db.write(lambda c: budget.take(c, "upkeep", "default", now, 3)) for _ in range(8))
    )
    assert sum(taken) == 3
