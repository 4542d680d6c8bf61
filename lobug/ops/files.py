"""Small durable-file helpers shared by backup and restore."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Make a rename durable; not every filesystem lets a directory be fsynced."""
    with contextlib.suppress(OSError):
        fsync(path)


def remove_db_files(path: Path) -> None:
    """A database file and whatever journal SQLite may have left beside it."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").unlink()
