"""A stranger's conversation is kept briefly: the GC pass deletes the turns of public-trust
sessions older than `lifecycle.stranger_turn_days`, with what hangs on them (docs/security.md,
"A stranger's turns and the disk")."""

from __future__ import annotations

from typing import Any

from lobug.access import STRANGER
from lobug.memory.table.delta import READER_SEP
from lobug.storage.sqlite import has_table, placeholders
from lobug.storage.vector_index import record_change

DAY_S = 86400.0
PRUNE_BATCH = 5000  # turns per pass at most: one write transaction stays short on a Pi


def prune_stranger_turns(conn: Any, *, now: float, keep_days: float) -> int:
    """Delete the oldest stranger turns past their time (and their vectors; FTS rows, entity
    links and reply keys go with the row), then their emptied sessions and those sessions'
    delta marks. Returns the turns deleted."""
    cutoff = now - keep_days * DAY_S
    ids = [
        int(row[0])
        for row in conn.execute(
            "SELECT t.id FROM turns t JOIN sessions s ON s.id = t.session_id"
            " WHERE s.trust = ? AND t.ts < ? ORDER BY t.id LIMIT ?",
            (STRANGER, cutoff, PRUNE_BATCH),
        )
    ]
    if ids:
        marks = placeholders(ids)
        if has_table(conn, "turn_vectors"):
            gone = conn.execute(
                f"SELECT turn_id FROM turn_vectors WHERE turn_id IN ({marks})", ids
            ).fetchall()
            conn.execute(f"DELETE FROM turn_vectors WHERE turn_id IN ({marks})", ids)
            for row in gone:
                record_change(conn, "turn_vectors", int(row[0]))
        conn.execute(f"DELETE FROM turns WHERE id IN ({marks})", ids)
    emptied = [
        str(row[0])
        for row in conn.execute(
            "SELECT id FROM sessions s WHERE trust = ? AND last_active < ?"
            " AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id)",
            (STRANGER, cutoff),
        )
    ]
    for session in emptied:
        conn.execute(
            "DELETE FROM revisions WHERE session_id = ? OR substr(session_id, 1, ?) = ?",
            (session, len(session) + 1, session + READER_SEP),
        )
        conn.execute("DELETE FROM sessions WHERE id = ?", (session,))
    return len(ids)
