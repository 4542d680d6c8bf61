"""Inspecting a live test database from inside the test process.

Always through the daemon's own driver (pysqlite3): POSIX locks are per process, so a second
SQLite library (the stdlib's) closing its handle would drop the daemon's locks and let SQLite
delete the WAL under it ("disk I/O error").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect
from lobug.storage.vectors import create_vector_tables, write_meta


def query(path: Path | str, sql: str, *params: Any) -> list[Any]:
    conn = connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def scalar(path: Path | str, sql: str, *params: Any) -> Any:
    rows = query(path, sql, *params)
    return rows[0][0] if rows else None


def vector_store(path: Path, dim: int) -> Path:
    """A migrated database file with vector tables of `dim` for a model named "test"."""
    conn = connect(path)
    try:
        migrate(conn)
        conn.execute("BEGIN")
        write_meta(conn, "embedding_dim", str(dim))
        write_meta(conn, "embedding_model", "test")
        create_vector_tables(conn, dim)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return path
