"""One LLM lane: the user's turn first, memory work only while the conversation is quiet.

On a Pi the local model serves one request at a time, and a memory call between two turns
both delays the next reply and evicts the conversation's prompt cache. So every model call of
the daemon passes here (`LLMLane.call`) as a turn (`LLMLane.turn()`), foreground work (a
client waits on it) or background work (`lobug.storage.pool.background()`); who runs when:
docs/architecture.md, "The LLM lane"."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from typing import TypeVar

from lobug.storage.pool import BACKGROUND

T = TypeVar("T")

IN_TURN: ContextVar[bool] = ContextVar("lobug_llm_in_turn", default=False)
# Memory work waits for `quiet_s` without a turn, but never longer than this in all: a household
# that talks every few seconds all evening still gets its memory (only a turn in flight holds
# it back then).
MAX_POSTPONE_S = 600.0


class Preempted(BaseException):
    """A background model call was cancelled because a turn (or a client) needs the model.

    A BaseException, like cancellation: no `except Exception` on the way may turn it into a
    fallback (e.g. heuristic facts); the job runner's memory handlers put the job back as not
    ready, its attempt unspent (lobug.memory.upkeep.events.timed)."""


class TurnPreempted(Exception):
    """A turn's model call was cut off because a turn of higher trust needed the model: on a
    one-slot server the owner never waits behind a stranger's long answer (issue 38). The
    client turns it into LLMUnavailable: the cut turn is answered as the model being busy."""


class Hold:
    """A turn's model call in flight, with the trust rank of the turn (TRUST_LEVELS: higher
    is more trusted); `cut` once a turn of higher rank pre-empted it."""

    def __init__(self, rank: int, task: asyncio.Future[object] | None = None) -> None:
        self.rank = rank
        self.task = task  # a plain call is cancelled; a stream reads `cut` at each piece
        self.cut = False

    def preempt(self) -> None:
        self.cut = True
        if self.task is not None and not self.task.done():
            self.task.cancel()


class LLMLane:
    def __init__(
        self,
        *,
        quiet_s: float = 30.0,
        enabled: bool = True,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet_s = quiet_s
        self.enabled = enabled
        self._monotonic = monotonic
        self._turns = 0
        self._foreground = 0
        self._last_turn = -math.inf
        self._slot = asyncio.Lock()  # one background call at a time
        self._changed = asyncio.Event()
        self._memory_call: asyncio.Future[object] | None = None
        self._holds: set[Hold] = set()  # turns' model calls in flight
        self._waiting_since: float | None = None  # memory work first found the lane closed
        # Read by /metrics: preempted memory calls, background calls made.
        self.counts: Counter[str] = Counter()

    # -- the turn ---------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def turn(self, *, counts: bool = True) -> AsyncIterator[None]:
        """A turn is in flight: its model calls go first and memory work waits for it.

        `counts` False: a stranger's turn, which nothing is remembered of; it neither holds
        memory work back nor restarts the quiet time (issue 38: one tokenless turn every 29 s
        kept extraction from ever running)."""
        token = IN_TURN.set(True)
        self.enter(counts=counts)
        try:
            yield
        finally:
            self.leave(counts=counts)
            IN_TURN.reset(token)

    def enter(self, *, counts: bool = True) -> None:
        """A turn begins (a streamed one leaves when its stream is committed)."""
        if not counts:
            return
        self._turns += 1
        self._last_turn = self._monotonic()
        self._preempt()

    def leave(self, *, counts: bool = True) -> None:
        if not counts:
            return
        self._turns -= 1
        self._last_turn = self._monotonic()
        self._notify()

    def quiet_for(self) -> float:
        """Seconds since the last turn ended (0 while one is in flight)."""
        if self._turns:
            return 0.0
        return max(0.0, self._monotonic() - self._last_turn)

    # -- turns of different trust ----------------------------------------------------------------
    def hold(self, rank: int, task: asyncio.Future[object] | None = None) -> Hold:
        """A turn's model call begins: the calls of turns of lower rank in flight are cut off
        (the server answers one at a time: the owner's turn must not wait behind a stranger's
        long answer). Give it back with `release`."""
        for other in list(self._holds):
            if other.rank < rank:
                other.preempt()
                self._holds.discard(other)
                self.counts["turns_preempted"] += 1
        held = Hold(rank, task)
        self._holds.add(held)
        return held

    def release(self, held: Hold) -> None:
        self._holds.discard(held)

    # -- every model call -------------------------------------------------------------------------
    async def call(self, make: Callable[[], Awaitable[T]], *, rank: int | None = None) -> T:
        """Run one model call (`make()` starts it) in its place in line; `rank`: the trust rank
        of the turn it serves (lower ranks give way to it), None outside a turn."""
        if not self.enabled:
            return await make()
        if BACKGROUND.get():  # the job runner's workers, even if a turn's context started them
            return await self._background(make)
        if rank is not None:
            return await self._turn_call(make, rank)
        if IN_TURN.get():
            return await make()
        return await self._foreground_call(make)

    async def _turn_call(self, make: Callable[[], Awaitable[T]], rank: int) -> T:
        task: asyncio.Future[T] = asyncio.ensure_future(make())
        held = self.hold(rank, task)  # type: ignore[arg-type]
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if held.cut and (current is None or not current.cancelling()):
                raise TurnPreempted("a turn of higher trust needed the model") from None
            raise
        finally:
            self.release(held)

    async def opened(self) -> None:
        """Background work: wait until a memory call would be let through (a job reads what
        the conversation left for it then, e.g. the exchanges an extraction takes along). No
        wait elsewhere, nor with the lane off; the call itself still takes its place in line."""
        if self.enabled and BACKGROUND.get():
            await self._until(self._open)

    async def _foreground_call(self, make: Callable[[], Awaitable[T]]) -> T:
        self._foreground += 1
        try:
            self._preempt()
            await self._until(lambda: self._turns == 0)
            return await make()
        finally:
            self._foreground -= 1
            self._notify()

    async def _background(self, make: Callable[[], Awaitable[T]]) -> T:
        async with self._slot:
            await self._until(self._open)
            # No await between the check above and registering the call: a turn that starts
            # from here on finds it in `_memory_call` and cancels it.
            task: asyncio.Future[T] = asyncio.ensure_future(make())
            self._memory_call = task  # type: ignore[assignment]
            self.counts["background_calls"] += 1
            try:
                return await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if task.cancelled() and (current is None or not current.cancelling()):
                    self.counts["preempted"] += 1
                    raise Preempted("a turn needed the model") from None
                raise
            finally:
                self._memory_call = None

    def _open(self) -> bool | float:
        """True when background work may run; else how long until it may (inf: wait for a
        change), for `_until`. It waits for quiet at most MAX_POSTPONE_S since it first
        waited, then only for the turns in flight."""
        now = self._monotonic()
        since = now if self._waiting_since is None else self._waiting_since
        self._waiting_since = since
        if self._turns or self._foreground:
            return math.inf
        left = min(self._last_turn + self.quiet_s, since + MAX_POSTPONE_S) - now
        if left > 0:
            return left
        self._waiting_since = None  # open: memory work gets its turn
        return True

    async def _until(self, ready: Callable[[], bool | float]) -> None:
        while True:
            changed = self._changed
            state = ready()
            if state is True:
                return
            wait = None if state is False or state == math.inf else float(state)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), wait)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _preempt(self) -> None:
        call = self._memory_call
        if call is not None and not call.done():
            call.cancel()
