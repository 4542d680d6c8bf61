"""Session consolidation (seed 003) through the memory hooks and the job runner, on a real DB:
a session switch enqueues the ended session's job, which waits for its extraction, merges the
duplicates among its facts (and only its), survives an Ollama outage and marks the session."""

from __future__ import annotations

from functools import partial
from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv
from near_duplicates import GROUPS, JUDGE

from lobug.memory import enqueue
from lobug.memory.table import rows as store
from lobug.memory.upkeep.jobs import CONSOLIDATE_SESSION

DAY = 86400.0


def _insert(conn: Any, texts: list[str], *, session_id: str | None, now: float) -> list[int]:
    ids = []
    for text in texts:
        memory_id = store.insert_memory(
            conn, user_id="default", kind="fact", content=text, now=now, actor="fixture",
            importance=0.5, session_id=session_id,
        )  # fmt: skip
        enqueue.embed_memory(conn, memory_id, now=now)
        ids.append(memory_id)
    return ids


async def facts_in(mem: MemoryEnv, session_id: str | None, texts: list[str]) -> list[int]:
    ids = await mem.db.write(partial(_insert, session_id=session_id, now=mem.clock()), texts)
    await mem.run()
    return list(ids)


def consolidated(mem: MemoryEnv, session_id: str) -> Any:
    return mem.value("SELECT consolidated_at FROM sessions WHERE id = ?", session_id)


def active(mem: MemoryEnv, ids: list[int]) -> int:
    marks = ",".join("?" * len(ids))
    return int(
        mem.value(
            f"SELECT COUNT(*) FROM memories WHERE status = 'active' AND id IN ({marks})", *ids
        )
    )


async def test_a_switch_consolidates_the_ended_session_only(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].judge = JUDGE
    await mem.exchange("hello there", session_id="s-old")
    dogs = await facts_in(mem, None, GROUPS[1])  # duplicates of no session (imported)
    await mem.exchange("good morning", session_id="s-a")
    teas = await facts_in(mem, "s-a", GROUPS[0] + GROUPS[2])
    clock.advance(60)
    await mem.exchange("still here", session_id="s-a")  # the same session: nothing ends
    await mem.run()
    assert [j["payload"] for j in mem.jobs(CONSOLIDATE_SESSION)] == [
        '{"user_id": "default", "session_id": "s-old"}'
    ]
    assert active(mem, teas) == 4

    await mem.exchange("a new conversation", session_id="s-b")
    await mem.run()
    (_, job) = mem.jobs(CONSOLIDATE_SESSION)
    assert job["state"] == "done", dict(job)
    assert consolidated(mem, "s-a") is not None and consolidated(mem, "s-b") is None
    assert active(mem, teas) == 2  # one of each pair merged into the other
    # Duplicates outside the session are the daily consolidation's, not this job's.
    assert active(mem, dogs) == 2
    merged = mem.rows("SELECT id FROM memories WHERE status = 'archived'")
    assert {r["id"] for r in merged} <= set(teas)

    # Idempotent: a second job for the same session does nothing.
    before = mem.value("SELECT COUNT(*) FROM history")
    await mem.db.write(
        lambda c: c.execute(
            "UPDATE jobs SET state = 'pending', run_after = 0 WHERE id = ?", (job["id"],)
        )
    )
    await mem.run()
    assert mem.value("SELECT COUNT(*) FROM history") == before


async def test_it_waits_for_the_extraction_and_for_ollama(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.judge = JUDGE
    user, _ = await mem.exchange("I moved my desk today", session_id="s-a")
    await mem.run()
    # A turn whose extraction job was lost (a crash before its commit, an old import).
    await mem.db.write(lambda c: c.execute("DELETE FROM jobs WHERE kind = 'extract'"))
    ids = await facts_in(mem, "s-a", [t for g in GROUPS[:8] for t in g])
    state.memory_mode = "down"
    await mem.exchange("something else", session_id="s-b")
    await mem.run()
    (job,) = mem.jobs(CONSOLIDATE_SESSION)
    assert job["state"] == "pending" and "not extracted" in job["last_error"], dict(job)
    extract = mem.rows("SELECT * FROM jobs WHERE dedupe_key = ?", f"extract:{user.id}")
    assert len(extract) == 1
    clock.advance(31)
    await mem.run()  # extraction ran (heuristics); the pairs the LLM must judge wait
    (job,) = mem.jobs(CONSOLIDATE_SESSION)
    assert job["state"] == "pending" and "LLM" in job["last_error"], dict(job)
    assert consolidated(mem, "s-a") is None

    state.memory_mode = "ok"
    clock.advance(3600)
    await mem.run()
    (job,) = mem.jobs(CONSOLIDATE_SESSION)
    assert job["state"] == "done", dict(job)
    assert consolidated(mem, "s-a") is not None
    assert active(mem, ids) < len(ids) - 4
    assert state.memory_calls("judge")


async def test_the_daily_pass_consolidates_a_session_no_switch_ended(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    """Seed 003, "nightly: the sessions still pending" (docs/seeds.md row 213): a session the
    user never left for another (no switch consolidates it) is consolidated by the periodic
    `consolidate` task once it has been idle a day."""
    ollama[0].judge = JUDGE
    await mem.exchange("good morning", session_id="s-a")
    teas = await facts_in(mem, "s-a", GROUPS[0] + GROUPS[2])
    await mem.run()
    assert await mem.service.periodic.run_due() is not None  # the first check starts its clock
    await mem.run()
    assert mem.jobs(CONSOLIDATE_SESSION) == [] and consolidated(mem, "s-a") is None
    clock.advance(DAY + 1)
    assert "consolidate" in await mem.service.periodic.run_due()
    await mem.run()
    (job,) = mem.jobs(CONSOLIDATE_SESSION)
    assert job["state"] == "done", dict(job)
    assert job["payload"] == '{"user_id": "default", "session_id": "s-a"}'
    assert consolidated(mem, "s-a") is not None
    assert active(mem, teas) == 2  # one of each pair merged into the other
    clock.advance(DAY + 1)  # consolidated: the next night leaves it alone
    assert "consolidate" in await mem.service.periodic.run_due()
    await mem.run()
    assert len(mem.jobs(CONSOLIDATE_SESSION)) == 1
