"""`lobug memory import FILE.jsonl`: store the turns, then run their memory jobs to completion.

Lines of an export (`lobug memory export`, with a `type`) are restored as they were instead
(`memory_import_records`); both kinds may share a file.

The jobs are the daemon's own (durable rows in `jobs`), run here in-process by a JobRunner.
Whatever cannot run now (no Ollama, embedder down) stays pending for the daemon, and we say so.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from functools import partial
from typing import Any

from lobug.cli.memory_cmd import EXIT_OK, EXIT_PROBLEM, job_counts, open_service, output
from lobug.cli.memory_import_records import import_file_records, split_lines, summary
from lobug.cli.progress import ProgressBar
from lobug.config import Config
from lobug.llm.embedders import EmbeddingUnavailable
from lobug.memory.jobs import enqueue
from lobug.memory.service import MemoryService
from lobug.memory.transfer import import_turns as importer
from lobug.storage.database import Database
from lobug.workers.queue import Job
from lobug.workers.runner import Handler, JobRunner

RETRY_WAIT_S = 60.0  # wait at most this long for a retrying job's backoff, then leave it


async def run_import(args: argparse.Namespace, config: Config) -> int:
    try:
        raw = args.file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"lobug: cannot read {args.file}: {exc}", file=sys.stderr)
        return EXIT_PROBLEM
    records, raw, record_errors = split_lines(raw)  # an export file's lines carry a `type`
    lines, errors = importer.read_lines(raw, max_chars=config.chat.max_text_chars)
    errors = record_errors + errors
    for error in errors:
        print(f"lobug: {args.file}: {error}", file=sys.stderr)
    result = importer.ImportResult(errors=errors)
    async with open_service(config) as (db, service):
        if records:
            restored = await import_file_records(
                db, service, records, user_id=args.user, config=config
            )
            errors += restored.errors
            if not lines:
                jobs = await db.read(job_counts)
                output(args, {**restored.to_dict(), "jobs": jobs}, summary(restored))
                return EXIT_PROBLEM if errors else EXIT_OK
        before = await db.read(_memory_counts, args.user)
        existing = await db.read(importer.existing_refs)
        kept = [ln for ln in lines if ln.ref is None or (ln.session_id, ln.ref) not in existing]
        result.skipped = len(lines) - len(kept)
        partners, batches = importer.plan(kept)
        bar = ProgressBar("storing turns")
        for batch in batches:
            store = partial(
                importer.store_batch,
                partners=partners,
                now=time.time(),
                user_id=args.user,
                threshold=config.memory.short_term_threshold,
                max_attempts=config.workers.max_attempts,
                result=result,
            )
            await db.write(store, batch)
            bar.update(result.stored, len(kept))
        bar.close()
        kinds, notes = await _runnable_kinds(service, config)
        await _drain(db, service, kinds, config)
        after = await db.read(_memory_counts, args.user)
        jobs = await db.read(job_counts)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    data = {
        **result.to_dict(),
        "facts_added": after[0] - before[0],
        "summaries_added": after[1] - before[1],
        "jobs": jobs,
        "notes": notes,
    }
    pending, failed = jobs.get("pending", {}), jobs.get("failed", {})
    text = (
        f"imported {result.stored} turn(s)"
        + (f", skipped {result.skipped} already imported" if result.skipped else "")
        + (f", {len(errors)} bad line(s)" if errors else "")
        + f"\nfacts: +{data['facts_added']}, summaries: +{data['summaries_added']}"
        + (f"\nleft pending for the daemon: {pending}" if pending else "")
        + (f"\nfailed (see `lobug jobs list --state failed`): {failed}" if failed else "")
    )
    output(args, data, text)
    return EXIT_PROBLEM if errors or failed else EXIT_OK


async def _runnable_kinds(service: MemoryService, config: Config) -> tuple[list[str], list[str]]:
    """The job kinds this process can run now; the notes say why the others wait."""
    notes: list[str] = []
    embed_ok = not service.gate.waiting
    if not embed_ok:
        notes.append(f"{service.gate.problem}: embedding and extraction wait for the daemon")
    elif service.gate.enabled:
        try:
            await service.embedder.embed(["probe"])
        except EmbeddingUnavailable as exc:
            embed_ok = False
            notes.append(
                f"the embedder is unavailable ({exc}): embedding and extraction are "
                "left pending for the daemon"
            )
    kinds = [enqueue.EMBED_TURN] if embed_ok else []
    health = await service.llm.health(fresh=True)
    if health.reachable and health.has_model(config.ollama.chat_model):
        kinds += [enqueue.CASCADE_SHORT, enqueue.CASCADE_LONG]
        if embed_ok:
            kinds.append(enqueue.EXTRACT)
    else:
        why = health.error or f"no model {config.ollama.chat_model!r}"
        notes.append(
            f"Ollama is not usable ({why}): extraction and summaries are left pending "
            "for the daemon, which runs them when Ollama is back"
        )
    return kinds, notes


async def _drain(db: Database, service: MemoryService, kinds: list[str], config: Config) -> None:
    if not kinds:
        return
    runner = JobRunner(db, config.workers, time.time)
    bar = ProgressBar("memory jobs")
    total = await db.read(_pending, kinds)

    async def tick() -> None:
        nonlocal total
        remaining = await db.read(_pending, kinds)
        total = max(total, bar.done + remaining)
        bar.update(total - remaining, total)

    def counted(handler: Handler) -> Handler:
        async def run(job: Job) -> None:
            try:
                await handler(job)
            finally:
                await tick()

        return run

    handlers = service.jobs.handlers()
    for kind in kinds:
        runner.register(kind, counted(handlers[kind]))
    while True:
        await runner.run_until_idle(timeout=24 * 3600)
        next_run = await db.read(_next_run_after, kinds)
        if next_run is None or next_run - time.time() > RETRY_WAIT_S:
            break
        await asyncio.sleep(max(0.05, next_run - time.time()))
    bar.close()


def _pending(conn: Any, kinds: list[str]) -> int:
    marks = ",".join("?" * len(kinds))
    sql = f"SELECT COUNT(*) FROM jobs WHERE state = 'pending' AND kind IN ({marks})"
    return int(conn.execute(sql, kinds).fetchone()[0])


def _next_run_after(conn: Any, kinds: list[str]) -> float | None:
    marks = ",".join("?" * len(kinds))
    row = conn.execute(
        f"SELECT MIN(run_after) FROM jobs WHERE state = 'pending' AND kind IN ({marks})", kinds
    ).fetchone()
    return None if row[0] is None else float(row[0])


def _memory_counts(conn: Any, user_id: str) -> tuple[int, int]:
    def count(kind: str) -> int:
        sql = "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = ?"
        return int(conn.execute(sql, (user_id, kind)).fetchone()[0])

    return count("fact"), count("summary")
