"""The durable job queue on a real SQLite file: retries, backoff, failure, recovery."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lobug.config import WorkerConfig
from lobug.storage.database import Database
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect
from lobug.workers import queue
from lobug.workers import runner as runner_module
from lobug.workers.queue import Job
from lobug.workers.runner import JobRunner, NotReady, PermanentFailure, RetryLater


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def fast_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "POLL_INTERVAL_S", 0.02)


@pytest.fixture
async def db(tmp_path: Path) -> Any:
    database = Database(tmp_path / "q.db")
    await database.open()
    await database.write_raw(migrate)
    yield database
    await database.close()


def config(**kw: Any) -> WorkerConfig:
    return WorkerConfig(**{"concurrency": 2, "backoff_base_s": 10.0, **kw})


async def state_of(db: Database, job_id: int) -> Any:
    return await db.read(
        lambda c: c.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
    )


async def test_enqueue_dedupe_and_counts(db: Database) -> None:
    a = await db.write(lambda c: queue.enqueue(c, "embed", {"x": 1}, now=1.0, dedupe_key="k"))
    b = await db.write(lambda c: queue.enqueue(c, "embed", {"x": 2}, now=2.0, dedupe_key="k"))
    c_ = await db.write(lambda c: queue.enqueue(c, "embed", {"x": 3}, now=3.0))
    assert a == b != c_
    assert await db.read(queue.counts) == {"pending": 2, "running": 0, "failed": 0}


def test_a_raced_enqueue_returns_the_live_job_never_a_finished_one(tmp_path: Path) -> None:
    """Two processes enqueue the same key at once: the loser's insert hits the unique index
    and it must get the live job's id, not the id of last week's finished job with that key."""
    path = tmp_path / "race.db"
    mine, theirs = connect(path), connect(path)
    migrate(mine)
    finished = queue.enqueue(mine, "consolidate", {}, now=1.0, dedupe_key="consolidate:default")
    queue.complete(mine, finished, now=2.0)

    class Racing:
        """`mine`, with the other process's enqueue landing right after our look-up."""

        def __init__(self) -> None:
            self.raced: int | None = None

        def execute(self, sql: str, params: Any = ()) -> Any:
            cur = mine.execute(sql, params)
            if self.raced is None and sql.startswith("SELECT id FROM jobs WHERE dedupe_key"):
                # Our look-up saw no live job; then the other process's enqueue commits.
                self.raced = queue.enqueue(
                    theirs, "consolidate", {}, now=3.0, dedupe_key="consolidate:default"
                )
            return cur

    racing = Racing()
    got = queue.enqueue(racing, "consolidate", {}, now=3.0, dedupe_key="consolidate:default")
    assert racing.raced is not None and racing.raced != finished
    assert got == racing.raced
    mine.close()
    theirs.close()


async def test_retry_backoff_then_success(db: Database) -> None:
    clock = Clock()
    calls: list[int] = []

    async def flaky(job: Job) -> None:
        calls.append(job.attempts)
        if len(calls) < 3:
            raise RetryLater("ollama down")

    runner = JobRunner(db, config(), clock, {"extract": flaky})
    job_id = await db.write(lambda c: queue.enqueue(c, "extract", {}, now=clock()))
    assert await runner.run_until_idle() == 1
    row = await state_of(db, job_id)
    assert row["state"] == "pending" and row["attempts"] == 1
    assert 8.0 <= row["run_after"] - clock() <= 12.0  # base 10 s ± jitter
    assert await runner.run_until_idle() == 0  # not due yet
    clock.now += 13
    await runner.run_until_idle()
    row = await state_of(db, job_id)
    assert 16.0 <= row["run_after"] - clock() <= 24.0  # doubled
    clock.now += 25
    await runner.run_until_idle()
    row = await state_of(db, job_id)
    assert row["state"] == "done" and calls == [1, 2, 3]


async def test_out_of_attempts_is_failed_with_error_kept(db: Database) -> None:
    clock = Clock()

    async def broken(job: Job) -> None:
        raise RuntimeError("bad model output")

    runner = JobRunner(db, config(backoff_base_s=0.0, max_attempts=3), clock, {"extract": broken})
    job_id = await db.write(lambda c: queue.enqueue(c, "extract", {}, now=clock()))
    for _ in range(3):
        await runner.run_until_idle()
    row = await state_of(db, job_id)
    assert row["state"] == "failed" and row["attempts"] == 3
    assert "bad model output" in row["last_error"]
    assert await db.write(lambda c: queue.retry(c, now=clock())) == 1
    assert (await state_of(db, job_id))["state"] == "pending"


