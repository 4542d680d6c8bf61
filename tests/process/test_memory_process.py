"""Memory through the real daemon process: it survives a restart and a kill -9 with work pending."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contract import assert_valid
from daemon_proc import Daemon
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import Script, extract_by_keyword, facts_json

ALEX = "The user's name is Alex and the user works at NASA."
ASK_ALEX = "Alex works at NASA, right?"
ENV = {"LOBUG_EMBEDDING_DIM": "256"}
WORDS = "amber birch cobalt dune ember fjord garnet heron indigo jasper kelp lotus".split()


async def wait_idle(daemon: Daemon, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, health = await daemon.request("GET", "/health")
        if health["queue"]["pending"] == 0 and health["queue"]["running"] == 0:
            return dict(health)
        await asyncio.sleep(0.1)
    raise TimeoutError(f"jobs still pending: {health['queue']}\n{daemon.log()}")


async def test_memories_and_working_memory_survive_a_restart(
    daemons: Callable[..., Daemon], ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    state, _ = ollama
    state.script = Script(extract=extract_by_keyword({"NASA": [ALEX]}))
    db = tmp_path / "data" / "lobug.db"
    daemon = await daemons(env=ENV).start()
    first = "My name is Alex and I work at NASA"
    status, body = await daemon.request(
        "POST", "/chat/text", json={"text": first, "session_id": "s-keep"}
    )
    assert status == 200
    assert_valid("chat_text.response", body)
    health = await wait_idle(daemon)
    assert health["embedding"]["vectors"] is True
    assert [tuple(r) for r in query(db, "SELECT content, status FROM memories")] == [
        (ALEX, "active")
    ]
    assert await daemon.terminate() == 0

    again = await daemons(env=ENV).start()
    status, body = await again.request(
        "POST", "/chat/text", json={"text": ASK_ALEX, "session_id": "s-keep"}
    )
    assert status == 200
    assert_valid("chat_text.response", body)
    # The deque came back from the log; the fact is not repeated as a relevant memory of the
    # session that said it (the deque holds that), the delta header tells it was learned.
    assert state.conversation() == [first, f"You said: {first}", ASK_ALEX]
    assert "[Relevant memories]" not in state.prompt_text()
    assert f"+created: [personal] {ALEX}" in state.prompt_text()
    # Another conversation gets it from the memory store.
    status, body = await again.request(
        "POST", "/chat/text", json={"text": ASK_ALEX, "session_id": "s-other"}
    )
    assert status == 200
    assert f"[Relevant memories]\n- {ALEX}" in state.prompt_text()
    assert await again.terminate() == 0


def note_fact(exchange: str) -> str:
    number = int(re.search(r"note (\d+)", exchange).group(1))  # type: ignore[union-attr]
    return facts_json(f"The user filed note {number} under the {WORDS[number]} folder.")


async def test_kill9_with_jobs_pending_then_restart_completes_them_once(
    daemons: Callable[..., Daemon], ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    state, _ = ollama
    state.script = Script(extract=note_fact)
    state.memory_delay_s = 0.3  # extraction is slow: work piles up behind the turns
    db = tmp_path / "data" / "lobug.db"
    env = {**ENV, "LOBUG_MEMORY_DUPLICATE_DISTANCE": "0.01", "LOBUG_WORKERS_CONCURRENCY": "1"}
    daemon = await daemons(env=env).start()
    for i in range(len(WORDS)):
        status, _ = await daemon.request("POST", "/chat/text", json={"text": f"note {i}"})
        assert status == 200
    daemon.kill9()
    unfinished = query(db, "SELECT COUNT(*) FROM jobs WHERE state IN ('pending', 'running')")
    assert unfinished[0][0] > 0, "the kill came too late to leave work pending"
    assert query(db, "SELECT COUNT(*) FROM turns")[0][0] == 2 * len(WORDS)

    state.memory_delay_s = 0.0
    again = await daemons(env=env).start()
    await wait_idle(again)
    assert query(db, "SELECT COUNT(*) FROM jobs WHERE state != 'done'")[0][0] == 0
    texts = [r[0] for r in query(db, "SELECT text FROM turns WHERE role = 'user' ORDER BY id")]
    assert texts == [f"note {i}" for i in range(len(WORDS))]
    facts = [r[0] for r in query(db, "SELECT content FROM memories WHERE kind = 'fact'")]
    assert sorted(facts) == sorted(
        f"The user filed note {i} under the {w} folder." for i, w in enumerate(WORDS)
    )
    assert len(set(facts)) == len(facts), "a fact was stored twice"
    per_turn = query(
        db,
        "SELECT t.id, COUNT(s.memory_id) FROM turns t LEFT JOIN memory_sources s"
        " ON s.turn_id = t.id AND s.reason = 'extracted' WHERE t.role = 'user' GROUP BY t.id",
    )
    assert {r[1] for r in per_turn} == {1}
    assert query(db, "SELECT COUNT(*) FROM memory_vectors")[0][0] == len(WORDS)
    assert query(db, "SELECT COUNT(*) FROM turn_vectors")[0][0] == 2 * len(WORDS)
    assert await again.terminate() == 0
