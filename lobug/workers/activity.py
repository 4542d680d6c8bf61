"""Requests in flight, so that background work gives way to them (issue 13).

The job runner shares the daemon's two cores with the requests a user is waiting for: a job
that starts while a turn is being answered costs that turn its CPU. The API counts what it is
answering (`busy`); before taking a job, a worker waits until nothing is in flight, at most
`max_wait_s`. A device turn every few seconds leaves plenty of quiet for the jobs; under
constant load they slow down (a job per worker per `max_wait_s`), they do not stop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


class Activity:
    def __init__(self) -> None:
        self.in_flight = 0
        self._quiet = asyncio.Event()
        self._quiet.set()

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """Around the handling of one request."""
        self.in_flight += 1
        self._quiet.clear()
        try:
            yield
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._quiet.set()

    async def quiet(self, max_wait_s: float) -> bool:
        """Until no request is in flight, or `max_wait_s` passed; whether it got quiet."""
        if self._quiet.is_set() or max_wait_s <= 0:
            return self._quiet.is_set()
        try:
            await asyncio.wait_for(self._quiet.wait(), max_wait_s)
            return True
        except TimeoutError:
            return False
