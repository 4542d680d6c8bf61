"""The Database service: one writer thread with BEGIN IMMEDIATE, a pool of reader threads."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from lobug.storage.pool import PriorityPool
from lobug.storage.sqlite import (
    Capabilities,
    StorageBusy,
    StorageFull,
    capabilities,
    connect,
    is_busy,
    is_storage_full,
    sqlite3,
)
from lobug.storage.vector_index import VectorIndex

log = logging.getLogger(__name__)

# Statistics for the query planner, on every table that lacks them or has changed much since
# (SQLite's advice for a long-lived connection: at open, and now and then). Without them a
# search at 10k facts plans its joins blind: retrieval p95 12 ms instead of 9 (bench_memory).
# analysis_limit makes ANALYZE sample rather than read whole tables: cheap on a Pi's SD card.
OPTIMIZE = "PRAGMA optimize = 0x10002"
ANALYSIS_LIMIT = 400
T = TypeVar("T")


class Database:
    """Serialises writes through one connection on one thread; reads use their own connections.

    SQLite allows one writer at a time anyway; funnelling writes through a single thread keeps
    `database is locked` out of our own process and keeps the event loop free.
    """

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout_ms: int = 5000,
        readers: int = 4,
        max_page_count: int = 0,
        vector_index: VectorIndex | None = None,
    ) -> None:
        self.path = Path(path)
        # The daemon's in-memory copy of the vector tables (None: search scans sqlite-vec).
        self.vector_index = vector_index
        self.busy_timeout_ms = busy_timeout_ms
        self.max_page_count = max_page_count
        # The turn's reads and writes go before the job runner's (`pool.background`).
        self._writer_pool = PriorityPool(1, "lobug-db-writer")
        self._reader_pool = PriorityPool(readers, "lobug-db-reader")
        # Health checks read on their own thread and connection: /health must answer while
        # every reader is busy with searches (issue 16: 11–16 s under 500 concurrent requests).
        self._probe_pool = ThreadPoolExecutor(1, thread_name_prefix="lobug-db-probe")
        self._local = threading.local()
        self._writer: Any = None
        self._readers: list[Any] = []
        self._readers_lock = threading.Lock()
        self.caps: Capabilities | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def open_sync(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = connect(self.path, busy_timeout_ms=self.busy_timeout_ms)
        self._writer.vector_index = self.vector_index
        if self.max_page_count > 0:
            # A page budget for the file (storage.max_page_count): past it, writes fail with
            # "database or disk is full" (-> 503 storage_full) long before a small SD card fills
            # up and takes the OS down with it. Per connection, so only the writer needs it.
            self._writer.execute(f"PRAGMA max_page_count = {int(self.max_page_count)}")
        self.caps = capabilities(self._writer)
        self._writer.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
        try:
            self._writer.execute(OPTIMIZE).fetchall()
        except sqlite3.OperationalError as exc:  # locked by the daemon, a read-only file: later
            log.info("no planner statistics at open (%s); the daily GC gathers them", exc)

    async def optimize(self) -> None:
        """Fresh statistics for the query planner where the tables have changed (the daily GC)."""
        await self.write_raw(lambda c: c.execute(OPTIMIZE).fetchall())

    async def open(self) -> None:
        await asyncio.wrap_future(self._writer_pool.submit(self.open_sync))

    def close_sync(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        if self._writer is not None:
            try:
                self._writer.execute(OPTIMIZE).fetchall()
            except Exception:  # noqa: BLE001 - best effort on the way out
                pass
            self._writer.close()
            self._writer = None

    async def close(self) -> None:
        await asyncio.wrap_future(self._writer_pool.submit(self.close_sync))
        self._writer_pool.shutdown(wait=True)
        self._reader_pool.shutdown(wait=True)
        self._probe_pool.shutdown(wait=True)

    # -- sync API (for the CLI, migrations and code already on a DB thread) --------------------
    @property
    def writer(self) -> Any:
        if self._writer is None:
            raise RuntimeError("database is not open")
        return self._writer

    def write_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run fn(conn, *args) in one IMMEDIATE transaction (call from the writer thread or CLI)."""
        conn = self.writer
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = _settled(fn(conn, *args))
                conn.execute("COMMIT")
            except BaseException:
                # Also after a failed COMMIT (disk full, busy): SQLite may leave the transaction
                # open, and then every later BEGIN would fail and the writer never recover.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except Exception as exc:
            _raise_mapped(exc, self.busy_timeout_ms)
            raise
        return result

    def read_sync(self, fn: Callable[..., T], *args: Any) -> T:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, busy_timeout_ms=self.busy_timeout_ms)
            conn.vector_index = self.vector_index
            conn.known_tables = set()
            conn.memo = {}
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        try:
            return fn(conn, *args)
        except Exception as exc:
            _raise_mapped(exc, self.busy_timeout_ms)
            raise

    # -- async API ------------------------------------------------------------------------------
    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.wrap_future(self._writer_pool.submit(self.write_sync, fn, *args))

    async def write_raw(self, fn: Callable[..., T], *args: Any) -> T:
        """Run fn(writer_conn) on the writer thread without a wrapping transaction."""
        return await asyncio.wrap_future(
            self._writer_pool.submit(lambda: _settled(fn(self.writer, *args)))
        )

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.wrap_future(self._reader_pool.submit(self.read_sync, fn, *args))

    async def probe(self, fn: Callable[..., T], *args: Any) -> T:
        """A read for health checks, on its own thread: never queued behind the readers."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._probe_pool, self.read_sync, fn, *args)

    async def ping(self) -> bool:
        try:
            return bool(await self.probe(lambda c: c.execute("SELECT 1").fetchone()[0] == 1))
        except Exception:  # noqa: BLE001 - health reports, never raises
            log.exception("database ping failed")
            return False


def _settled(result: T) -> T:
    """A cursor handed back by a write is closed on the writer thread: an unread row (a PRAGMA's)
    keeps its statement in progress for as long as the cursor lives, which the awaiting side's
    futures can stretch past the next transaction, whose COMMIT then fails."""
    if isinstance(result, sqlite3.Cursor):
        result.close()
    return result


def _raise_mapped(exc: Exception, busy_timeout_ms: int) -> None:
    """Turn the two SQLite failures an operator can fix into exceptions the API maps to 503."""
    if is_storage_full(exc):
        raise StorageFull(str(exc)) from exc
    if is_busy(exc):
        raise StorageBusy(
            f"{exc}: another connection held a lock for more than {busy_timeout_ms} ms"
        ) from exc
