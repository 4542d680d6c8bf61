"""`lobug db migrate|info`: schema migrations and what the database holds."""

from __future__ import annotations

import argparse
import json
from typing import Any

from lobug.config import Config
from lobug.storage.database import Database
from lobug.storage.migrations import MIGRATIONS, applied, migrate


def register(sub: Any) -> None:
    db = sub.add_parser("db", help="database maintenance")
    actions = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    actions.add_parser("migrate", help="apply pending schema migrations").set_defaults(
        func=_migrate
    )
    actions.add_parser("info", help="schema version and table sizes").set_defaults(func=_info)


def _migrate(args: argparse.Namespace, config: Config) -> int:
    db = Database(config.storage.db_path, busy_timeout_ms=config.storage.busy_timeout_ms)
    db.open_sync()
    try:
        done = migrate(db.writer)
    finally:
        db.close_sync()
    print(
        f"applied {len(done)} migration(s): {', '.join(done)}" if done else "schema is up to date"
    )
    return 0


def _info(args: argparse.Namespace, config: Config) -> int:
    db = Database(config.storage.db_path, busy_timeout_ms=config.storage.busy_timeout_ms)
    db.open_sync()
    try:
        conn = db.writer
        names = applied(conn)
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not r[0].startswith("sqlite_") and not _is_shadow(r[0])
        ]
        counts = {
            t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in sorted(tables)
        }
        info = {
            "path": str(db.path),
            "migrations": names,
            "pending": [n for n, _ in MIGRATIONS if n not in names],
            "rows": counts,
            "capabilities": db.caps.__dict__ if db.caps else None,
        }
    finally:
        db.close_sync()
    print(json.dumps(info, indent=2))
    return 0


def _is_shadow(name: str) -> bool:
    """FTS5 and vec0 keep their data in shadow tables (`memories_fts_data`, …)."""
    return any(
        name.startswith(p + "_")
        for p in ("memories_fts", "turns_fts", "memory_vectors", "turn_vectors")
    )
