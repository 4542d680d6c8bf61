"""Restore the database from a backup, only while no daemon holds the data dir."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from lobug.ops.backup import Verification, copy_database, verify
from lobug.ops.files import fsync, fsync_dir, remove_db_files
from lobug.ops.lock import DataDirLock
from lobug.storage.sqlite import Error, connect

log = logging.getLogger(__name__)


class RestoreError(Exception):
    """The restore was refused or failed; the live database is as it was."""


@dataclass(frozen=True)
class RestoreResult:
    db_path: Path
    kept: Path | None  # the previous database, renamed; None when there was none
    backup: Verification


def restore_database(data_dir: Path, db_path: Path, backup: Path) -> RestoreResult:
    """Replace `db_path` with a verified copy of `backup`.

    Raises DataDirLocked while a daemon runs on `data_dir`, RestoreError when the backup does
    not verify. The previous database is kept as `<db>.before-restore-<timestamp>`, and its
    -wal/-shm never stay beside the restored file: SQLite would replay that WAL into it.
    """
    backup = Path(backup)
    db_path = Path(db_path)
    # Held throughout, so a daemon started meanwhile refuses instead of opening a half-swap.
    with DataDirLock(data_dir):
        checked = verify(backup, quick=False)
        if not checked.ok:
            raise RestoreError(
                f"{backup} failed verification, nothing was changed: " + "; ".join(checked.problems)
            )
        if backup.resolve() == db_path.resolve():
            raise RestoreError("the backup is the live database itself; nothing to restore")
        owner = _owner(db_path)
        staged = db_path.with_name(db_path.name + ".restore-tmp")
        remove_db_files(staged)
        try:
            copy_database(backup, staged, readonly=True)
            staged_check = verify(staged, quick=True)
            if not staged_check.ok:
                raise RestoreError("the copy did not verify: " + "; ".join(staged_check.problems))
            _chown(staged, owner)
            fsync(staged)
        except (Error, OSError) as exc:
            remove_db_files(staged)
            raise RestoreError(f"could not copy {backup} into {db_path.parent}: {exc}") from exc
        except BaseException:
            remove_db_files(staged)
            raise
        kept = _set_aside(db_path)
        try:
            os.replace(staged, db_path)
        except OSError as exc:
            _put_back(kept, db_path)
            remove_db_files(staged)
            raise RestoreError(f"could not move the restored database into place: {exc}") from exc
        for stale in (db_path, staged):  # -wal/-shm/-journal of whatever was there before
            for suffix in ("-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{stale}{suffix}").unlink()
        fsync_dir(db_path.parent)
    return RestoreResult(db_path, kept, checked)


def _set_aside(db_path: Path) -> Path | None:
    """Rename the current database to `<db>.before-restore-<ts>`; its WAL goes with it."""
    if not db_path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = db_path.with_name(f"{db_path.name}.before-restore-{stamp}")
    n = 1
    while kept.exists():
        n += 1
        kept = db_path.with_name(f"{db_path.name}.before-restore-{stamp}-{n}")
    wal = Path(f"{db_path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        # Fold committed transactions still in the WAL into the file, so the kept copy is
        # complete on its own. If that fails (a damaged database is a reason to restore), the
        # WAL is renamed with it instead: `<kept>-wal` is exactly where SQLite will look.
        try:
            conn = connect(db_path)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                conn.close()
        except Error as exc:
            log.warning("could not checkpoint %s before setting it aside: %s", db_path, exc)
    os.replace(db_path, kept)
    if wal.exists() and wal.stat().st_size > 0:
        os.replace(wal, Path(f"{kept}-wal"))
    return kept


def _put_back(kept: Path | None, db_path: Path) -> None:
    if kept is None:
        return
    os.replace(kept, db_path)
    if Path(f"{kept}-wal").exists():
        os.replace(Path(f"{kept}-wal"), Path(f"{db_path}-wal"))


def _owner(db_path: Path) -> tuple[int, int, int]:
    """Owner and mode the restored file must have: the previous database's, else private."""
    if db_path.exists():
        st = db_path.stat()
        return st.st_uid, st.st_gid, st.st_mode & 0o777
    st = db_path.parent.stat()
    return st.st_uid, st.st_gid, 0o600


def _chown(path: Path, owner: tuple[int, int, int]) -> None:
    """`sudo lobug restore` must leave a file the daemon's user can still write."""
    uid, gid, mode = owner
    if os.geteuid() == 0:
        os.chown(path, uid, gid)
    os.chmod(path, mode)
