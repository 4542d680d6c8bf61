"""Migrations on a real database file, including two processes migrating it at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lobug.storage import migrations
from lobug.storage.sqlite import connect


def test_a_migration_applied_by_another_process_meanwhile_is_skipped(
    tmp_path: Path, monkeypatch: Any
) -> None:
    path = tmp_path / "m.db"
    first, second = connect(path), connect(path)
    try:
        # Both read "nothing applied yet"; the first then migrates everything and commits
        # before the second takes the write lock (two CLI commands starting on a new file).
        real = migrations.applied
        monkeypatch.setattr(migrations, "applied", lambda conn: real(conn) and [])
        assert len(migrations.migrate(first)) == len(migrations.MIGRATIONS)
        assert migrations.migrate(second) == []
        monkeypatch.undo()
        names = [name for name, _ in migrations.MIGRATIONS]
        assert migrations.applied(second) == names
    finally:
        first.close()
        second.close()
