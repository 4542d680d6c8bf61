"""Weekly reflection (seed 003): due with ≥ 3 new facts in 7 days, once a week from Sunday 03:00
local time, through the schedule and the job queue; garbage, outage and the daily budget."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api_kit import make_app
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, drain, memory_env
from thinking_kit import REFLECTION, add_facts, canned, prompt
from tz_kit import AUCKLAND, machine_zone

from lobug import keys
from lobug.memory.reflect.jobs import BUDGET, INSIGHTS, REFLECT
from lobug.memory.upkeep import budget
from lobug.workers.periodic import Periodic
from lobug.workers.runner import BACKOFF_MAX_S

DAY = 86400.0
FACTS = ("The user runs on Sundays.", "The user grows tomatoes.", "The user lives in Seattle.")


async def test_reflection_runs_through_the_queue_and_reaches_the_prompt(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].thinking = canned()
    await add_facts(mem, *FACTS)
    await mem.service._think()  # the periodic task
    assert [j["state"] for j in mem.jobs(REFLECT)] == ["pending"]
    await mem.run()
    (row,) = mem.rows("SELECT * FROM memories WHERE kind = 'reflection'")
    assert row["content"] == REFLECTION
    assert row["decay_rate"] == 0.0 and row["tags"] == '["weekly"]'
    assert [j["state"] for j in mem.jobs(REFLECT)] == ["done"]
    assert f"[Weekly reflection]\n{REFLECTION}" in await prompt(mem)
    # Not again before the next Sunday, whatever is learned meanwhile (the clock starts on a
    # Sunday afternoon in UTC, a Monday morning east of it, so 5 days on is before Sunday).
    clock.advance(5 * DAY)
    await add_facts(mem, "The user bought a bike.", "The user likes jazz.", "The user is 40.")
    await mem.service._think()
    assert len(mem.jobs(REFLECT)) == 1
    clock.advance(1.5 * DAY)
    await mem.service._think()
    await mem.run()
    assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'reflection'") == 2
    assert len(ollama[0].memory_calls("reflect")) == 2


async def test_the_weekly_reflection_comes_on_sunday_and_once_after_downtime(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].thinking = canned()

    async def week(*local: int, facts: tuple[str, ...]) -> int:
        """Learn `facts` at a local time, run the hourly check and the jobs: reflections."""
        clock.now = datetime(*local).timestamp()  # type: ignore[arg-type]
        await add_facts(mem, *facts)
        await mem.service._think()
        await mem.run()
        return int(mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'reflection'"))

    more = ("The user bought a bike.", "The user likes jazz.", "The user is 40.")
    with machine_zone(AUCKLAND):
        assert await week(2026, 3, 4, 10, 0, facts=FACTS) == 1  # a Wednesday: the first one
        assert await week(2026, 3, 7, 23, 59, facts=more) == 1  # Saturday night: not yet
        assert await week(2026, 3, 8, 3, 0, facts=()) == 2  # Sunday 03:00
        assert await week(2026, 3, 8, 22, 0, facts=more) == 2  # once that Sunday
        # Off from Saturday 14th to Wednesday 18th: the missed Sunday's, once.
        assert await week(2026, 3, 18, 9, 0, facts=FACTS) == 3
        assert await week(2026, 3, 18, 10, 0, facts=more) == 3


async def test_fewer_than_three_new_facts_is_no_reflection(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    await add_facts(mem, *FACTS)
    clock.advance(8 * DAY)  # last week's facts do not count
    await add_facts(mem, "The user bought a bike.", "The user likes jazz.")
    await mem.service._think()
    assert mem.jobs(REFLECT) == []
    assert ollama[0].memory_calls("reflect") == []


async def test_garbage_fails_the_job_loudly_and_rests_a_day(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].thinking = canned(reflect='{"oops": ')
    await add_facts(mem, *FACTS)
    await mem.service._think()
    await mem.run()
    (job,) = mem.jobs(REFLECT)
    assert job["state"] == "failed" and "invalid model output" in job["last_error"]
    assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'reflection'") == 0
    assert mem.value("SELECT value FROM meta WHERE key = 'counter.reflect_invalid_total'") == "1"
    await mem.service._think()  # no retry storm: the task rests
    assert len(mem.jobs(REFLECT)) == 1
    clock.advance(DAY + 1)
    ollama[0].thinking = canned()
    await mem.service._think()
    await mem.run()
    assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'reflection'") == 1


async def test_an_outage_never_fails_the_job(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.thinking = canned()
    state.memory_mode = "down"
    await add_facts(mem, *FACTS)
    await mem.service._think()
    rounds = mem.config.workers.max_attempts + 2
    for _ in range(rounds):
        await mem.run()
        clock.advance(BACKOFF_MAX_S * 2)
        assert [j["state"] for j in mem.jobs(REFLECT)] == ["pending"]
    assert mem.jobs(REFLECT)[0]["attempts"] > mem.config.workers.max_attempts
    assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'reflection'") == 0
    state.memory_mode = "ok"
    await mem.run()
    assert [j["state"] for j in mem.jobs(REFLECT)] == ["done"]
    assert mem.value("SELECT content FROM memories WHERE kind = 'reflection'") == REFLECTION


async def test_the_daily_budget_holds_jobs_until_tomorrow(
    tmp_path: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].thinking = canned()
    async with memory_env(tmp_path, ollama[1], clock, **{"reflection.llm_calls_per_day": 1}) as mem:
        await add_facts(mem, *FACTS)
        await mem.exchange("I am training for a half marathon.")
        await mem.run()
        await mem.service._think()
        await mem.run()
        kinds = {
            j["kind"]: j for j in mem.rows("SELECT * FROM jobs") if j["kind"] in (REFLECT, INSIGHTS)
        }
        waiting = [j for j in kinds.values() if j["state"] == "pending"]
        assert len(waiting) == 1 and "budget" in waiting[0]["last_error"]
        assert await mem.db.read(budget.spent, BUDGET, "default", clock()) == 1
        clock.advance(budget.next_day_in(clock()) + 1)
        await mem.run()
        assert all(
            j["state"] == "done"
            for j in mem.rows("SELECT * FROM jobs WHERE kind IN (?, ?)", REFLECT, INSIGHTS)
        )


async def test_the_schedule_survives_a_restart(
    tmp_path: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].thinking = canned()
    interval = 3600.0
    async with memory_env(tmp_path, ollama[1], clock) as mem:
        periodic: Periodic = mem.service.periodic
        assert await periodic.run_due() == []  # the first check only starts the clocks
        await add_facts(mem, *FACTS)
        clock.advance(interval + 1)
        assert "reflection" in await periodic.run_due()
        await mem.run()
        first = mem.value("SELECT last_run FROM periodic_runs WHERE name = 'reflection'")
        assert first == clock()
    clock.advance(10)
    async with memory_env(tmp_path, ollama[1], clock) as mem:  # a restart on the same file
        assert "reflection" not in await mem.service.periodic.run_due()
        clock.advance(3 * 7 * DAY)  # three weeks off: caught up once, not 21 times
        await add_facts(mem, "The user bought a bike.", "The user likes jazz.", "The user is 40.")
        assert "reflection" in await mem.service.periodic.run_due()
        assert "reflection" not in await mem.service.periodic.run_due()
        await mem.run()
        assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'reflection'") == 2


async def test_a_reflection_names_its_sources_and_a_purge_unlinks_one(
    make_client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    """Seed 003's `source_ids` (issue 44): the facts a weekly reflection read are linked to it
    (`derived_from` edges), `why` names them, and purging one leaves no link to it."""
    ollama[0].thinking = canned()
    app = await make_app(make_client)
    facts = [(await app.remember(text, category="personal"))["id"] for text in FACTS]
    await drain(app.db_path, clock)
    await app.client.app[keys.MEMORY]._think()  # the periodic task
    await drain(app.db_path, clock)
    reflection = app.value("SELECT id FROM memories WHERE kind = 'reflection'")
    assert reflection is not None
    why = await app.local.get(f"/v1/memories/{reflection}/why")
    assert why["derived_from"] == sorted(facts)
    edges = app.rows(
        "SELECT to_id FROM relations WHERE from_id = ? AND relation_type = 'derived_from'",
        reflection,
    )
    assert sorted(r[0] for r in edges) == sorted(facts)
    # A fact's own why names the reflection among its relations (the edge's other end).
    fact_why = await app.local.get(f"/v1/memories/{facts[0]}/why")
    assert {"id": reflection, "type": "derived_from", "strength": 1.0} in fact_why["relations"]
    await app.local.call("DELETE", f"/v1/memories/{facts[0]}?purge=true", 200)
    why = await app.local.get(f"/v1/memories/{reflection}/why")
    assert why["derived_from"] == sorted(facts[1:])
    assert app.value("SELECT COUNT(*) FROM relations WHERE to_id = ?", facts[0]) == 0
