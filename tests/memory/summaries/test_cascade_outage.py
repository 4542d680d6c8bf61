"""Issue 16 #14: an Ollama outage never fails a cascade job, however long it lasts."""

from __future__ import annotations

from typing import Any

import pytest
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script

from lobug.memory import enqueue
from lobug.memory.summaries.cascades import count_unincorporated, count_unsummarized
from lobug.workers.runner import BACKOFF_MAX_S

BASE = (
    "User Profile:\n- Name: Alex\nPreferences:\n- Green tea\n"
    "Ongoing Topics:\n- The Lo-Bug build\nKey History:\n- Moved to Seattle"
)


@pytest.fixture
def script(ollama: tuple[FakeOllamaState, str]) -> Script:
    script = Script(
        summarize=lambda transcript: "The user and Lo-Bug talked about the weather at length.",
        distill=lambda _: BASE,
    )
    ollama[0].script = script
    return script


async def messages(mem: MemoryEnv, count: int) -> None:
    for i in range(0, count, 2):
        await mem.exchange(f"message {i}", f"message {i + 1}")


async def outage(mem: MemoryEnv, clock: Any, kind: str, rounds: int) -> None:
    """Run the queue `rounds` times during the outage, past every backoff."""
    for _ in range(rounds):
        await mem.run()
        clock.advance(BACKOFF_MAX_S * 2)
        for job in mem.jobs(kind):
            assert job["state"] == "pending", dict(job)


@pytest.mark.parametrize("mode", ["memory_down", "all_down", "reset", "empty"])
async def test_cascade_short_outage_longer_than_max_attempts_stays_pending(
    mem: MemoryEnv, script: Script, ollama: tuple[FakeOllamaState, str], clock: Any, mode: str
) -> None:
    state = ollama[0]
    await messages(mem, 30)
    if mode == "memory_down":
        state.memory_mode = "down"
    elif mode == "all_down":
        state.mode = "down"
    else:
        state.mode = mode
    max_attempts = mem.config.workers.max_attempts
    await outage(mem, clock, enqueue.CASCADE_SHORT, max_attempts + 3)
    (job,) = mem.jobs(enqueue.CASCADE_SHORT)
    assert job["attempts"] > max_attempts
    assert await mem.db.read(count_unsummarized, "default") == 30
    assert mem.rows("SELECT id FROM memories WHERE kind = 'summary'") == []
    state.memory_mode = state.mode = "ok"
    await mem.run()
    assert mem.jobs(enqueue.CASCADE_SHORT)[0]["state"] == "done"
    assert await mem.db.read(count_unsummarized, "default") == 10


async def test_cascade_long_outage_longer_than_max_attempts_stays_pending(
    mem: MemoryEnv, script: Script, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    from lobug.memory.table import rows as store

    def insert(conn: Any) -> None:
        for i in range(20):
            store.insert_memory(
                conn,
                user_id="default",
                kind="summary",
                content=f"Summary {i}.",
                now=clock(),
                actor="test",
            )
        enqueue.per_user(
            conn,
            enqueue.CASCADE_LONG,
            user_id="default",
            now=clock(),
        )

    await mem.db.write(insert)
    ollama[0].memory_mode = "down"
    await outage(mem, clock, enqueue.CASCADE_LONG, mem.config.workers.max_attempts + 3)
    assert await mem.db.read(count_unincorporated, "default") == 20
    ollama[0].memory_mode = "ok"
    await mem.run()
    assert mem.jobs(enqueue.CASCADE_LONG)[0]["state"] == "done"
    assert await mem.db.read(count_unincorporated, "default") == 10


async def test_cascade_short_through_llm_timeouts_stays_pending(
    tmp_path: Any, script: Script, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    from memory_kit import memory_env

    state, url = ollama
    overrides = {"memory.llm_timeout_s": 0.2, "ollama.timeout_s": 0.2}
    async with memory_env(tmp_path, url, clock, **overrides) as mem:
        await messages(mem, 30)
        # Only the cascade is under test: the extraction jobs would time out too, slowly.
        await mem.db.write(lambda c: c.execute("DELETE FROM jobs WHERE kind != 'cascade_short'"))
        state.delay_s = 1.0
        await outage(mem, clock, enqueue.CASCADE_SHORT, mem.config.workers.max_attempts + 1)
        state.delay_s = 0
        await mem.run()
        assert mem.jobs(enqueue.CASCADE_SHORT)[0]["state"] == "done"
        assert await mem.db.read(count_unsummarized, "default") == 10
