"""Online backup of the live database (SQLite backup API) and integrity checks of a copy."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lobug.ops.files import fsync, fsync_dir, remove_db_files
from lobug.ops.schema import schema_problems
from lobug.storage.sqlite import Error, connect, sqlite3
from lobug.storage.vector_index import KEYS

# Pages copied per step (4 KiB each, so 4 MiB): big enough that a Pi's database of a few
# hundred MB takes a few dozen steps, small enough that one step never hogs the disk.
STEP_PAGES = 1024
STEP_PAUSE_S = 0.005  # between steps, so the daemon's writer gets the disk in between


class BackupError(Exception):
    """The backup could not be made or did not verify; the message says what to do."""


@dataclass(frozen=True)
class Verification:
    """What `PRAGMA integrity_check` (or quick_check) and a few Lo-Bug checks found."""

    path: Path
    problems: list[str] = field(default_factory=list)
    tables: dict[str, int] = field(default_factory=dict)  # row counts of the main tables

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True)
class BackupResult:
    source: Path
    path: Path
    size_bytes: int
    pages: int
    seconds: float
    verification: Verification

    @property
    def ok(self) -> bool:
        return self.verification.ok


def backup_database(
    source: Path,
    dest: Path,
    *,
    busy_timeout_ms: int = 5000,
    step_pages: int = STEP_PAGES,
    pause_s: float = STEP_PAUSE_S,
    progress: Callable[[int, int], None] | None = None,
) -> BackupResult:
    """Copy `source` into the single file `dest` while the daemon keeps writing, then verify it.

    The copy is written next to `dest` and only renamed over it once it verified, so a failed
    or interrupted backup never replaces an older good one.
    """
    source = Path(source)
    if not source.is_file():
        raise BackupError(f"there is no database at {source}; check --data-dir / --config")
    dest = Path(dest)
    if dest.is_dir():
        dest = dest / f"{source.stem}-{time.strftime('%Y%m%d-%H%M%S')}.db"
    if dest.resolve() == source.resolve():
        raise BackupError("the backup path is the live database itself; choose another path")
    partial = dest.with_name(dest.name + ".partial")
    started = time.monotonic()
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        remove_db_files(partial)
        pages = copy_database(
            source, partial, busy_timeout_ms, max(1, step_pages), pause_s, progress
        )
        verification = verify(partial, quick=False)
        if verification.ok:
            fsync(partial)
            os.replace(partial, dest)
            fsync_dir(dest.parent)
    except Error as exc:
        raise BackupError(f"backup of {source} failed: {exc}") from exc
    except OSError as exc:
        raise BackupError(f"cannot write the backup {dest}: {exc}") from exc
    finally:
        remove_db_files(partial)
    if not verification.ok:
        verification = Verification(dest, verification.problems, verification.tables)
    size = dest.stat().st_size if verification.ok else 0
    return BackupResult(source, dest, size, pages, time.monotonic() - started, verification)


def copy_database(
    source: Path,
    dest: Path,
    busy_timeout_ms: int = 5000,
    step_pages: int = -1,
    pause_s: float = 0.0,
    progress: Callable[[int, int], None] | None = None,
    *,
    readonly: bool = False,
) -> int:
    """The SQLite backup API (a source with its own -wal is copied whole) into the single file
    `dest`; returns its pages. `step_pages` at a time (-1: all at once)."""
    src = connect(source, busy_timeout_ms=busy_timeout_ms, readonly=readonly)
    dst = sqlite3.connect(str(dest), isolation_level=None)
    total = 0

    def step(status: int, remaining: int, pages: int) -> None:
        nonlocal total
        total = pages
        if progress is not None:
            progress(pages - remaining, pages)

    try:
        # One read transaction for the whole copy: a fixed snapshot. Without it every commit
        # of the daemon between two steps would restart the backup from page 1, and a busy
        # daemon could keep it from ever finishing. In WAL mode the daemon keeps committing
        # meanwhile; the WAL just cannot be checkpointed past our snapshot until we finish.
        src.execute("BEGIN")
        src.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        src.backup(dst, pages=step_pages, progress=step, sleep=pause_s)
        src.execute("COMMIT")
        # One self-contained file: no -wal beside it to forget when copying it (or to leave
        # behind under a restore's staging name); the daemon switches back to WAL when it opens it.
        dst.execute("PRAGMA journal_mode = DELETE").fetchone()
    finally:
        dst.close()
        src.close()
    return total


def verify(path: Path, *, quick: bool = False) -> Verification:
    """integrity_check (quick_check when `quick`) with sqlite-vec loaded, plus Lo-Bug's tables.

    `integrity_check` also walks the FTS5 indexes (SQLite >= 3.44); the vec0 tables are opened
    through the extension to prove they are readable.
    """
    path = Path(path)
    if not path.is_file():
        return Verification(path, [f"{path} does not exist"])
    with open(path, "rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            return Verification(path, [f"{path} is not an SQLite database"])
    problems: list[str] = []
    tables: dict[str, int] = {}
    try:
        conn = connect(path, readonly=True)
    except Error as exc:
        return Verification(path, [f"cannot open {path}: {exc}"])
    try:
        pragma = "quick_check" if quick else "integrity_check"
        rows = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}(20)")]
        if rows != ["ok"]:
            problems += [f"{pragma}: {r}" for r in rows]
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "schema_migrations" not in names:
            problems.append("not a Lo-Bug database (it has no schema_migrations table)")
        else:
            problems += [f"schema: {p}" for p in schema_problems(conn)]
        for table in ("turns", "memories", "jobs", *KEYS):
            if table in names:
                tables[table] = _count(conn, table, problems)
    except Error as exc:
        problems.append(f"{path} cannot be read: {exc}")
    finally:
        conn.close()
    return Verification(path, problems, tables)


def _count(conn: Any, table: str, problems: list[str]) -> int:
    try:
        return int(conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0])
    except Error as exc:  # e.g. a vec0 table without the extension
        problems.append(f"table {table} cannot be read: {exc}")
        return -1
