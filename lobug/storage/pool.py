"""Database threads that serve the turn before background work (issue 13).

The writer is one thread and SQLite one writer: a turn's commit queued behind a burst of job
bookkeeping (claim, embed, extract, complete) waits for all of it. Work submitted while
`BACKGROUND` is set (the job runner sets it for its workers) counts as submitted `MAX_WAIT_S`
later than it was: it waits while newer foreground work is queued, not longer; under constant
load the jobs slow down, they do not stop, and a slow job (a lock held elsewhere) cannot hold
the turn back for more than one item.
"""

from __future__ import annotations

import contextlib
import queue
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
    """A fixed set of threads taking foreground work first (an Executor's `submit` shape).

    Work waits in two deques; a C-level SimpleQueue carries one token per item and is what
    the idle threads block on (cheap to wake, unlike a Python Condition). A thread holding a
    token takes the oldest foreground item unless the oldest background one is overdue."""

    def __init__(self, workers: int, name: str, *, max_wait_s: float | None = None) -> None:
        self._front: deque[_Item] = deque()
        self._back: deque[_Item] = deque()
        self._tokens: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._closed = False
        self._max_wait_s = MAX_WAIT_S if max_wait_s is None else max_wait_s
        self._threads = [
            threading.Thread(target=self._serve, name=f"{name}_{i}", daemon=True)
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Future[Any]:
        if self._closed:
            raise RuntimeError("the database pool is shut down")
        future: Future[Any] = Future()
        lane = self._back if BACKGROUND.get() else self._front
        lane.append((time.monotonic(), future, fn, args))
        self._tokens.put(True)
        return future

    def shutdown(self, wait: bool = True) -> None:
        """Refuse new work; the threads finish what is queued, then exit."""
        self._closed = True
        for _ in self._threads:
            self._tokens.put(False)
        if wait:
            for thread in self._threads:
                if thread is not threading.current_thread():
                    thread.join()

    def _next(self) -> _Item:
        """One item for the token just taken (there is one in a lane for every token).

        Background work counts as submitted `max_wait_s` later than it was: the foreground
        goes first unless a background item waited that much longer than it. Neither starves:
        an item only ever gets older, and a resubmitted one (a retried claim) starts young."""
        back, front = self._back, self._front
        try:
            back_first = bool(back) and (not front or back[0][0] + self._max_wait_s < front[0][0])
        except IndexError:  # emptied meanwhile by another thread
            back_first = False
        lanes = (back, front) if back_first else (front, back)
        while True:  # another thread may take the item we saw: ours is then in a lane too
            for lane in lanes:
                try:
                    return lane.popleft()
                except IndexError:
                    continue

    def _serve(self) -> None:
        while self._tokens.get():
            _run(self._next())
        # Stopped: what was queued before the stop tokens still ran (tokens are FIFO).


def _run(item: _Item) -> None:
    """One item, in a frame of its own: nothing it returned outlives the call in this thread
    (a cursor kept alive in the loop's locals held its statement open, and the connection's
    next COMMIT failed with "SQL statements in progress")."""
    _, future, fn, args = item
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(fn(*args))
    except BaseException as exc:  # noqa: BLE001 - handed to the awaiting caller
        future.set_exception(exc)
