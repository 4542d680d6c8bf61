"""`lobug memory import FILE.jsonl`: store the turns, then run their memory jobs to completion.

Lines of an export (`lobug memory export`, with a `type`) are restored as they were instead,
then their vectors are made by the daemon's own embed jobs; both kinds may share a file.

The jobs are the daemon's own (durable rows in `jobs`), run here in-process by a JobRunner.
Whatever cannot run now (no Ollama, embedder down) stays pending for the daemon, and we say so.

A hostile or careless file: a bad line (broken JSON, invalid UTF-8, a lone surrogate, a number
of thousands of digits) is reported with its number and skipped, the good lines are imported,
and the exit code is 1. Importing the same file again, or re-running an import that was
killed, stores nothing twice (see `import_turns`); jobs a killed import left `running` are made
ready again by the next import when no daemon holds the data dir (the daemon itself recovers
them when it starts).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from typing import Any

from lobug.cli.main import EXIT_OK, EXIT_PROBLEM
from lobug.cli.memory.session import drain, output
from lobug.cli.progress import ProgressBar
from lobug.config import Config
from lobug.llm.embedders import EmbeddingUnavailable
from lobug.memory import MemoryService, enqueue
from lobug.memory.transfer import import_turns as importer
from lobug.memory.transfer.import_file import (
    RecordError,
    RecordReport,
    enqueue_vectors,
    import_records,
    parse_record,
)
from lobug.ops.lock import is_locked
from lobug.parts import parts
from lobug.storage.database import Database
from lobug.workers import queue

Record = tuple[int, str, dict[str, Any]]


async def run_import(args: argparse.Namespace, config: Config) -> int:
    try:
        data = args.file.read_bytes()
    except OSError as exc:
        print(f"lobug: cannot read {args.file}: {exc}", file=sys.stderr)
        return EXIT_PROBLEM
    raw, decode_errors = decode_lines(data)
    records, raw, record_errors = split_lines(raw)  # an export file's lines carry a `type`
    lines, errors = importer.read_lines(raw, max_chars=config.chat.max_text_chars)
    errors = sorted(decode_errors + record_errors + errors, key=_lineno)
    for error in errors:
        print(f"lobug: {args.file}: {error}", file=sys.stderr)
    result = importer.ImportResult(errors=errors)
    async with parts(config) as got:  # the memory service even with memory.enabled off
        db, service = got.db, got.memory
        assert service is not None
        if is_locked(config.storage.data_dir) is None:
            # No daemon: a job still `running` was left by a killed process (an import).
            await db.write(lambda c: queue.recover(c, now=time.time()))
        if records:
            restored = await import_file_records(
                db, service, records, user_id=args.user, config=config
            )
            errors += restored.errors
            if not lines:
                jobs = await db.read(queue.counts_by_kind, enqueue.KINDS)
                output(args, {**restored.to_dict(), "jobs": jobs}, summary(restored))
                return EXIT_PROBLEM if errors else EXIT_OK
        before = await db.read(importer.memory_counts, args.user)
        # What is already stored is skipped inside each batch's transaction (store_batch).
        partners, batches = importer.plan(lines)
        bar = ProgressBar("storing turns")
        for batch in batches:
            store = partial(
                importer.store_batch,
                partners=partners,
                now=time.time(),
                user_id=args.user,
                result=result,
            )
            await db.write(store, batch)
            bar.update(result.stored + result.skipped, len(lines))
        bar.close()
        kinds, notes = await _runnable_kinds(service, config)
        await drain(service, kinds, config)
        after = await db.read(importer.memory_counts, args.user)
        jobs = await db.read(queue.counts_by_kind, enqueue.KINDS)
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
    # Summaries the cascades write are embedded too (issue 12): run what they enqueue.
    kinds = [enqueue.EMBED_TURN, enqueue.EMBED_MEMORY] if embed_ok else []
    problem = service.llm.problem(await service.llm.health(fresh=True))
    if problem is None:
        kinds += [enqueue.CASCADE_SHORT, enqueue.CASCADE_LONG]
        if embed_ok:
            kinds.append(enqueue.EXTRACT)
    else:
        notes.append(
            f"the LLM is not usable ({problem}): extraction and summaries are left pending "
            "for the daemon, which runs them when the LLM is back"
        )
    return kinds, notes


def decode_lines(data: bytes) -> tuple[list[str], list[str]]:
    """The file's lines decoded one by one: a line that is not UTF-8 becomes an error (and an
    empty line, so the numbers of the others stay)."""
    lines: list[str] = []
    errors: list[str] = []
    for index, line in enumerate(data.split(b"\n")):
        try:
            lines.append(line.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError as exc:
            lines.append("")
            errors.append(f"line {index + 1}: not UTF-8 (byte {exc.start + 1})")
    if lines and lines[-1] == "":
        lines.pop()
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]  # a byte order mark
    return lines, errors


def _lineno(error: str) -> int:
    number = error.removeprefix("line ").split(":", 1)[0]
    return int(number) if number.isdigit() else 0


def split_lines(raw: list[str]) -> tuple[list[Record], list[str], list[str]]:
    """(export records, the other lines with records blanked so numbers stay, record errors).

    A line is an export record when it is a JSON object with a `type` field; every other line
    goes to the turn importer (`{session_id, role, text, ts?, ref?}`) as before.
    """
    records: list[Record] = []
    errors: list[str] = []
    rest = list(raw)
    for index, line in enumerate(raw):
        if '"type"' not in line:
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            continue  # the turn importer reports it
        if not isinstance(value, dict) or "type" not in value:
            continue
        rest[index] = ""
        try:
            kind, data = parse_record(value)
        except RecordError as exc:
            errors.append(f"line {index + 1}: {exc}")
            continue
        if kind != "meta":
            records.append((index + 1, kind, data))
    return records, rest, errors


async def import_file_records(
    db: Database, service: MemoryService, records: list[Record], *, user_id: str, config: Config
) -> RecordReport:
    def write(conn: Any) -> RecordReport:
        report = import_records(conn, records, user_id=user_id)
        enqueue_vectors(conn, report, now=time.time())
        return report

    report = await db.write(write)
    if not service.gate.waiting:
        await drain(service, [enqueue.EMBED_TURN, enqueue.EMBED_MEMORY], config)
    return report


def summary(report: RecordReport) -> str:
    added = ", ".join(f"{n} {k}" for k, n in sorted(report.added.items())) or "nothing"
    skipped = ", ".join(f"{n} {k}" for k, n in sorted(report.skipped.items()))
    text = f"restored from the export: {added}"
    if skipped:
        text += f"\nalready present (skipped): {skipped}"
    if report.remapped:
        text += f"\nnew ids (the old ones were taken) for: {', '.join(report.remapped)}"
    if report.errors:
        text += f"\nnot imported ({len(report.errors)} row(s)):"
        text += "".join(f"\n  {error}" for error in report.errors)
    return text
