"""Periodic tasks on the household's clock: local-time slots, one catch-up after downtime, no
database work on a check with nothing due, one log line per failure streak."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from tz_kit import AUCKLAND, machine_zone

from lobug.storage.database import Database
from lobug.storage.migrations import migrate
from lobug.workers.periodic import Periodic, Slot, Task


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def at(self, *local: int) -> None:
        """Set the clock to a wall-clock time of the machine's zone."""
        self.now = datetime(*local).timestamp()  # type: ignore[arg-type]


@pytest.fixture
async def db(tmp_path: Path) -> Any:
    database = Database(tmp_path / "p.db")
    await database.open()
    await database.write_raw(migrate)
    yield database
    await database.close()


@pytest.fixture
def zone() -> Any:
    with machine_zone(AUCKLAND):  # midnight is 11:00 or 12:00 UTC: a UTC clock would be wrong
        yield


def test_slots_are_local_wall_clock_times(zone: None) -> None:
    nightly, sunday = Slot.parse("03:00"), Slot.parse("Sunday 03:00")
    assert sunday == Slot(3, 0, 6) and Slot.parse("sun 4:30") == Slot(4, 30, 6)
    at = datetime(2026, 3, 4, 2, 59).timestamp()  # a Wednesday, a minute before 03:00
    assert nightly.latest(at) == datetime(2026, 3, 3, 3, 0).timestamp()
    assert nightly.latest(at + 60) == at + 60
    assert sunday.latest(at) == datetime(2026, 3, 1, 3, 0).timestamp()  # 1 March: a Sunday
    assert (
        sunday.latest(datetime(2026, 3, 8, 3, 0).timestamp())
        == datetime(2026, 3, 8, 3, 0).timestamp()
    )
    for bad in ("3am", "25:00", "someday 03:00", "s 03:00"):
        with pytest.raises(ValueError):
            Slot.parse(bad)


async def test_the_nightly_task_runs_at_03_00_and_once_after_downtime(
    db: Database, zone: None
) -> None:
    clock, runs = Clock(), []

    async def gc() -> None:
        runs.append(datetime.fromtimestamp(clock()).strftime("%d %H:%M"))

    def daemon() -> Periodic:  # a fresh one per start: the last runs are in the database
        return Periodic(db, clock, [Task("gc", 3600, gc, at=Slot.parse("03:00"))])

    periodic = daemon()
    clock.at(2026, 3, 2, 10, 0)
    assert await periodic.run_due() == []  # a fresh install: the clock starts
    for hour, minute in ((14, 0), (23, 59)):
        clock.at(2026, 3, 2, hour, minute)
        assert await periodic.run_due() == []  # hourly checks, but not an hour's interval
    clock.at(2026, 3, 3, 2, 59)
    assert await periodic.run_due() == []
    clock.at(2026, 3, 3, 3, 0)
    assert await periodic.run_due() == ["gc"]
    clock.at(2026, 3, 3, 4, 0)
    assert await periodic.run_due() == []
    clock.at(2026, 3, 9, 18, 30)  # off for six nights: once at start …
    restarted = daemon()
    assert await restarted.run_due() == ["gc"]
    clock.at(2026, 3, 10, 2, 0)
    assert await restarted.run_due() == []  # … then at 03:00 again
    clock.at(2026, 3, 10, 3, 1)
    assert await restarted.run_due() == ["gc"]
    assert runs == ["03 03:00", "09 18:30", "10 03:01"]


async def test_a_check_with_nothing_due_opens_no_transaction(db: Database) -> None:
    clock = Clock()
    clock.now = 1_750_000_000.0
    calls: list[str] = []
    write, read = db.write, db.read

    async def counted_write(fn: Any, *args: Any) -> Any:
        calls.append("write")
        return await write(fn, *args)

    async def counted_read(fn: Any, *args: Any) -> Any:
        calls.append("read")
        return await read(fn, *args)

    db.write, db.read = counted_write, counted_read  # type: ignore[method-assign]

    async def nothing() -> None:
        pass

    tasks = [Task(name, 86400, nothing) for name in ("gc", "consolidate", "enrich", "think")]
    periodic = Periodic(db, clock, tasks)
    await periodic.run_due()  # the clocks start: read once, recorded once each
    assert calls.count("write") == 4
    calls.clear()
    for _ in range(60):  # an hour of checks
        clock.now += 60
        assert await periodic.run_due() == []
    assert calls == []
    clock.now += 86400
    assert await periodic.run_due() == ["gc", "consolidate", "enrich", "think"]
    assert calls == ["write"] * 4  # the last runs recorded


async def test_a_failing_task_is_logged_once_per_streak_with_a_count(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    clock.now = 1_750_000_000.0
    broken = True

    async def flaky() -> None:
        if broken:
            raise RuntimeError("disk on fire")

    periodic = Periodic(db, clock, [Task("gc", 60, flaky)])
    await periodic.run_due()
    caplog.set_level(logging.INFO, logger="lobug.workers.periodic")
    for _ in range(30):  # half an hour of failing checks
        clock.now += 60
        assert await periodic.run_due() == []
    logged = [r for r in caplog.records if r.name == "lobug.workers.periodic"]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert "disk on fire" in caplog.text
    broken = False
    clock.now += 60
    assert await periodic.run_due() == ["gc"]
    logged = [r for r in caplog.records if r.name == "lobug.workers.periodic"]
    assert len(logged) == 2 and "after 30 failed" in logged[1].getMessage()
    assert await db.read(lambda c: c.execute("SELECT last_run FROM periodic_runs").fetchone()[0])
