"""`lobug memory import` of an export file (lines with a `type`): the records, then vectors.

Vectors are not in an export; the import enqueues the daemon's own embed jobs in the same
transaction and runs them here, so whatever cannot run now (embedder down) waits for the daemon.
"""

from __future__ import annotations

import json
import time
from typing import Any

from lobug.config import Config
from lobug.memory.jobs import enqueue
from lobug.memory.service import MemoryService
from lobug.memory.transfer.import_file import (
    RecordError,
    RecordReport,
    enqueue_vectors,
    import_records,
    parse_record,
)
from lobug.storage.database import Database

Record = tuple[int, str, dict[str, Any]]


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
        except ValueError:
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
        enqueue_vectors(conn, report, now=time.time(), max_attempts=config.workers.max_attempts)
        return report

    report = await db.write(write)
    from lobug.cli.memory_import import _drain  # the turn importer's job loop, progress bar

    kinds = [enqueue.EMBED_TURN, enqueue.EMBED_MEMORY]
    if not service.gate.waiting:
        await _drain(db, service, kinds, config)
    return report


def summary(report: RecordReport) -> str:
    added = ", ".join(f"{n} {k}" for k, n in sorted(report.added.items())) or "nothing"
    skipped = ", ".join(f"{n} {k}" for k, n in sorted(report.skipped.items()))
    text = f"restored from the export: {added}"
    if skipped:
        text += f"\nalready present (skipped): {skipped}"
    if report.remapped:
        text += f"\nnew ids (the old ones were taken) for: {', '.join(report.remapped)}"
    return text
