"""The data-dir lock: the daemon holds it for its lifetime so restore and a second daemon refuse.

An exclusive `flock` on `<data_dir>/lobug.lock`. The kernel drops it when the process exits,
kill -9 and power cuts included, so a stale lock file never blocks a restart; the pid written
into it is only there to word the message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

LOCK_FILE = "lobug.lock"


class DataDirLocked(Exception):
    """Another process (a running daemon, or a restore in progress) holds the data dir."""

    def __init__(self, path: Path, pid: int | None) -> None:
        self.path = path
        self.pid = pid
        who = f"process {pid}" if pid else "another process"
        super().__init__(
            f"{who} holds {path}: a Lo-Bug daemon (or a restore) is already using this data "
            f"directory. Stop it first (e.g. `sudo systemctl stop lobug`), or give this one "
            f"its own --data-dir"
        )


class DataDirLock:
    """`with DataDirLock(data_dir):` or acquire()/release() around a lifetime."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        """Take the lock without waiting; raises DataDirLocked when someone else has it."""
        if self._fd is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        # No O_TRUNC: the file is only rewritten once we own it, so the holder's pid survives.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        if created and os.geteuid() == 0:
            # `sudo lobug restore` on a fresh data dir must not leave a root-owned lock file
            # that the service user then cannot open.
            st = os.stat(self.path.parent)
            os.fchown(fd, st.st_uid, st.st_gid)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirLocked(self.path, holder_pid(self.path)) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # Empty the file before unlocking so a reader never sees our pid as a live holder.
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)  # closing drops the flock

    def __enter__(self) -> DataDirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def holder_pid(path: Path) -> int | None:
    try:
        return int(Path(path).read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


def is_locked(data_dir: Path) -> int | None:
    """None when no process holds the data dir; else the holder's pid (-1 when unknown).

    Probes with a shared lock and writes nothing, so it never disturbs the holder's pid.
    """
    path = Path(data_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return holder_pid(path) or -1
    finally:
        os.close(fd)
    return None
