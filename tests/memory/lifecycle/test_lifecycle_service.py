"""The memory lifecycle through MemoryService and the app, with a controllable clock: GC policy
boundaries, forget/restore, purge leaving no trace, soft deletes never reaching query(), the
context or the prompt, the delta header, session exclusion, and the periodic GC's catch-up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script, drain, extract_by_keyword, memory_env

from lobug import keys
from lobug.memory import service as memory_service
from lobug.memory.query import QueryRequest
from lobug.memory.table.salience import DAY
from lobug.workers.periodic import Periodic, Task

TEA = "The user drinks oolong tea from a blue teapot every afternoon."
GC_KEYS = {"rescored", "promoted", "demoted", "archived", "soft_deleted", "purged"}


@pytest.fixture
async def mem(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MemoryEnv]:
    monkeypatch.setattr(memory_service, "HIT_FLUSH_S", 3600)
    async with memory_env(tmp_path, ollama[1], clock) as env:
        yield env


async def remember(mem: MemoryEnv, content: str = TEA, **fields: Any) -> int:
    row = await mem.service.remember(content=content, actor="test", **fields)
    await mem.run()
    return int(row["id"])


def status(mem: MemoryEnv, memory_id: int) -> str:
    return str(mem.value("SELECT status FROM memories WHERE id = ?", memory_id))


def has_vector(mem: MemoryEnv, memory_id: int) -> bool:
    return bool(mem.value("SELECT COUNT(*) FROM memory_vectors WHERE memory_id = ?", memory_id))


async def test_gc_policies_at_their_boundaries(mem: MemoryEnv, clock: Any) -> None:
    start = clock()
    weak = await remember(mem, importance=0.3)
    pinned = await remember(mem, "The user's passport is in the top drawer.", pinned=True)
    counts = await mem.service.gc()
    assert set(counts) >= GC_KEYS and counts["archived"] == 0 and counts["rescored"] == 2

    clock.now = start + 30 * DAY  # idle exactly 30 days: not yet (seed 000: "> 30 days")
    assert (await mem.service.gc())["archived"] == 0 and status(mem, weak) == "active"
    clock.now = start + 30 * DAY + 1
    assert (await mem.service.gc(actor="api"))["archived"] == 1
    assert status(mem, weak) == "archived" and has_vector(mem, weak)  # still findable
    archive = mem.rows("SELECT * FROM history WHERE memory_id = ? AND event = 'ARCHIVE'", weak)
    assert archive[0]["actor"] == "api" and archive[0]["new_value"] == "archived"

    clock.now = start + 60 * DAY  # TTL (seed 001 §7): idle > 60 days and importance < 0.5
    assert (await mem.service.gc())["soft_deleted"] == 0
    clock.now = start + 60 * DAY + 1
    assert (await mem.service.gc())["soft_deleted"] == 1
    purge_at = mem.value("SELECT purge_at FROM memories WHERE id = ?", weak)
    assert status(mem, weak) == "soft_deleted" and purge_at == clock() + 30 * DAY

    clock.now = purge_at - 1
    assert (await mem.service.gc())["purged"] == 0
    clock.now = purge_at
    assert (await mem.service.gc())["purged"] == 1
    assert mem.value("SELECT COUNT(*) FROM memories WHERE id = ?", weak) == 0
    assert status(mem, pinned) == "active"  # pinned: never archived, TTL'd or purged


async def test_gc_promotes_memories_in_use(mem: MemoryEnv, clock: Any) -> None:
    memory_id = await remember(mem)
    for _ in range(2):
        await mem.service.query(QueryRequest(query="oolong tea teapot"))
    await mem.service.flush_hits()
    assert (await mem.service.gc())["promoted"] == 0  # two hits: not yet
    await mem.service.query(QueryRequest(query="oolong tea teapot"))
    await mem.service.flush_hits()
    clock.advance(7 * DAY)  # seen within 7 days (the boundary counts)
    assert (await mem.service.gc(actor="scheduler"))["promoted"] == 1
    assert mem.value("SELECT layer FROM memories WHERE id = ?", memory_id) == "long"
    (event,) = mem.rows("SELECT * FROM history WHERE event = 'PROMOTE'")
    assert (event["old_value"], event["new_value"], event["actor"]) == ("mid", "long", "scheduler")


async def test_forget_and_restore(mem: MemoryEnv, clock: Any) -> None:
    memory_id = await remember(mem, category="preference")
    assert await mem.service.forget(memory_id, purge=False, actor="api") is True
    row = mem.rows("SELECT * FROM memories WHERE id = ?", memory_id)[0]
    assert row["status"] == "soft_deleted" and row["purge_at"] == clock() + 30 * DAY
    assert not has_vector(mem, memory_id)
    assert await mem.service.query(QueryRequest(query="oolong tea teapot")) == []
    assert await mem.service.forget(memory_id, purge=False, actor="api") is True  # no-op
    assert await mem.service.forget(12345, purge=False, actor="api") is False
    clock.advance(60)
    assert await mem.service.restore(memory_id, actor="api") is True
    row = mem.rows("SELECT * FROM memories WHERE id = ?", memory_id)[0]
    assert (row["status"], row["purge_at"], row["valid_until"]) == ("active", None, None)
    assert [j["state"] for j in mem.jobs("embed_memory")] == ["done", "pending"]  # re-embed
    await mem.run()
    assert has_vector(mem, memory_id)
    (hit,) = await mem.service.query(QueryRequest(query="oolong tea teapot"))
    assert hit.id == memory_id
    sql = "SELECT event FROM history WHERE memory_id = ? ORDER BY id"
    events = [r[0] for r in mem.rows(sql, memory_id)]
    assert events == ["ADD", "SOFT_DELETE", "RESTORE"]
    actors = {r[0] for r in mem.rows("SELECT actor FROM history WHERE memory_id = ?", memory_id)}
    assert actors == {"test", "api"}
    log = mem.rows("SELECT event, meta FROM change_log WHERE memory_id = ? ORDER BY id", memory_id)
    assert [r["event"] for r in log] == ["created", "soft_deleted", "restored"]
    assert TEA not in log[1]["meta"]  # the deletion bullet does not repeat the text
    assert await mem.service.restore(12345, actor="api") is False


async def test_purge_leaves_no_trace(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    secret = "The user's locker code at Zanzibar Gym is 4471."
    neighbour = "The user's locker code at Zanzibar Gym used to be 9001."
    state.script = Script(extract=extract_by_keyword({"locker": [secret, neighbour]}))
    await mem.exchange("my locker code at the gym is 4471")
    await mem.run()
    memory_id = int(mem.value("SELECT id FROM memories WHERE content = ?", secret))
    await mem.service.query(QueryRequest(query="locker code gym"))
    await mem.service.flush_hits()
    await mem.service.forget(memory_id, purge=False, actor="api")
    await mem.service.restore(memory_id, actor="api")  # leaves a pending embed job behind
    assert mem.value("SELECT COUNT(*) FROM relations") == 1

    assert await mem.service.forget(memory_id, purge=True, actor="api") is True
    assert await mem.service.forget(memory_id, purge=True, actor="api") is False
    tables = [
        r[0]
        for r in mem.rows("SELECT name FROM sqlite_master WHERE type = 'table'")
        # The conversation log (turns, turns_fts) stays; FTS shadow tables are checked below.
        if not r[0].startswith(("memories_fts_", "turns"))
    ]
    for table in tables:
        for row in mem.rows(f"SELECT * FROM {table}"):
            for value in tuple(row):
                assert not (isinstance(value, str) and "4471" in value), (
                    table,
                    tuple(row),
                )
    assert mem.rows("SELECT rowid FROM memories_fts WHERE memories_fts MATCH '4471'") == []
    references = {
        "memories": "id = ?",
        "memory_sources": "memory_id = ?",
        "memory_entities": "memory_id = ?",
        "memory_vectors": "memory_id = ?",
        "relations": "from_id = ? OR to_id = ?",
        "change_log": "memory_id = ?",
        "jobs": "json_extract(payload, '$.memory_id') = ?",
    }
    for table, where in references.items():
        params = [memory_id] * where.count("?")
        assert mem.value(f"SELECT COUNT(*) FROM {table} WHERE {where}", *params) == 0, table
    # One content-free PURGE row stays, so history says that something was erased, and when.
    (purge,) = mem.rows("SELECT * FROM history WHERE memory_id = ?", memory_id)
    assert (purge["event"], purge["old_value"], purge["new_value"]) == ("PURGE", None, None)
    assert mem.value("SELECT COUNT(*) FROM entities WHERE canonical_name = 'Zanzibar Gym'") == 1
    # The neighbour keeps its own entity links and rows; the conversation log is untouched.
    assert mem.facts() == [neighbour]
    assert "4471" in mem.rows("SELECT text FROM turns ORDER BY id LIMIT 1")[0][0]


# -- through the app: the chat prompt --------------------------------------------------------
def system_prompt(state: FakeOllamaState) -> str:
    return state.prompt_text()


async def chat(client: Any, text: str, session: str) -> None:
    resp = await client.post("/chat/text", json={"text": text, "session_id": session})
    assert resp.status == 200, await resp.text()


async def test_soft_deleted_memories_never_reach_the_prompt(
    make_client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    client = await make_client(**{"embedding.dim": 256})
    memory = client.app[keys.MEMORY]
    path = client.app[keys.CONFIG].storage.db_path
    row = await memory.remember(content=TEA, actor="test")
    await drain(path, clock)
    await chat(client, "which teapot do I use for oolong tea?", "s1")
    assert f"[Relevant memories]\n- {TEA}" in system_prompt(state)
    await memory.forget(row["id"], purge=False, actor="test")
    await chat(client, "which teapot do I use for oolong tea?", "s1")
    system = system_prompt(state).rsplit("\n\n", 1)[0]  # without the user's words
    assert "oolong" not in system.split("[Current physical state")[0].split("answer.")[-1]
    assert "−soft_deleted: a memory was forgotten" in system  # the header says so, not what
    assert await memory.query(QueryRequest(query="oolong tea teapot")) == []
    recall = await (await client.post("/v1/query", json={"query": "oolong tea teapot"})).json()
    assert TEA not in str(recall)


async def test_the_delta_header_and_current_session_exclusion(
    make_client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    fact = "The user's dog Biscuit is a beagle."
    state.script = Script(extract=extract_by_keyword({"My dog": [fact]}))
    client = await make_client(**{"embedding.dim": 256, "chat.working_memory_size": 4})
    path = client.app[keys.CONFIG].storage.db_path
    await chat(client, "My dog Biscuit is a beagle", "s1")
    await drain(path, clock)
    await chat(client, "Tell me about Biscuit the beagle", "s1")
    system = system_prompt(state)
    # Learned in this session, which the working memory still holds: no [Relevant memories];
    # the delta header says it was created (once).
    assert "[Relevant memories]" not in system
    assert f"Memory updates since rev 0:\n- +created: [personal] {fact} (imp=0.7)" in system
    await chat(client, "Tell me about Biscuit the beagle", "s2")
    assert f"[Relevant memories]\n- {fact}" in system_prompt(state)
    # s2 started after the change. (Its system message may quote s1's last exchanges, the
    # previous session's gist, where the fake model's reply echoed s1's header.)
    assert "Memory updates" not in state.chat_calls()[-1]["body"]["messages"][-1]["content"]
    clock.advance(60)
    await chat(client, "and what else about Biscuit the beagle", "s1")
    assert "Memory updates" not in system_prompt(state)  # shown once per session
    # The window (4 messages) was full and slid to the new words: the teaching turns left
    # s1's working memory, and the fact comes back (a window opens on the user's words, so
    # the reply left behind no longer holds the session's facts out).
    assert f"- {fact}" in system_prompt(state).split("[Relevant memories]")[-1]
    clock.advance(60)
    await chat(client, "what a day", "s1")
    clock.advance(60)
    await chat(client, "Biscuit the beagle again", "s1")
    assert f"- {fact}" in system_prompt(state).split("[Relevant memories]")[-1]

    memory = client.app[keys.MEMORY]
    for i in range(5):
        await memory.remember(content=f"The user owns {i + 2} beagle leashes.", actor="api")
    await chat(client, "leashes", "s1")
    header = system_prompt(state).split("Memory updates since rev ")[1].split("\n\n")[0]
    assert header.count("\n- ") == 3 and header.endswith("(+2 more)")


async def test_periodic_gc_catches_up_once(mem: MemoryEnv, clock: Any) -> None:
    runs: list[float] = []

    async def gc() -> None:
        runs.append(clock())
        await mem.service.gc(actor="scheduler")

    def scheduler() -> Periodic:  # a fresh one per "daemon start": state is in the DB only
        return Periodic(mem.db, clock, [Task("gc", 3600, gc)])

    assert await scheduler().run_due() == []  # first start: the clock starts, nothing to do
    assert mem.value("SELECT last_run FROM periodic_runs WHERE name = 'gc'") == clock()
    clock.advance(3599)
    assert await scheduler().run_due() == []
    clock.advance(1)
    assert await scheduler().run_due() == ["gc"]
    clock.advance(5 * 3600 + 120)  # the daemon was off for five hours
    restarted = scheduler()
    assert await restarted.run_due() == ["gc"]  # caught up once …
    assert await restarted.run_due() == []  # … not once per missed slot
    assert runs == [clock() - 5 * 3600 - 120, clock()]
    assert mem.value("SELECT last_run FROM periodic_runs WHERE name = 'gc'") == clock()


async def test_the_daemon_runs_gc_on_start_after_downtime(
    make_client: Any, make_config: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    config = make_config(**{"lifecycle.gc_interval_s": 3600})
    client = await make_client(config)
    path = config.storage.db_path
    memory = client.app[keys.MEMORY]
    await memory.remember(content=TEA, actor="test")
    for _ in range(100):
        if query(path, "SELECT last_run FROM periodic_runs WHERE name = 'gc'"):
            break
        await asyncio.sleep(0.02)
    assert query(path, "SELECT last_run FROM periodic_runs")[0][0] == clock()
    await client.close()

    clock.advance(DAY)  # off for a day: the nightly pass (03:00 local time) was missed
    again = await make_client(config)
    for _ in range(200):
        if query(path, "SELECT last_run FROM periodic_runs")[0][0] == clock():
            break
        await asyncio.sleep(0.02)
    assert query(path, "SELECT last_run FROM periodic_runs")[0][0] == clock()
    # The pass ran at start with the new clock (once: see the catch-up test above).
    scored = query(path, "SELECT json_extract(attributes, '$.scored_at') FROM memories")
    assert [tuple(r) for r in scored] == [(clock(),)]
    await again.close()


async def test_use_slows_decay_and_decay_ranks_without_deleting(mem: MemoryEnv, clock: Any) -> None:
    """Every retrieval is a spaced repetition: the used fact's decay rate falls at each use,
    so after months it outranks an equally relevant fact said once and never used; and no
    GC pass deletes either of them."""
    start = clock()
    used = await remember(mem, "The user plays chess with Tomas on Fridays.", importance=0.5)
    unused = await remember(mem, "The user plays chess with Ilse on Sundays.", importance=0.5)
    rates = [mem.value("SELECT decay_rate FROM memories WHERE id = ?", used)]
    for week in range(1, 13):
        clock.now = start + week * 7 * DAY
        await mem.service.query(QueryRequest(query="chess with Tomas on Fridays", top_k=1))
        await mem.service.flush_hits()
        await mem.service.gc()
        rates.append(mem.value("SELECT decay_rate FROM memories WHERE id = ?", used))
    assert all(b < a for a, b in zip(rates, rates[1:], strict=False))  # stronger every use
    assert rates[-1] < rates[0] / 4
    assert mem.value("SELECT decay_rate FROM memories WHERE id = ?", unused) == rates[0]
    # A use is a counter on the memory, not a history row each (issue 42).
    assert mem.value("SELECT hits FROM memories WHERE id = ?", used) == 12
    assert mem.value("SELECT COUNT(*) FROM history WHERE event = 'HIT'") == 0

    clock.now = start + 200 * DAY
    await mem.service.gc()
    results = await mem.service.query(QueryRequest(query="plays chess", top_k=2))
    assert [r.id for r in results] == [used, unused]
    first, second = (r.explain for r in results)
    # 116 days after its last use the used fact keeps ~30 %; the one said once, under 0.01 %.
    assert first["retrievability"] > 0.25 > 0.0001 > second["retrievability"]
    assert {status(mem, used), status(mem, unused)} <= {"active", "archived"}
    gone = mem.value("SELECT COUNT(*) FROM history WHERE event IN ('SOFT_DELETE', 'TTL')")
    assert gone == 0
