"""The query planner has statistics: gathered when the database opens and by the daily GC's
`optimize`, not only when the daemon stops (a kill -9 never gets there)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lobug.storage.database import Database
from lobug.storage.sqlite import connect


def fill(conn: Any, rows: int) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, who TEXT, body TEXT)")
    conn.execute("CREATE INDEX IF NOT EXISTS idx_notes_who ON notes(who)")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO notes (who, body) VALUES (?, ?)",
        [(f"person {i % 7}", f"note {i}") for i in range(rows)],
    )
    conn.execute("COMMIT")


def stats(path: Path) -> dict[str, str]:
    conn = connect(path)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone():
            return {}
        return {r[0]: r[1] for r in conn.execute("SELECT idx, stat FROM sqlite_stat1")}
    finally:
        conn.close()


async def test_opening_a_database_gathers_what_its_planner_lacks(tmp_path: Path) -> None:
    path = tmp_path / "lobug.db"
    conn = connect(path)
    fill(conn, 2000)
    conn.close()  # closed without PRAGMA optimize, as after kill -9
    assert stats(path) == {}
    db = Database(path)
    await db.open()
    try:
        assert stats(path)["idx_notes_who"].split()[0] == "2000"
    finally:
        await db.close()


async def test_optimize_refreshes_statistics_after_the_tables_grew(tmp_path: Path) -> None:
    path = tmp_path / "lobug.db"
    db = Database(path)
    await db.open()
    try:
        await db.write_raw(lambda c: fill(c, 50))
        await db.optimize()
        assert stats(path)["idx_notes_who"].split()[0] == "50"
        await db.write_raw(lambda c: fill(c, 5000))
        await db.optimize()
        assert stats(path)["idx_notes_who"].split()[0] == "5050"
    finally:
        await db.close()
