"""Export everything a user owns as JSON lines (GET /v1/export, `lobug memory export`; the format
is docs/memory-api.md, "Export and import"): the rows as stored, parents before children, read
in one read transaction. Not exported (derived or transient, rebuilt on import): vectors, FTS,
delta `change_log` and revisions, jobs, counters. The import side is `import_file`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
from collections.abc import AsyncGenerator, Iterator
from typing import Any

from lobug.storage.database import Database

log = logging.getLogger(__name__)

FORMAT, VERSION = "lobug-export", 1
SECTIONS: tuple[tuple[str, str], ...] = (
    ("session", "SELECT * FROM sessions WHERE user_id = ? ORDER BY started_at, id"),
    ("turn", "SELECT * FROM turns WHERE user_id = ? ORDER BY id"),
    ("memory", "SELECT * FROM memories WHERE user_id = ? ORDER BY id"),
    (
        "memory_source",
        "SELECT s.* FROM memory_sources s JOIN memories m ON m.id = s.memory_id"
        " WHERE m.user_id = ? ORDER BY s.memory_id, s.turn_id, s.reason",
    ),
    ("base_memory", "SELECT * FROM base_memory WHERE user_id = ?"),
    ("entity", "SELECT * FROM entities WHERE user_id = ? ORDER BY id"),
    (
        "memory_entity",
        "SELECT me.* FROM memory_entities me JOIN entities e ON e.id = me.entity_id"
        " WHERE e.user_id = ? ORDER BY me.memory_id, me.entity_id",
    ),
    (
        "turn_entity",  # the nightly NER's links too: an import would otherwise pay for them again
        "SELECT te.* FROM turn_entities te JOIN entities e ON e.id = te.entity_id"
        " WHERE e.user_id = ? ORDER BY te.turn_id, te.entity_id",
    ),
    ("relation", "SELECT * FROM relations WHERE user_id = ? ORDER BY id"),
    ("history", "SELECT * FROM history WHERE user_id = ? ORDER BY id"),
)
TYPES = ("meta", *(name for name, _ in SECTIONS))
CHUNK_BYTES = 64 * 1024
QUEUE_CHUNKS = 8


def line(kind: str, data: dict[str, Any]) -> str:
    return json.dumps({"type": kind, "data": data}, ensure_ascii=False, sort_keys=True) + "\n"


def export_lines(conn: Any, user_id: str, now: float) -> Iterator[str]:
    """Every line of the export; call inside a read transaction for a consistent snapshot."""
    migrations = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]
    yield line(
        "meta",
        {
            "format": FORMAT,
            "version": VERSION,
            "user_id": user_id,
            "exported_at": now,
            "schema": migrations,
        },
    )
    for kind, sql in SECTIONS:
        cursor = conn.execute(sql, (user_id,))
        while rows := cursor.fetchmany(500):
            for row in rows:
                data = dict(row)
                data.pop("user_id", None)
                yield line(kind, data)


def write_export(conn: Any, user_id: str, now: float, out: Any) -> int:
    """The whole export to a text stream (the CLI); returns the number of lines."""
    count = 0
    conn.execute("BEGIN")
    try:
        for text in export_lines(conn, user_id, now):
            out.write(text)
            count += 1
    finally:
        conn.execute("COMMIT")
    return count


class _Stopped(Exception):
    pass


async def export_chunks(db: Database, user_id: str, now: float) -> AsyncGenerator[bytes, None]:
    """The export as ~64 KiB chunks, produced on a reader thread with backpressure.

    The reader holds one read transaction (a snapshot; WAL lets writers go on) and blocks while
    the client is slow; when the consumer stops early the reader is told to stop and unblocked.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue(QUEUE_CHUNKS)
    stop = threading.Event()

    def put(item: bytes | BaseException | None) -> None:
        future = asyncio.run_coroutine_threadsafe(queue.put(item), loop)
        while True:
            try:
                future.result(timeout=0.2)
                return
            except concurrent.futures.TimeoutError:
                if stop.is_set():
                    future.cancel()
                    raise _Stopped from None

    def produce(conn: Any) -> None:
        try:
            conn.execute("BEGIN")
            try:
                buffer: list[str] = []
                size = 0
                for text in export_lines(conn, user_id, now):
                    buffer.append(text)
                    size += len(text)
                    if size >= CHUNK_BYTES:
                        put("".join(buffer).encode("utf-8"))
                        buffer, size = [], 0
                if buffer:
                    put("".join(buffer).encode("utf-8"))
            finally:
                conn.execute("COMMIT")
            put(None)
        except _Stopped:
            return
        except Exception as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            if not stop.is_set():
                put(exc)

    task = asyncio.ensure_future(db.read(produce))
    try:
        while (item := await queue.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        while not task.done():  # unblock a producer waiting on a full queue
            while not queue.empty():
                queue.get_nowait()
            await asyncio.sleep(0.01)
        if task.exception() is not None:
            log.warning("export reader failed: %s", task.exception())
