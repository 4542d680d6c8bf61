"""Inspecting a live test database from inside the test process.

Always through the daemon's own driver (pysqlite3): POSIX locks are per process, so a second
SQLite library (the stdlib's) closing its handle would drop the daemon's locks and let SQLite
delete the WAL under it ("disk I/O error").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lobug.storage.sqlite import connect


def query(path: Path | str, sql: str, *params: Any) -> list[Any]:
    conn = connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def scalar(path: Path | str, sql: str, *params: Any) -> Any:
    rows = query(path, sql, *params)
    return rows[0][0] if rows else None
