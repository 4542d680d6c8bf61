"""What every `lobug memory` command stands on: the database, the service layer, output, jobs.

No daemon runs the job queue for a CLI command, so commands that enqueue memory work drive the
daemon's own handlers in-process (`drive`, `drain`) and leave what cannot run for the daemon.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from lobug import errors
from lobug.cli.main import EXIT_PROBLEM, EXIT_USAGE
from lobug.cli.progress import ProgressBar
from lobug.config import Config
from lobug.memory import MemoryService, Recall, Records
from lobug.parts import parts
from lobug.workers import queue
from lobug.workers.queue import Job
from lobug.workers.runner import Handler, JobRunner

RETRY_WAIT_S = 60.0  # wait at most this long for a retrying job's backoff, then leave it


def output(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else text)


def failed(args: argparse.Namespace, error: errors.ApiError) -> int:
    """A command's refusal: its message on stderr (and its body with --json), and the exit code:
    400/403/413/415, the request itself is wrong (usage); anything else is a problem."""
    print(f"lobug: {error.message}", file=sys.stderr)
    if args.json:
        output(args, error.body(), "")
    return EXIT_USAGE if error.status in (400, 403, 413, 415) else EXIT_PROBLEM


@contextlib.asynccontextmanager
async def services(config: Config, *, with_memory: bool) -> AsyncIterator[tuple[Records, Recall]]:
    """The daemon's service layer over the same database, without the HTTP server."""
    async with parts(config, memory=with_memory and config.memory.enabled) as got:
        yield got.records, got.recall
        if got.memory is not None:
            await got.memory.flush_hits()


def drive(
    memory: MemoryService, config: Config, kinds: Sequence[str]
) -> Callable[[float], Awaitable[Any]]:
    """No daemon workers here: run these job kinds in-process until idle (or the deadline)."""
    handlers = memory.jobs.handlers()
    runner = JobRunner(
        memory.db, config.workers, time.time, {k: handlers[k] for k in kinds if k in handlers}
    )
    return lambda wait_s: runner.run_until_idle(timeout=wait_s)


async def drain(memory: MemoryService, kinds: Sequence[str], config: Config) -> None:
    """Run these job kinds to completion with a progress bar; a job backing off for longer
    than RETRY_WAIT_S (an outage) is left pending for the daemon."""
    if not kinds:
        return
    db = memory.db
    runner = JobRunner(db, config.workers, time.time)
    bar = ProgressBar("memory jobs")
    total = await db.read(queue.pending_count, kinds)

    async def tick() -> None:
        nonlocal total
        remaining = await db.read(queue.pending_count, kinds)
        total = max(total, bar.done + remaining)
        bar.update(total - remaining, total)

    def counted(handler: Handler) -> Handler:
        async def run(job: Job) -> None:
            try:
                await handler(job)
            finally:
                await tick()

        return run

    handlers = memory.jobs.handlers()
    for kind in kinds:
        runner.register(kind, counted(handlers[kind]))
    while True:
        await runner.run_until_idle(timeout=24 * 3600)
        next_run = await db.read(queue.next_run_after, kinds)
        if next_run is None or next_run - time.time() > RETRY_WAIT_S:
            break
        await asyncio.sleep(max(0.05, next_run - time.time()))
    bar.close()