async def test_permanent_failure_and_not_ready(db: Database) -> None:
    clock = Clock()

    async def permanent(job: Job) -> None:
        raise PermanentFailure("payload refers to a purged turn")

    async def waiting(job: Job) -> None:
        raise NotReady("embedding not there yet", retry_in=5)

    runner = JobRunner(db, config(), clock, {"p": permanent, "w": waiting})
    p = await db.write(lambda c: queue.enqueue(c, "p", {}, now=clock()))
    w = await db.write(lambda c: queue.enqueue(c, "w", {}, now=clock()))
    await runner.run_until_idle()
    assert (await state_of(db, p))["state"] == "failed"
    row = await state_of(db, w)
    assert row["state"] == "pending" and row["attempts"] == 0 and row["run_after"] == clock() + 5


async def test_running_jobs_are_recovered_at_start(db: Database) -> None:
    clock = Clock()
    job_id = await db.write(lambda c: queue.enqueue(c, "embed", {}, now=clock()))
    claimed = await db.write(lambda c: queue.claim(c, now=clock()))
    assert claimed is not None and claimed.id == job_id  # …and then the process died
    done = asyncio.Event()

    async def handler(job: Job) -> None:
        done.set()

    runner = JobRunner(db, config(), clock, {"embed": handler})
    await runner.start()
    await asyncio.wait_for(done.wait(), 5)
    await runner.stop()
    assert (await state_of(db, job_id))["state"] == "done"


async def test_workers_are_bounded_and_woken(db: Database) -> None:
    clock = Clock()
    active = 0
    peak = 0
    finished = asyncio.Event()
    total = 6
    count = 0

    async def slow(job: Job) -> None:
        nonlocal active, peak, count
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.05)
        active -= 1
        count += 1
        if count == total:
            finished.set()

    runner = JobRunner(db, config(concurrency=2), clock, {"s": slow})
    await runner.start()
    for _ in range(total):
        await db.write(lambda c: queue.enqueue(c, "s", {}, now=clock()))
        runner.wake()
    await asyncio.wait_for(finished.wait(), 5)
    await runner.stop()
    assert peak == 2


async def test_outages_never_exhaust_attempts(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(runner_module, "BACKOFF_MAX_S", 5.0)

    async def down(job: Job) -> None:
        raise RetryLater("ollama down")

    cfg = config(backoff_base_s=1.0, max_attempts=2)
    runner = JobRunner(db, cfg, clock, {"extract": down})
    job_id = await db.write(lambda c: queue.enqueue(c, "extract", {}, now=clock()))
    for _ in range(6):
        await runner.run_until_idle()
        clock.now += 10
    row = await state_of(db, job_id)
    assert row["state"] == "pending" and row["attempts"] == 6
    assert row["run_after"] - (clock.now - 10) <= 6.0  # capped backoff


async def test_a_job_the_process_keeps_dying_on_is_retired(db: Database) -> None:
    """Each start after a death counts it (the attempt stays spent); the MAX_INTERRUPTIONS-th
    retires the job as failed instead of running it again, and `retry` gives it a fresh start."""
    clock = Clock()
    job_id = await db.write(lambda c: queue.enqueue(c, "extract", {}, now=clock()))
    for death in range(1, queue.MAX_INTERRUPTIONS + 1):
        claimed = await db.write(lambda c: queue.claim(c, now=clock()))
        assert claimed is not None and claimed.id == job_id  # …and the process died
        requeued, retired = await db.write(lambda c: queue.recover(c, now=clock()))
        row = await state_of(db, job_id)
        assert row["interrupted"] == death and row["attempts"] == death
        if death < queue.MAX_INTERRUPTIONS:
            assert (requeued, retired, row["state"]) == (1, 0, "pending")
    assert (requeued, retired, row["state"]) == (0, 1, "failed")
    assert "the process died while this job ran, 3 times" in row["last_error"]
    assert await db.write(lambda c: queue.claim(c, now=clock())) is None
    assert await db.write(lambda c: queue.retry(c, now=clock())) == 1
    row = await state_of(db, job_id)
    assert (row["state"], row["attempts"], row["interrupted"]) == ("pending", 0, 0)


async def test_a_clean_stop_puts_a_running_job_back_without_counting_it(db: Database) -> None:
    clock = Clock()
    job_id = await db.write(lambda c: queue.enqueue(c, "embed", {}, now=clock()))
    started = asyncio.Event()

    async def handler(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    runner = JobRunner(db, config(), clock, {"embed": handler})
    await runner.start()
    await asyncio.wait_for(started.wait(), 5)
    await runner.stop(grace_s=0.05)
    row = await state_of(db, job_id)
    assert (row["state"], row["attempts"], row["interrupted"]) == ("pending", 0, 0)
