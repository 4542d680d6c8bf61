"""The database threads serve the turn before background work, and starve nothing."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from lobug.storage import pool
from lobug.storage.database import Database
from lobug.storage.pool import BACKGROUND, PriorityPool, background


def test_queued_foreground_work_runs_before_queued_background_work() -> None:
    pool = PriorityPool(1, "t", max_wait_s=60)
    gate = threading.Event()
    order: list[str] = []
    blocker = pool.submit(gate.wait)  # holds the only thread while the queue fills
    with background():
        later = [pool.submit(order.append, f"job {i}") for i in range(3)]
    first = pool.submit(order.append, "turn")
    gate.set()
    for future in [blocker, first, *later]:
        future.result(5)
    assert order == ["turn", "job 0", "job 1", "job 2"]
    pool.shutdown()


def test_background_work_past_its_wait_goes_first() -> None:
    pool = PriorityPool(1, "t", max_wait_s=0.05)
    gate = threading.Event()
    order: list[str] = []
    blocker = pool.submit(gate.wait)
    with background():
        job = pool.submit(order.append, "job")
    time.sleep(0.1)
    turn = pool.submit(order.append, "turn")
    gate.set()
    for future in (blocker, job, turn):
        future.result(5)
    assert order == ["job", "turn"]
    pool.shutdown()


def test_errors_reach_the_caller_and_shutdown_drains_the_queue() -> None:
    pool = PriorityPool(2, "t")
    failing = pool.submit(int, "not a number")
    done = [pool.submit(time.sleep, 0.01) for _ in range(6)]
    pool.shutdown(wait=True)
    with pytest.raises(ValueError):
        failing.result(1)
    assert all(f.done() and f.exception() is None for f in done)
    with pytest.raises(RuntimeError):
        pool.submit(print)


async def test_the_job_runners_writes_wait_for_the_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through Database: a background task's write queued first still commits second."""
    monkeypatch.setattr(pool, "MAX_WAIT_S", 60.0)  # a slow machine must not make it overdue
    db = Database(tmp_path / "p.db")
    await db.open()
    await db.write_raw(lambda c: c.execute("CREATE TABLE t (what TEXT)"))
    gate = threading.Event()
    held = asyncio.ensure_future(db.write(lambda c: gate.wait(5)))
    await asyncio.sleep(0.05)  # the writer thread is busy with `held`

    async def job() -> None:
        with background():  # as JobRunner's workers run
            await db.write(lambda c: c.execute("INSERT INTO t VALUES ('job')"))

    queued = asyncio.ensure_future(job())
    await asyncio.sleep(0.05)
    turn = asyncio.ensure_future(db.write(lambda c: c.execute("INSERT INTO t VALUES ('turn')")))
    await asyncio.sleep(0.05)
    gate.set()
    await asyncio.gather(held, queued, turn)
    rows = await db.read(lambda c: [r[0] for r in c.execute("SELECT what FROM t ORDER BY rowid")])
    assert rows == ["turn", "job"]
    assert BACKGROUND.get() is False  # the flag stayed in the job's task
    await db.close()


def test_a_stream_of_background_work_cannot_starve_the_turn() -> None:
    """A waiting turn goes before background work submitted after it (as a job runner
    retrying a claim every time its last one failed would keep doing)."""
    pool = PriorityPool(1, "t", max_wait_s=0.01)
    gate = threading.Event()
    order: list[str] = []
    blocker = pool.submit(gate.wait)
    with background():
        old = pool.submit(order.append, "old job")
    time.sleep(0.05)
    turn = pool.submit(order.append, "turn")
    time.sleep(0.05)
    with background():
        retried = pool.submit(order.append, "retried job")
    time.sleep(0.05)  # both jobs are long past max_wait_s now
    gate.set()
    for future in (blocker, old, turn, retried):
        future.result(5)
    assert order == ["old job", "turn", "retried job"]
    pool.shutdown()


async def test_a_cursor_returned_by_a_write_does_not_hold_the_next_commit(tmp_path: Path) -> None:
    """A write that returns its cursor (an unread PRAGMA row) must not leave the statement
    open on the writer thread: the next transaction's COMMIT would fail."""
    db = Database(tmp_path / "c.db")
    await db.open()
    await db.write_raw(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
    await db.write(lambda c: c.execute("CREATE TABLE t (x INTEGER)"))
    await db.write(lambda c: c.execute("INSERT INTO t VALUES (1)"))
    assert await db.read(lambda c: c.execute("SELECT x FROM t").fetchall()[0][0]) == 1
    await db.close()
