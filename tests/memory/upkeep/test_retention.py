"""The nightly pass forgets what only grows (issue 42), through the daemon's schedule: finished
jobs after a week (failed ones kept), retrieval HIT rows (hits are a counter), stale sessions'
seen marks, the vector change log with the in-memory index off, old hourly operation counts."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, memory_config

from lobug.memory.query import QueryRequest
from lobug.memory.table import delta
from lobug.memory.upkeep import events, retention
from lobug.parts import parts
from lobug.storage.vector_index import record_change
from lobug.workers import queue

DAY = 86400.0
TEA = "The user drinks green tea every morning."


async def nightly(mem: Any, clock: Any) -> None:
    """The daemon's schedule: its clock started, then the first check after 03:00."""
    periodic = mem.service.periodic if isinstance(mem, MemoryEnv) else mem.periodic
    await periodic.run_due()
    clock.advance(DAY)
    assert "gc" in await periodic.run_due()


async def test_finished_jobs_go_after_a_week_failed_ones_stay(mem: MemoryEnv, clock: Any) -> None:
    now = clock()

    def jobs(conn: Any) -> dict[str, int]:
        made = {}
        for name, age_days, end in (
            ("old done", 8, "done"),
            ("recent done", 2, "done"),
            ("old failed", 60, "failed"),
            ("old pending", 60, None),
        ):
            at = now - age_days * DAY
            made[name] = job = queue.enqueue(conn, "probe", {"name": name}, now=at)
            if end == "done":
                queue.complete(conn, job, now=at)
            elif end == "failed":
                claimed = queue.Job.from_row(
                    conn.execute("SELECT * FROM jobs WHERE id = ?", (job,)).fetchone()
                )
                queue.fail(conn, claimed, "boom", now=at, retry_in=None, max_attempts=1)
        return made

    made = await mem.db.write(jobs)
    await nightly(mem, clock)
    left = {r[0] for r in mem.rows("SELECT id FROM jobs WHERE kind = 'probe'")}
    assert left == {made["recent done"], made["old failed"], made["old pending"]}


async def test_hits_are_a_counter_and_old_hit_rows_are_forgotten(
    mem: MemoryEnv, clock: Any
) -> None:
    tea = (await mem.service.remember(content=TEA, actor="test"))["id"]
    for _ in range(3):
        clock.advance(60)
        await mem.service.query(QueryRequest(query="green tea", top_k=1))
        await mem.service.flush_hits()
    assert mem.value("SELECT hits FROM memories WHERE id = ?", tea) == 3
    assert mem.value("SELECT COUNT(*) FROM history WHERE event = 'HIT'") == 0

    def before_issue_42(conn: Any) -> None:  # a database that wrote a row per retrieval
        for n in range(50):
            conn.execute(
                "INSERT INTO history (user_id, memory_id, event, actor, ts)"
                " VALUES ('default', ?, 'HIT', 'retrieval', ?)",
                (tea, clock() - n),
            )

    await mem.db.write(before_issue_42)
    explained = mem.rows("SELECT event FROM history WHERE memory_id = ? AND event != 'HIT'", tea)
    await nightly(mem, clock)
    assert mem.value("SELECT COUNT(*) FROM history WHERE event = 'HIT'") == 0
    kept = mem.rows("SELECT event FROM history WHERE memory_id = ? AND event != 'HIT'", tea)
    before = [r[0] for r in explained]
    assert before == ["ADD"] and [r[0] for r in kept][:1] == before  # what explains it stays
    assert mem.value("SELECT hits FROM memories WHERE id = ?", tea) == 3


async def test_stale_sessions_seen_marks_go_live_ones_stay(mem: MemoryEnv, clock: Any) -> None:
    start = clock()

    def history(conn: Any) -> None:
        # Each /v1/query with a new session id leaves a mark; these looked 40 days ago.
        delta.bump(conn, None, None, "created", {"summary": "an old change"}, start, "default")
        for n in range(20):
            delta.mark_seen(conn, f"agent-{n}", delta.current_rev(conn))
        # A change 35 days ago that none of them looked at since …
        delta.bump(conn, None, None, "created", {"summary": "news"}, start + 5 * DAY)
        # … and the kitchen device, which looks every day (the last yesterday), behind by one.
        delta.mark_seen(conn, "kitchen", delta.current_rev(conn))
        delta.bump(conn, None, None, "created", {"summary": "today"}, start + 39 * DAY)

    await mem.db.write(history)
    clock.now = start + 39 * DAY
    await nightly(mem, clock)
    assert [r[0] for r in mem.rows("SELECT session_id FROM revisions")] == ["kitchen"]

    def unseen(conn: Any) -> list[str]:
        return [c.text for c in delta.changes_since(conn, "kitchen")]

    assert await mem.db.read(unseen) == ["today"]  # its mark still says what is new


async def test_old_operation_counts_go(mem: MemoryEnv, clock: Any) -> None:
    await mem.db.write(partial(events.record, op="probe", now=clock() - 200 * DAY))
    await mem.db.write(partial(events.record, op="probe", now=clock()))
    await nightly(mem, clock)
    assert mem.value("SELECT COUNT(*) FROM op_events WHERE op = 'probe'") == 1


async def test_vector_changes_are_pruned_with_the_index_off(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    config = memory_config(tmp_path, ollama[1], **{"storage.vector_index": False})
    async with parts(config, clock=clock) as got:
        assert got.db.vector_index is None and got.memory is not None

        def changes(conn: Any) -> None:
            for n in range(3 * retention.UNAPPLIED_CHANGES):
                record_change(conn, "memory_vectors", n)

        await got.db.write(changes)
        await nightly(got.memory, clock)
        left = await got.db.read(
            lambda c: c.execute("SELECT COUNT(*) FROM vector_changes").fetchone()[0]
        )
        assert left == retention.UNAPPLIED_CHANGES
