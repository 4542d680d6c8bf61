"""An embed job gathers the pending embed jobs through an index: its cost does not grow with
the backlog (issue 16, item 13: a backlog grows with the history while turns arrive faster
than the jobs run, and every turn's embedding sorted all of it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lobug.memory import enqueue
from lobug.memory.jobs import turns_to_embed
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect
from lobug.storage.vectors import create_vector_tables


def test_gathering_pending_embed_jobs_reads_an_index_not_the_backlog(tmp_path: Path) -> None:
    conn = connect(tmp_path / "backlog.db")
    migrate(conn)
    create_vector_tables(conn, 8)
    conn.execute("BEGIN")
    for i in range(1, 2001):
        conn.execute(
            "INSERT INTO turns (session_id, role, text, ts) VALUES ('s', 'user', ?, ?)",
            (f"turn {i}", float(i)),
        )
        enqueue.embed_turn(conn, i, now=float(i))
        enqueue.extract(conn, user_id="default", user_turn_id=i, assistant_turn_id=None, now=i)
    conn.execute("COMMIT")
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    todo, others = turns_to_embed(conn, 1, 32)
    conn.set_trace_callback(None)
    assert [t for t, _ in todo] == list(range(1, 32)) and len(others) == 31
    (gather,) = [s for s in statements if "FROM jobs" in s]
    plan: list[Any] = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + gather)]
    assert any("idx_jobs_kind_state" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan
