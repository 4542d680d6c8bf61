"""Periodic upkeep with persisted last runs (`periodic_runs`): catch up once, never replay.

A task runs at the household's local times (`Slot`: every day at 03:00, or on Sundays) or every
`interval_s`. It is due when a slot has passed since its recorded last run (or the interval has);
after running, the last run becomes *now*, not the missed slot: a daemon that was off for a
week runs the nightly GC once at start, not seven times. A database that has never recorded the
task starts its clock at the first check (a fresh install has nothing to collect).

The last runs are read once and kept: a check with nothing due touches no database (an SD card
wears with every transaction). A failing task is retried at every check and its last run only
recorded on success; it is logged at the first failure of a streak (with the traceback) and
when it recovers (with the count), not once a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from lobug.storage.database import Database

log = logging.getLogger(__name__)

CHECK_S = 60.0  # how often due tasks are looked for (real time)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SLOT = re.compile(r"^\s*(?:([a-z]+)\s+)?(\d{1,2}):(\d{2})\s*$")


@dataclass(frozen=True)
class Slot:
    """A local time of day (the machine's zone), every day or on one weekday (0 = Monday)."""

    hour: int
    minute: int = 0
    weekday: int | None = None

    @classmethod
    def parse(cls, text: str) -> Slot:
        """ "03:00" (every day) or "sunday 03:00"; ValueError naming what is wrong."""
        found = _SLOT.match(text.lower())
        if found is None:
            raise ValueError(f"{text!r} is not a time like '03:00' or 'sunday 03:00'")
        day, hour, minute = found.group(1), int(found.group(2)), int(found.group(3))
        if hour > 23 or minute > 59:
            raise ValueError(f"{text!r} is not a time of day")
        weekday = None
        if day is not None:
            names = [name for name in WEEKDAYS if name.startswith(day)]
            if len(day) < 3 or len(names) != 1:
                raise ValueError(f"{day!r} in {text!r} is not a weekday")
            weekday = WEEKDAYS.index(names[0])
        return cls(hour, minute, weekday)

    def latest(self, now: float) -> float:
        """The last time this slot came at or before `now` (local wall-clock time, so 03:00
        stays 03:00 across a daylight-saving change)."""
        local = datetime.fromtimestamp(now)
        slot = local.replace(hour=self.hour, minute=self.minute, second=0, microsecond=0)
        if self.weekday is not None:
            slot -= timedelta(days=(slot.weekday() - self.weekday) % 7)
        step = timedelta(days=1 if self.weekday is None else 7)
        while slot.timestamp() > now:
            slot -= step
        return slot.timestamp()


@dataclass(frozen=True)
class Task:
    name: str
    interval_s: float  # 0: never; with `at`, only that it runs
    run: Callable[[], Awaitable[Any]]
    at: Slot | None = None  # run at the first check after each slot instead of every interval_s

    def due(self, previous: float, now: float) -> bool:
        if self.at is not None:
            return previous < self.at.latest(now)
        return now - previous >= self.interval_s


def last_run(conn: Any, name: str) -> float | None:
    row = conn.execute("SELECT last_run FROM periodic_runs WHERE name = ?", (name,)).fetchone()
    return None if row is None else float(row[0])


def last_runs(conn: Any) -> dict[str, float]:
    return {
        name: float(when) for name, when in conn.execute("SELECT name, last_run FROM periodic_runs")
    }


def record_run(conn: Any, name: str, when: float) -> None:
    conn.execute(
        "INSERT INTO periodic_runs (name, last_run) VALUES (?, ?)"
        " ON CONFLICT(name) DO UPDATE SET last_run = excluded.last_run",
        (name, when),
    )


def start_clock(conn: Any, name: str, when: float) -> float | None:
    """The recorded last run, recording `when` first if there is none (returns None then)."""
    found = last_run(conn, name)
    if found is None:
        record_run(conn, name, when)
    return found


class Periodic:
    def __init__(self, db: Database, clock: Callable[[], float], tasks: list[Task]) -> None:
        self.db = db
        self.clock = clock
        self.tasks = [t for t in tasks if t.interval_s > 0]
        self._task: asyncio.Task[None] | None = None
        self._last: dict[str, float] | None = None  # the persisted last runs, read once
        self._failures: dict[str, int] = {}  # the current failure streak of each task

    async def run_due(self) -> list[str]:
        """Run every due task once; returns the names that ran."""
        if self._last is None:
            self._last = await self.db.read(last_runs)
        ran = []
        for task in self.tasks:
            now = self.clock()
            previous = self._last.get(task.name)
            if previous is None:
                # Recorded once, in the writer (another process may have started it meanwhile).
                previous = await self.db.write(start_clock, task.name, now)
                self._last[task.name] = now if previous is None else previous
                continue
            if not task.due(previous, now):
                continue
            try:
                await task.run()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - logged once per streak; tried at the next check
                self._failed(task.name)
                continue
            finished = self.clock()
            await self.db.write(record_run, task.name, finished)
            self._last[task.name] = finished
            self._recovered(task.name)
            ran.append(task.name)
        return ran

    def _failed(self, name: str) -> None:
        streak = self._failures[name] = self._failures.get(name, 0) + 1
        if streak == 1:
            log.exception(
                "periodic %s failed; retrying at every check (logged when it recovers)", name
            )
        else:
            log.debug("periodic %s failed again (%d in a row)", name, streak)

    def _recovered(self, name: str) -> None:
        streak = self._failures.pop(name, 0)
        if streak:
            log.warning("periodic %s ran again after %d failed attempt(s)", name, streak)

    def start(self) -> None:
        if self.tasks and self._task is None:
            self._task = asyncio.create_task(self._loop(), name="lobug-periodic")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_due()
                self._recovered("check")
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - e.g. the DB is busy: look again later
                self._failed("check")
            await asyncio.sleep(CHECK_S)
