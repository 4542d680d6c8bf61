"""Asyncio workers that drain the job queue with bounded concurrency, retries and backoff."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable

from lobug.config import WorkerConfig
from lobug.storage.database import Database
from lobug.storage.pool import background
from lobug.storage.sqlite import StorageBusy, StorageFull
from lobug.workers import queue
from lobug.workers.queue import Job

log = logging.getLogger(__name__)
POLL_INTERVAL_S = 1.0  # an idle worker looks for a job this often (a new job wakes it at once)
BACKOFF_MAX_S = 600.0  # the longest wait between two attempts (workers.backoff_base_s doubles)

Handler = Callable[[Job], Awaitable[None]]


class RetryLater(Exception):
    """A dependency is down (LLM, embedder): try again after the backoff.

    An outage delays work, it never drops it: such retries do not run out of attempts (the
    backoff is capped at `BACKOFF_MAX_S`, so work resumes soon after the outage ends).
    """


class PermanentFailure(Exception):
    """Retrying cannot help (bad payload): mark the job failed with this error."""


class NotReady(Exception):
    """The job waits on something else; requeue without spending an attempt."""

    def __init__(self, reason: str, retry_in: float = 2.0) -> None:
        super().__init__(reason)
        self.retry_in = retry_in


class JobRunner:
    """Claims ready jobs one at a time per worker and runs their handler.

    Handlers must be idempotent: a job that was running when the process died runs again.
    """

    def __init__(
        self,
        db: Database,
        config: WorkerConfig,
        clock: Callable[[], float],
        handlers: dict[str, Handler] | None = None,
    ) -> None:
        self.db = db
        self.config = config
        self.clock = clock
        self.handlers: dict[str, Handler] = dict(handlers or {})
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._running: dict[int, Job] = {}  # by id: what a stop cuts short is put back

    def register(self, kind: str, handler: Handler) -> None:
        self.handlers[kind] = handler

    def wake(self) -> None:
        """Called after an enqueue so an idle worker picks the job up at once."""
        self._wake.set()

    async def start(self) -> None:
        recovered, retired = await self.db.write(lambda c: queue.recover(c, now=self.clock()))
        if recovered:
            log.info("re-queued %d job(s) left running by the previous process", recovered)
        if retired:
            log.error(
                "retired %d job(s) the process died running %d times (`lobug jobs list"
                " --state failed`)",
                retired,
                queue.MAX_INTERRUPTIONS,
            )
        self._stopping = False
        self._tasks = [
            asyncio.create_task(self._worker(i), name=f"lobug-worker-{i}")
            for i in range(self.config.concurrency)
        ]

    async def stop(self, grace_s: float = 5.0) -> None:
        """Let running jobs finish for a moment, then cancel what is left.

        A job cancelled mid-run is put back pending, its attempt unspent: a clean stop is not
        the job's doing (only a process that dies counts against it: `queue.recover`). If
        that write fails, it stays `running` and the next start recovers it.
        """
        self._stopping = True
        self._wake.set()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=grace_s)
            for task in pending:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        cut = list(self._running.values())
        self._running.clear()
        if cut:
            try:
                await self.db.write(lambda c: self._put_back_all(c, cut))
            except Exception:  # noqa: BLE001 - the next start recovers them
                log.warning("could not put back %d job(s) cut short by the stop", len(cut))

    def _put_back_all(self, conn: object, jobs: list[Job]) -> None:
        for job in jobs:
            queue.defer(conn, job, "cut short by a stop", now=self.clock(), retry_in=0.0)

    async def run_until_idle(self, timeout: float = 60.0) -> int:
        """Drain every ready job in this task (CLI import, tests); returns how many ran."""
        ran = 0
        deadline = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < deadline:
            job = await self._claim()
            if job is None:
                return ran
            await self._run(job)
            ran += 1
        return ran

    async def _claim(self) -> Job | None:
        kinds = list(self.handlers)
        return await self.db.write(lambda c: queue.claim(c, now=self.clock(), kinds=kinds))

    async def _worker(self, index: int) -> None:
        with background():  # this task's database work waits for the turns' (storage.pool)
            while not self._stopping:
                try:
                    job = await self._claim()
                except asyncio.CancelledError:
                    raise
                except (StorageFull, StorageBusy) as exc:  # the operator's to fix; no traceback
                    log.warning("worker %d could not claim a job: %s", index, exc)
                    job = None
                except Exception:  # noqa: BLE001 - the DB may be briefly unavailable
                    log.exception("worker %d could not claim a job", index)
                    job = None
                if job is None:
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), POLL_INTERVAL_S)
                    except TimeoutError:
                        pass
                    continue
                try:
                    await self._run(job)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the DB refused the job's writes
                    log.warning("worker %d: job %s #%d put back (%s)", index, job.kind, job.id, exc)
                    await self._put_back(job, f"{type(exc).__name__}: {exc}")

    async def _put_back(self, job: Job, reason: str) -> None:
        """Requeue a job whose outcome could not be written (disk full, DB busy).

        Not the job's fault, so no attempt is spent; retried until the DB takes the write.
        If we stop first, the job stays `running` and the next start recovers it.
        """
        while not self._stopping:
            try:
                await self.db.write(
                    lambda c: queue.defer(
                        c, job, reason, now=self.clock(), retry_in=POLL_INTERVAL_S
                    )
                )
                self._running.pop(job.id, None)
                return
            except Exception:  # noqa: BLE001 - still full or busy: wait and try again
                await asyncio.sleep(POLL_INTERVAL_S)

    async def _run(self, job: Job) -> None:
        self._running[job.id] = job
        # Raises when a stop cancels it or its outcome could not be written: it stays in
        # `_running` until it is put back (`_put_back`, or `stop`).
        await self._handle(job)
        del self._running[job.id]

    async def _handle(self, job: Job) -> None:
        handler = self.handlers[job.kind]
        try:
            await handler(job)
        except asyncio.CancelledError:
            raise
        except (StorageFull, StorageBusy):
            raise  # not the job's fault: the worker puts it back without spending an attempt
        except NotReady as exc:
            reason, retry_in = str(exc), exc.retry_in
            await self.db.write(
                lambda c: queue.defer(c, job, reason, now=self.clock(), retry_in=retry_in)
            )
            return
        except PermanentFailure as exc:
            await self._record_failure(job, f"{type(exc).__name__}: {exc}", permanent=True)
            return
        except Exception as exc:  # noqa: BLE001 - every failure is recorded, none is lost
            outage = isinstance(exc, RetryLater)
            if not outage:
                log.exception("job %s #%d raised", job.kind, job.id)
            await self._record_failure(
                job, f"{type(exc).__name__}: {exc}", permanent=False, exhaustible=not outage
            )
            return
        await self.db.write(lambda c: queue.complete(c, job.id, now=self.clock()))

    async def _record_failure(
        self, job: Job, error: str, *, permanent: bool, exhaustible: bool = True
    ) -> None:
        delay = self.backoff(job.attempts)
        state = await self.db.write(
            lambda c: queue.fail(
                c,
                job,
                error,
                now=self.clock(),
                retry_in=delay,
                max_attempts=self.config.max_attempts,
                permanent=permanent,
                exhaustible=exhaustible,
            )
        )
        level = logging.ERROR if state == "failed" else logging.WARNING
        log.log(
            level,
            "job %s #%d attempt %d/%d failed (%s); %s",
            job.kind,
            job.id,
            job.attempts,
            self.config.max_attempts,
            error,
            "gave up: marked failed" if state == "failed" else f"retrying in {delay:.1f}s",
        )

    def backoff(self, attempts: int) -> float:
        base = self.config.backoff_base_s * (2 ** max(0, attempts - 1))
        # Jitter keeps retries of many jobs from hitting a recovering Ollama all at once.
        return float(min(BACKOFF_MAX_S, base * random.uniform(0.8, 1.2)))
