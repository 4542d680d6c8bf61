"""Database threads that serve the turn before background work (issue 13).

The writer is one thread and SQLite one writer: a turn's commit queued behind a burst of job
bookkeeping (claim, embed, extract, complete) waits for all of it. Work submitted while
`BACKGROUND` is set (the job runner sets it for its workers) waits while foreground work is
queued, but never longer than `max_wait_s`: under constant load the jobs slow down, they do
not stop.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextvars import ContextVar
from typing import Any

BACKGROUND: ContextVar[bool] = ContextVar("lobug_background_work", default=False)
MAX_WAIT_S = 0.25


@contextlib.contextmanager
def background() -> Iterator[None]:
    """Database work in this context (and the tasks it starts) yields to the foreground."""
    token = BACKGROUND.set(True)
    try:
        yield
    finally:
        BACKGROUND.reset(token)


_Item = tuple[float, Future[Any], Callable[..., Any], tuple[Any, ...]]


class PriorityPool:
    """A fixed set of threads taking foreground work first (an Executor's `submit` shape)."""

    def __init__(self, workers: int, name: str, *, max_wait_s: float | None = None) -> None:
        self._front: deque[_Item] = deque()
        self._back: deque[_Item] = deque()
        self._ready = threading.Condition()
        self._closed = False
        self._max_wait_s = MAX_WAIT_S if max_wait_s is None else max_wait_s
        self._threads = [
            threading.Thread(target=self._serve, name=f"{name}_{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("the database pool is shut down")
            lane = self._back if BACKGROUND.get() else self._front
            lane.append((time.monotonic(), future, fn, args))
            self._ready.notify()
        return future

    def shutdown(self, wait: bool = True) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        if wait:
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join()

    def _next(self) -> _Item | None:
        with self._ready:
            while not self._front and not self._back:
                if self._closed:
                    return None
                self._ready.wait()
            overdue = self._back and time.monotonic() - self._back[0][0] > self._max_wait_s
            if self._front and not overdue:
                return self._front.popleft()
            return self._back.popleft()

    def _serve(self) -> None:
        while (item := self._next()) is not None:
            _, future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
                future.set_exception(exc)
            else:
                future.set_result(result)
