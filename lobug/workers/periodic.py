"""Periodic upkeep with persisted last runs (`periodic_runs`): catch up once, never replay.

A task is due when `interval_s` has passed since its recorded last run; after running, the
last run becomes *now*, not the missed slot — a daemon that was off for a day runs an hourly
GC once at start, not 24 times. A database that has never recorded the task starts its clock
at the first check (a fresh install has nothing to collect). A failing task is logged and
retried at the next check; its last run is only recorded on success.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from lobug.storage.database import Database

log = logging.getLogger(__name__)

CHECK_S = 60.0  # how often due tasks are looked for (real time)


@dataclass(frozen=True)
class Task:
    name: str
    interval_s: float
    run: Callable[[], Awaitable[Any]]


def last_run(conn: Any, name: str) -> float | None:
    row = conn.execute("SELECT last_run FROM periodic_runs WHERE name = ?", (name,)).fetchone()
    return None if row is None else float(row[0])


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

    async def run_due(self) -> list[str]:
        """Run every due task once; returns the names that ran."""
        ran = []
        for task in self.tasks:
            now = self.clock()
            previous = await self.db.write(start_clock, task.name, now)
            if previous is None or now - previous < task.interval_s:
                continue
            try:
                await task.run()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - logged; tried again at the next check
                log.exception("periodic %s failed; retrying at the next check", task.name)
                continue
            await self.db.write(record_run, task.name, self.clock())
            ran.append(task.name)
        return ran

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
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - e.g. the DB is busy: look again later
                log.warning("periodic check failed", exc_info=True)
            await asyncio.sleep(CHECK_S)
