"""The SQLite driver (storage/sqlite.py): seed 004 §3's pysqlite3 first, the standard library's
sqlite3 only when it is missing, as the daemon's database reports it."""

from __future__ import annotations

import importlib.util
import sqlite3 as stdlib_sqlite3
import sys
from pathlib import Path

import pytest

from lobug.storage import sqlite
from lobug.storage.database import Database


def test_the_database_runs_on_pysqlite3_when_it_is_installed(tmp_path: Path) -> None:
    assert importlib.util.find_spec("pysqlite3") is not None  # a dependency of the project
    db = Database(tmp_path / "lobug.db")
    db.open_sync()
    try:
        assert db.caps.driver == "pysqlite3.dbapi2"
        assert db.caps.fts5 and db.caps.vec  # what the standard library often cannot load
    finally:
        db.close_sync()


def test_without_pysqlite3_the_standard_library_stands_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pysqlite3", None)  # an import of it fails
    monkeypatch.setitem(sys.modules, "pysqlite3.dbapi2", None)
    assert sqlite._driver() is stdlib_sqlite3
