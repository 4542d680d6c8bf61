"""The LLM lane: the turn first, memory work one call at a time when the conversation is quiet."""

from __future__ import annotations

import asyncio

import pytest

from lobug.llm import lane as lane_module
from lobug.llm.lane import LLMLane, Preempted
from lobug.storage.pool import background


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_background_waits_for_the_quiet_time_after_a_turn() -> None:
    clock = Clock()
    lane = LLMLane(quiet_s=30.0, monotonic=clock)
    async with lane.turn():
        pass
    started: list[str] = []

    async def memory_call() -> str:
        started.append("memory")
        return "done"

    with background():
        task = asyncio.create_task(lane.call(memory_call))
    await settle()
    assert started == []  # the conversation was quiet for 0 s, not 30
    clock.now += 31
    lane._notify()  # a real lane wakes on its own timer; the fake clock needs a nudge
    assert await asyncio.wait_for(task, 1) == "done"
    assert started == ["memory"]


async def test_no_background_call_starts_while_a_turn_is_in_flight() -> None:
    lane = LLMLane(quiet_s=0.0)
    log: list[str] = []

    async def memory_call() -> None:
        log.append("memory")

    async with lane.turn():
        with background():
            task = asyncio.create_task(lane.call(memory_call))
        await asyncio.sleep(0.05)
        assert log == []
        log.append("turn done")
    await asyncio.wait_for(task, 1)
    assert log == ["turn done", "memory"]


async def test_a_turn_cancels_the_memory_call_in_flight() -> None:
    lane = LLMLane(quiet_s=0.0)
    generating = asyncio.Event()
    cancelled = asyncio.Event()

    async def slow_memory_call() -> None:
        generating.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with background():
        task = asyncio.create_task(lane.call(slow_memory_call))
    await asyncio.wait_for(generating.wait(), 1)
    async with lane.turn():
        await asyncio.wait_for(cancelled.wait(), 1)  # the request is aborted at once
    with pytest.raises(Preempted):
        await task
    assert lane.counts["preempted"] == 1


async def test_cancelling_the_caller_is_not_a_preemption() -> None:
    lane = LLMLane(quiet_s=0.0)
    generating = asyncio.Event()

    async def slow_memory_call() -> None:
        generating.set()
        await asyncio.sleep(30)

    with background():
        task = asyncio.create_task(lane.call(slow_memory_call))
    await asyncio.wait_for(generating.wait(), 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert lane.counts["preempted"] == 0


async def test_foreground_waits_for_turns_never_for_memory_work() -> None:
    lane = LLMLane(quiet_s=0.0)
    log: list[str] = []
    generating = asyncio.Event()

    async def memory_call() -> None:
        generating.set()
        await asyncio.sleep(30)

    async def client_call() -> str:
        log.append("foreground")
        return "ok"

    with background():
        memory = asyncio.create_task(lane.call(memory_call))
    await asyncio.wait_for(generating.wait(), 1)
    lane.enter()  # a turn (on another request's task)
    # The memory call was preempted by the turn; a client's call waits for the turn.
    waiting = asyncio.create_task(lane.call(client_call))
    await asyncio.sleep(0.05)
    assert log == []
    lane.leave()
    assert await asyncio.wait_for(waiting, 1) == "ok"
    with pytest.raises(Preempted):
        await memory


async def test_a_foreground_call_preempts_memory_work_and_goes_first() -> None:
    lane = LLMLane(quiet_s=0.0)
    generating = asyncio.Event()

    async def memory_call() -> None:
        generating.set()
        await asyncio.sleep(30)

    async def client_call() -> str:
        return "answered"

    with background():
        memory = asyncio.create_task(lane.call(memory_call))
    await asyncio.wait_for(generating.wait(), 1)
    assert await asyncio.wait_for(lane.call(client_call), 1) == "answered"
    with pytest.raises(Preempted):
        await memory


async def test_background_calls_run_one_at_a_time() -> None:
    lane = LLMLane(quiet_s=0.0)
    running = 0
    most = 0

    async def memory_call() -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.01)
        running -= 1

    with background():
        await asyncio.gather(*(lane.call(memory_call) for _ in range(5)))
    assert most == 1


async def test_a_disabled_lane_lets_every_call_through() -> None:
    lane = LLMLane(quiet_s=3600.0, enabled=False)

    async def memory_call() -> str:
        return "now"

    async with lane.turn():
        with background():
            assert await asyncio.wait_for(lane.call(memory_call), 1) == "now"


async def test_a_strangers_turns_never_postpone_memory_work() -> None:
    """Issue 38, finding 5: a tokenless turn every 29 s (quiet_s 30) kept extraction from ever
    running. A stranger's turn (counts=False) neither holds memory work back nor restarts the
    quiet time; the household's turns still do."""
    clock = Clock()
    lane = LLMLane(quiet_s=30.0, monotonic=clock)
    async with lane.turn():
        pass  # the owner spoke at 1000
    started: list[float] = []

    async def memory_call() -> str:
        started.append(clock.now)
        return "done"

    with background():
        task = asyncio.create_task(lane.call(memory_call))
    for _ in range(3):  # a stranger at +29 s, +58 s, +87 s
        clock.now += 29
        async with lane.turn(counts=False):
            await settle()
        lane._notify()  # a real lane wakes on its own timer; the fake clock needs a nudge
        await settle()
    await asyncio.wait_for(task, 1)
    assert started == [1058.0]  # the first look after the owner's 30 s of quiet


async def test_memory_work_waits_for_quiet_at_most_max_postpone_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The household talking every 20 s for ever (quiet_s 30) still gets its memory work after
    MAX_POSTPONE_S; a turn in flight still holds it back."""
    monkeypatch.setattr(lane_module, "MAX_POSTPONE_S", 100.0)
    clock = Clock()
    lane = LLMLane(quiet_s=30.0, monotonic=clock)
    async with lane.turn():
        pass
    started: list[float] = []

    async def memory_call() -> str:
        started.append(clock.now)
        return "done"

    with background():
        task = asyncio.create_task(lane.call(memory_call))
    await settle()
    for _ in range(8):
        clock.now += 20
        async with lane.turn():
            await settle()
        await asyncio.sleep(0.05)  # the waiter looks again
        if started:
            break
    await asyncio.wait_for(task, 1)
    assert started == [1100.0]
