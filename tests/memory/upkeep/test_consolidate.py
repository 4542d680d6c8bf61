"""Daily consolidation (seed 001 §4) through the schedule and the job runner, on a real DB."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from fake_ollama import FakeOllamaState, judge_by
from memory_kit import MemoryEnv
from near_duplicates import GROUPS, JUDGE, duplicates, insert, load

from lobug.memory.upkeep.jobs import CONSOLIDATE
from lobug.workers.runner import BACKOFF_MAX_S

DAY = 86400.0


async def scheduled(mem: MemoryEnv, clock: Any) -> None:
    """The persisted schedule's first check starts the clock; a day later it enqueues."""
    await mem.service.periodic.run_due()
    clock.advance(DAY + 1)
    assert "consolidate" in await mem.service.periodic.run_due()


async def test_consolidation_merges_the_near_duplicates(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.judge = JUDGE
    ids = await load(mem)
    before = duplicates(mem)
    await scheduled(mem, clock)
    await mem.run()

    after = duplicates(mem)
    (job,) = mem.jobs(CONSOLIDATE)
    assert job["state"] == "done", dict(job)
    calls = len(state.memory_calls("judge"))
    print(
        f"\nconsolidation: duplicates {before} -> {after} over {len(ids)} facts "
        f"({len(GROUPS)} distinct), {calls} LLM call(s)"
    )
    # The test embedder (word hashing, 64-d) puts two pairs below the band (0.50 "is allergic
    # to / has an allergy to", 0.585 "Sunday mornings / every Sunday morning"): left alone.
    assert before == 8 and after == 2
    assert len(mem.facts()) == len(GROUPS) + 2
    # Batched: 5-10 pairs a prompt, not one call per pair.
    assert 1 <= calls <= 2
    merged = mem.rows("SELECT * FROM memories WHERE status = 'archived'")
    assert len(merged) == 6
    for row in merged:
        kept = json.loads(row["attributes"])["merged_into"]
        assert mem.value("SELECT status FROM memories WHERE id = ?", kept) == "active"
        events = mem.rows("SELECT event FROM history WHERE memory_id = ? ORDER BY id", row["id"])
        assert events[-1]["event"] == "MERGE"
        kept_meta = mem.rows(
            "SELECT meta FROM history WHERE memory_id = ? AND event = 'MERGE'", kept
        )
        assert any(json.loads(m["meta"]).get("merged") == row["id"] for m in kept_meta)
    # Counted in the operational events, with the LLM calls of the budget.
    assert mem.value("SELECT SUM(count) FROM op_events WHERE op = 'consolidate_merge'") == 6
    # The entity enrichment before it asked the model too (seed 003: the same daily budget).
    ner_calls = len(state.memory_calls("ner"))
    assert ner_calls == 2  # 20 facts, 10 a call
    assert (
        mem.value("SELECT SUM(count) FROM op_events WHERE op = 'upkeep_llm_call'")
        == calls + ner_calls
    )
    assert mem.value("SELECT SUM(count) FROM op_events WHERE op = 'consolidate'") == 1


async def test_judged_pairs_are_not_asked_again_for_14_days(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.judge = lambda body: "[]"  # the model labels nothing: the heuristics keep all
    await load(mem)
    await scheduled(mem, clock)
    await mem.run()
    first = len(state.memory_calls("judge"))
    assert first >= 1
    fingerprints = mem.value("SELECT COUNT(*) FROM pair_checks")
    assert fingerprints == 6  # every pair in the band
    clock.advance(DAY + 1)
    assert "consolidate" in await mem.service.periodic.run_due()
    await mem.run()
    assert len(state.memory_calls("judge")) == first  # nothing new to ask
    clock.advance(14 * DAY)
    # Two weeks on the facts are no longer new: only important ones stay in the pool.
    await mem.db.write(lambda conn: conn.execute("UPDATE memories SET importance = 0.8"))
    await mem.service.periodic.run_due()
    await mem.run()
    assert len(state.memory_calls("judge")) > first  # forgotten: asked again


async def test_garbage_answers_fall_back_to_the_heuristics(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.judge = lambda body: "I think they are kind of similar, maybe?"
    await load(mem)
    before = len(mem.facts())
    await scheduled(mem, clock)
    await mem.run()
    (job,) = mem.jobs(CONSOLIDATE)
    assert job["state"] == "done"
    assert mem.value("SELECT value FROM meta WHERE key = 'counter.consolidate_invalid_total'")
    # The heuristic judge merges only what it is sure of; nothing is lost.
    assert 0 < before - len(mem.facts()) < 8
    assert mem.value("SELECT COUNT(*) FROM pair_checks WHERE judge = 'heuristic'") == 6


async def test_an_outage_keeps_the_job_waiting_and_loses_nothing(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.judge = JUDGE
    await load(mem)
    before = len(mem.facts())
    state.memory_mode = "down"
    await scheduled(mem, clock)
    for _ in range(mem.config.workers.max_attempts + 2):
        await mem.run()
        clock.advance(BACKOFF_MAX_S * 2)
        (job,) = mem.jobs(CONSOLIDATE)
        assert job["state"] == "pending", dict(job)
    # Only the merges no LLM was needed for; every other fact waits.
    assert len(mem.facts()) >= before - 8
    assert mem.value("SELECT COUNT(*) FROM pair_checks WHERE judge = 'llm'") == 0
    state.memory_mode = "ok"
    await mem.run()
    assert mem.jobs(CONSOLIDATE)[0]["state"] == "done"
    assert duplicates(mem) == 2  # the two pairs below the band, as without the outage


async def test_the_daily_llm_budget_makes_the_job_wait(
    tmp_path: Any, ollama: tuple[FakeOllamaState, str], clock: Any, monkeypatch: Any
) -> None:
    from memory_kit import memory_env

    from lobug.memory.upkeep import consolidate

    state = ollama[0]
    state.judge = JUDGE
    monkeypatch.setattr(consolidate, "PAIRS_PER_PROMPT", 2)
    async with memory_env(tmp_path, ollama[1], clock, **{"upkeep.llm_calls_per_day": 1}) as mem:
        await load(mem)
        await scheduled(mem, clock)
        await mem.run()
        (job,) = mem.jobs(CONSOLIDATE)
        assert job["state"] == "pending"
        assert "budget" in job["last_error"]
        assert len(state.memory_calls("judge")) == 1
        clock.advance(DAY)
        await mem.run()
        assert mem.jobs(CONSOLIDATE)[0]["state"] == "done"
        assert duplicates(mem) == 2


async def test_the_schedule_survives_a_restart_and_catches_up_once(
    tmp_path: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    from memory_kit import memory_env

    ollama[0].judge = JUDGE
    async with memory_env(tmp_path, ollama[1], clock) as mem:
        await load(mem)
        await scheduled(mem, clock)
        await mem.run()
        ran_at = mem.value("SELECT last_run FROM periodic_runs WHERE name = 'consolidate'")
        assert ran_at == clock()
    clock.advance(3600)
    async with memory_env(tmp_path, ollama[1], clock) as mem:
        assert "consolidate" not in await mem.service.periodic.run_due()  # not due yet
        clock.advance(5 * DAY)  # the daemon was off for days: one run, not five
        assert "consolidate" in await mem.service.periodic.run_due()
        assert "consolidate" not in await mem.service.periodic.run_due()
        assert len(mem.jobs(CONSOLIDATE)) == 2


async def test_an_update_between_two_stored_facts_retires_the_older(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    """Seed 001 §4: labels apply as at write time; two facts that missed each other when
    written (here: stored directly, as an import does) do not both stay current."""
    old_text, new_text = "The user lives in Portland.", "The user lives in Seattle now."
    state = ollama[0]
    state.judge = judge_by(lambda new, old: "update" if (new, old) == (new_text, old_text)
                           else "unrelated")  # fmt: skip
    (old,) = await mem.db.write(partial(insert, now=clock()), [old_text])
    clock.advance(60)
    (new,) = await mem.db.write(partial(insert, now=clock()), [new_text])
    await mem.run()  # their vectors
    await scheduled(mem, clock)
    await mem.run()
    assert state.memory_calls("judge")
    assert mem.facts() == [new_text]
    assert mem.value("SELECT status FROM memories WHERE id = ?", old) == "archived"
    event = mem.rows("SELECT * FROM history WHERE memory_id = ? ORDER BY id DESC LIMIT 1", old)[0]
    meta = json.loads(event["meta"])
    assert (event["event"], event["actor"]) == ("SUPERSEDE", "consolidator")
    assert (meta["reason"], meta["superseded_by"], meta["judge"]) == ("update", new, "llm")
    edge = mem.rows("SELECT from_id, to_id FROM relations WHERE relation_type = 'supersedes'")
    assert [tuple(e) for e in edge] == [(new, old)]
    assert mem.value("SELECT SUM(count) FROM op_events WHERE op = 'consolidate_supersede'") == 1
