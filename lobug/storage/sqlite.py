"""SQLite driver selection and the one `connect()` helper (pragmas, sqlite-vec, capabilities)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)


def _driver() -> ModuleType:
    # pysqlite3 bundles a recent SQLite with FTS5 and extension loading; many Python builds'
    # stdlib sqlite3 cannot load extensions, so it is only the fallback.
    try:
        import pysqlite3.dbapi2 as driver  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - depends on the install
        import sqlite3 as driver
    return driver


sqlite3 = _driver()

Error = sqlite3.Error
IntegrityError = sqlite3.IntegrityError


@dataclass(frozen=True)
class Capabilities:
    sqlite_version: str
    fts5: bool
    vec: bool
    vec_version: str | None
    driver: str


MIB = 1024 * 1024
# SQLite needs room for the WAL and a checkpoint to write at all: below this much free disk,
# writes fail (`lobug doctor` fails its disk check, /health reports it).
MIN_FREE_BYTES = 50 * MIB


def pages_in_use(conn: Any) -> int:
    """Pages of the database that hold data: its size in pages less the free list (what
    `storage.max_page_count` bounds)."""
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    return pages - int(conn.execute("PRAGMA freelist_count").fetchone()[0])


class StorageFull(Exception):
    """The disk (or the database's page budget) is full."""


class StorageBusy(Exception):
    """Another connection held a write lock for longer than busy_timeout."""


def is_storage_full(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.Error) and (
        "database or disk is full" in text or "disk i/o" in text
    )


def is_busy(exc: BaseException) -> bool:
    """SQLITE_BUSY / SQLITE_LOCKED: `database is locked` once busy_timeout has run out."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (5, 6):  # SQLITE_BUSY, SQLITE_LOCKED
        return True
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text


MMAP_BYTES = 256 * 1024 * 1024 if sys.maxsize > 2**32 else 0


class Connection(sqlite3.Connection):  # type: ignore[misc, name-defined]
    """The driver's connection, with room for the daemon's in-memory vector index
    (`storage.vector_index`), which the search code finds through the connection it is given."""

    vector_index: Any = None
    # has_table's memory of the tables seen, on the daemon's reader connections (Database):
    # None elsewhere (migrations and tests create and drop tables on their connections).
    known_tables: set[str] | None = None
    # A small memo for read-mostly lookups a search repeats (word counts), on the same
    # reader connections; None elsewhere.
    memo: dict[Any, Any] | None = None


def connect(path: Path | str, *, busy_timeout_ms: int = 5000, readonly: bool = False) -> Any:
    """Open a connection with our pragmas and sqlite-vec loaded (when it can be)."""
    target = f"file:{path}?mode=ro" if readonly else str(path)
    conn = sqlite3.connect(
        target, uri=readonly, check_same_thread=False, isolation_level=None, factory=Connection
    )
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    if not readonly:
        _wal(conn, busy_timeout_ms)
    # NORMAL is durable across application crashes in WAL mode; only an OS crash or power cut
    # can lose the last transactions, and the Pi's SD card thanks us for fewer fsyncs.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA temp_store = MEMORY")
    # Vector KNN reads every stored vector; through mmap the pages need no read() call each,
    # which halves KNN time (10k and 100k 384-d facts). 32-bit builds lack the address space.
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
    _load_vec(conn)
    return conn


def _wal(conn: Any, busy_timeout_ms: int) -> None:
    """Switch to WAL. On a new file another process may be switching it at the same moment;
    SQLite then answers "locked" at once, without the busy handler, so wait here instead."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


def _load_vec(conn: Any) -> bool:
    try:
        import sqlite_vec  # type: ignore[import-untyped]

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        return True
    except (ImportError, AttributeError, sqlite3.Error) as exc:
        log.warning("sqlite-vec could not be loaded (%s); vector search is off", exc)
        return False


def has_table(conn: Any, name: str) -> bool:
    """Whether the schema has a table `name`; virtual tables (FTS5, vec0) count, as SQLite
    lists them with type 'table' too. Indexes, views and triggers do not.

    A reader connection of the daemon remembers the tables it found (a search asks several
    times per query): the daemon never drops one for good (the vector tables' swap drops and
    recreates them in one transaction), so only absence is asked again."""
    known = getattr(conn, "known_tables", None)
    if known is not None and name in known:
        return True
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    if row is not None and known is not None:
        known.add(name)
    return row is not None


def capabilities(conn: Any) -> Capabilities:
    options = {row[0] for row in conn.execute("PRAGMA compile_options")}
    try:
        vec_version = conn.execute("SELECT vec_version()").fetchone()[0]
    except sqlite3.Error:
        vec_version = None
    return Capabilities(
        sqlite_version=sqlite3.sqlite_version,
        fts5="ENABLE_FTS5" in options,
        vec=vec_version is not None,
        vec_version=vec_version,
        driver=sqlite3.__name__,
    )


LIKE_ESCAPE = "\\"


def tuples(conn: Any) -> Any:
    """A cursor whose rows are plain tuples, not the connection's `sqlite3.Row`s: for reads of
    hundreds of rows a search makes per question (a Row per row cost a fifth of the read)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor


def placeholders(values: Collection[Any]) -> str:
    """The `?` marks of an `IN (…)` list, one per value: "?,?,?"."""
    return ",".join("?" * len(values))


def escape_like(text: str) -> str:
    return (
        text.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )


def storable_text(text: str) -> bool:
    """Whether SQLite can store the text: valid Unicode, no lone UTF-16 surrogate (JSON's
    "\\ud800" escape decodes to one, and the driver refuses it at write time)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
