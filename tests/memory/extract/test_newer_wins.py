"""Newer wins, through the extract job: one batched LLM judgement per exchange (same / update /
contradiction), the heuristic judge when the answer is garbage or the LLM is away, memory that
works without Ollama (rules at once, the LLM pass later, across a restart, without duplicates),
idempotent commits, and the write caps."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllamaState, judge_by, judge_pairs
from memory_kit import MemoryEnv, Script, extract_by_keyword, history_of, memory_env

from lobug.memory.extract import job as extract_job
from lobug.memory.query import QueryRequest
from lobug.memory.table.rows import counters

HONDA = "The user drives a Honda to work every day."
TESLA = "The user drives a Tesla to work every day."  # near-identical wording (Jaccard 0.8)
PRIYA = "The user's name is Priya."
NURSE = "The user works as a nurse."


def row_of(mem: MemoryEnv, content: str) -> Any:
    return mem.rows("SELECT * FROM memories WHERE content = ?", content)[0]


async def events(mem: MemoryEnv, memory_id: int) -> list[tuple[str, dict[str, Any]]]:
    return [(h["event"], h["meta"]) for h in await mem.db.read(history_of, memory_id)]


def edges(mem: MemoryEnv, kind: str) -> list[tuple[int, int]]:
    sql = "SELECT from_id, to_id FROM relations WHERE relation_type = ? ORDER BY id"
    return [tuple(r) for r in mem.rows(sql, kind)]


def only(label: str, new_has: str, old_has: str) -> Any:
    return judge_by(lambda new, old: label if new_has in new and old_has in old else "unrelated")


# -- the LLM judge -------------------------------------------------------------------------------
@pytest.mark.parametrize("label", ["update", "contradiction"])
async def test_the_judged_newer_fact_supersedes_a_near_identical_one(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any, label: str
) -> None:
    state, _ = ollama
    state.script = Script(extract=extract_by_keyword({"Honda": [HONDA], "Tesla": [TESLA]}))
    state.judge = only(label, "Tesla", "Honda")
    await mem.exchange("I drive my Honda to work every day")
    await mem.run()
    assert state.memory_calls("judge") == []  # nothing stored yet: nothing to compare
    clock.advance(3600)
    await mem.exchange("I drive a Tesla to work every day")
    await mem.run()
    (call,) = state.memory_calls("judge")  # one call for the exchange
    assert [(new, old) for _, new, _, old in judge_pairs(call["body"])] == [(TESLA, HONDA)]

    assert mem.facts() == [TESLA]
    old, new = row_of(mem, HONDA), row_of(mem, TESLA)
    assert (old["status"], old["valid_until"], old["updated_at"]) == ("archived", clock(), clock())
    assert json.loads(old["attributes"])["superseded_by"] == new["id"]
    assert (new["status"], new["supersedes"]) == ("active", old["id"])
    assert json.loads(new["attributes"])["source"] == "llm"
    # Both histories: the old one ends in SUPERSEDE, the new one starts with ADD.
    old_events = await events(mem, old["id"])
    assert [e for e, _ in old_events] == ["ADD", "SUPERSEDE"]
    meta = old_events[-1][1]
    assert (meta["reason"], meta["superseded_by"], meta["judge"]) == (label, new["id"], "llm")
    new_events = await events(mem, new["id"])
    assert (
        new_events[0] == ("ADD", new_events[0][1]) and new_events[0][1]["supersedes"] == old["id"]
    )
    assert edges(mem, "supersedes") == [(new["id"], old["id"])]
    assert (old["id"], new["id"]) not in edges(mem, "related_to")
    # Asked about the car, the Tesla comes first.
    results = await mem.service.query(QueryRequest(query="which car does the user drive to work"))
    facts = [r.id for r in results if r.kind == "fact"]
    assert facts[0] == new["id"]


@pytest.mark.parametrize("judge", ["llm", "heuristic"])
async def test_same_reinforces_the_stored_fact(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any, judge: str
) -> None:
    state, _ = ollama
    state.script = Script(extract=extract_by_keyword({"Honda": [HONDA], "Tesla": [TESLA]}))
    if judge == "llm":
        state.judge = only("same", "Tesla", "Honda")
    # else: the fake labels nothing and the word overlap (0.8) makes them the same fact
    await mem.exchange("I drive my Honda to work every day")
    await mem.run()
    clock.advance(3600)
    await mem.exchange("I drive a Tesla to work every day")
    await mem.run()
    assert mem.facts() == [HONDA]  # no copy row
    row = row_of(mem, HONDA)
    assert (row["mention_count"], row["hits"]) == (2, 1)
    (merge,) = [m for e, m in await events(mem, row["id"]) if e == "MERGE"]
    reason = "same_fact" if judge == "llm" else "near_duplicate"
    assert (merge["reason"], merge["judge"]) == (reason, judge)


async def test_garbage_from_the_judge_leaves_it_to_the_heuristics(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], caplog: pytest.LogCaptureFixture
) -> None:
    state, _ = ollama
    table = {"Honda": ["The user drives a Honda."], "Tesla": ["The user now drives a Tesla."]}
    state.script = Script(extract=extract_by_keyword(table))
    state.judge = lambda _: "Hmm, they both talk about cars, so probably related?"
    await mem.exchange("I drive a Honda")
    await mem.run()
    with caplog.at_level(logging.WARNING):
        await mem.exchange("I now drive a Tesla")
        await mem.run()
    assert len(state.memory_calls("judge")) == 2  # the answer and one reminder
    # "now" marks a change of state: the heuristic judge calls it an update.
    assert mem.facts() == ["The user now drives a Tesla."]
    old = row_of(mem, "The user drives a Honda.")
    (event, meta) = (await events(mem, old["id"]))[-1]
    assert (event, meta["reason"], meta["judge"]) == ("SUPERSEDE", "update", "heuristic")
    assert (await mem.db.read(counters))["judge_invalid_total"] == 1
    assert any("judge's output was invalid" in r.getMessage() for r in caplog.records)


async def test_unusable_labels_are_judged_by_the_heuristics_pair_by_pair(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    cello = "The user plays the cello in a jazz band."
    table = {"Honda": ["The user drives a Honda."], "cello": [cello]}
    table["Tesla"] = ["The user now drives a Tesla."]
    state.script = Script(extract=extract_by_keyword(table))
    await mem.exchange("I drive a Honda")
    await mem.run()
    await mem.exchange("the cello")
    await mem.run()
    honda, band = row_of(mem, "The user drives a Honda.")["id"], row_of(mem, cello)["id"]

    def answer(body: dict[str, Any]) -> str:
        offered = {stored for _, _, stored, _ in judge_pairs(body)}
        assert offered == {honda, band}
        return json.dumps(
            [
                {"new": 1, "stored": band, "label": "unrelated"},
                {"new": 1, "stored": honda, "label": "newer"},  # not a label
                {"new": 1, "stored": 999, "label": "update"},  # not offered
            ]
        )

    state.judge = answer
    await mem.exchange("I now drive a Tesla")
    await mem.run()
    assert sorted(mem.facts()) == sorted([cello, "The user now drives a Tesla."])
    (_, meta) = (await events(mem, honda))[-1]
    assert (meta["reason"], meta["judge"]) == ("update", "heuristic")
    found = await mem.db.read(counters)
    assert found["judge_dropped_total"] == 2 and "judge_invalid_total" not in found


async def test_a_pinned_fact_is_never_superseded(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    pinned = await mem.service.remember(content=HONDA, actor="test", pinned=True)
    await mem.run()
    state.script = Script(extract=extract_by_keyword({"Tesla": [TESLA]}))
    state.judge = only("update", "Tesla", "Honda")
    await mem.exchange("I drive a Tesla to work every day")
    await mem.run()
    assert mem.facts() == [HONDA, TESLA]  # added beside
    assert row_of(mem, TESLA)["supersedes"] is None
    assert [e for e, _ in await events(mem, pinned["id"])] == ["ADD"]


async def test_an_archived_fact_is_superseded_too_but_never_merged_into(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    honda = await mem.service.remember(content="The user drives a Honda.", actor="test")
    tea = await mem.service.remember(content="The user likes green tea.", actor="test")
    await mem.run()
    # Idle facts the GC archived: still findable, not replaced by anything yet.
    await mem.db.write(lambda c: c.execute("UPDATE memories SET status = 'archived'"))
    clock.advance(3600)
    await mem.exchange("I now drive a Tesla. I like green tea.")
    await mem.run()
    old = row_of(mem, "The user drives a Honda.")
    assert (old["status"], old["valid_until"]) == ("archived", clock())
    new = row_of(mem, "The user now drives a Tesla.")
    assert new["supersedes"] == honda["id"]
    (event, meta) = (await events(mem, honda["id"]))[-1]
    assert (event, meta["reason"], meta["superseded_by"]) == ("SUPERSEDE", "update", new["id"])
    # The repeat of an archived fact is a fact of its own again (the archived row is left).
    assert mem.facts() == ["The user now drives a Tesla.", "The user likes green tea."]
    assert [e for e, _ in await events(mem, tea["id"])] == ["ADD"]


async def test_heuristic_mode_never_asks_the_llm(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, url = ollama
    async with memory_env(tmp_path, url, clock, **{"memory.extraction_mode": "heuristic"}) as mem:
        await mem.service.remember(content="The user drives a Honda.", actor="test")
        await mem.run()
        await mem.exchange("I now drive a Tesla")
        await mem.run()
        assert mem.facts() == ["The user now drives a Tesla."]
        assert state.memory_calls() == []
        (_, meta) = (await events(mem, 1))[-1]
        assert (meta["reason"], meta["judge"]) == ("update", "heuristic")


# -- memory without Ollama -----------------------------------------------------------------------
@pytest.mark.parametrize("label", ["same", "update"])
async def test_the_llm_pass_after_an_outage_refines_without_duplicates(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any, label: str
) -> None:
    state, url = ollama
    llm_nurse = "The user is a nurse at the city hospital."
    leeds = "The user lives in Leeds."
    state.script = Script(extract=lambda _: json.dumps([PRIYA, llm_nurse, leeds]))
    state.memory_mode = "down"
    roomy = {"memory.max_writes_per_turn": 5}  # the caps have a test of their own
    async with memory_env(tmp_path, url, clock, **roomy) as mem:
        user, _ = await mem.exchange("My name is Priya and I work as a nurse")
        await mem.run()
        assert mem.facts() == [PRIYA, NURSE]  # the rules, at once
        sources = {json.loads(r[0])["source"] for r in mem.rows("SELECT attributes FROM memories")}
        assert sources == {"heuristic"}
        assert [j["state"] for j in mem.jobs("extract")] == ["done", "pending"]
    # The daemon restarts; Ollama is back. The owed LLM pass was committed with the facts.
    state.memory_mode = "ok"
    state.judge = only(label, "nurse", "nurse")
    async with memory_env(tmp_path, url, clock, **roomy) as mem:
        clock.advance(extract_job.REFINE_AFTER_S + 1)
        await mem.run()
        assert [j["state"] for j in mem.jobs("extract")] == ["done", "done"]
        (call,) = state.memory_calls("judge")
        # The exact repeat (the name) needs no judgement.
        assert PRIYA not in {new for _, new, _, _ in judge_pairs(call["body"])}
        if label == "same":
            assert mem.facts() == [PRIYA, NURSE, leeds]
        else:  # the model's version replaces the rule's
            assert mem.facts() == [PRIYA, llm_nurse, leeds]
            (_, meta) = (await events(mem, row_of(mem, NURSE)["id"]))[-1]
            assert (meta["reason"], meta["judge"]) == ("update", "llm")
        # One exchange, one mention: the refine pass reinforced nothing.
        assert {r[0] for r in mem.rows("SELECT mention_count FROM memories")} == {1}
        assert mem.value("SELECT COUNT(*) FROM history WHERE event = 'MERGE'") == 0
        assert json.loads(row_of(mem, leeds)["attributes"])["source"] == "llm"
        linked = mem.rows(
            "SELECT DISTINCT turn_id FROM memory_sources WHERE memory_id = ?",
            row_of(mem, leeds)["id"],
        )
        assert user.id in {r[0] for r in linked}
        found = await mem.db.read(counters)
        assert found["extraction_refined_total"] == 1 and found["extraction_fallback_total"] == 1


async def test_a_crash_mid_commit_writes_nothing_and_a_rerun_writes_once(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, _ = ollama
    state.memory_mode = "down"
    real = extract_job.queue.enqueue
    crashes = iter([True])

    def enqueue_then_crash(*args: Any, **kwargs: Any) -> int:
        if next(crashes, False):
            raise RuntimeError("power cut")
        return real(*args, **kwargs)

    await mem.exchange("My name is Priya and I work as a nurse")
    monkeypatch.setattr(extract_job.queue, "enqueue", enqueue_then_crash)
    await mem.run()
    # The facts, the refine job and the completion were one transaction: all rolled back.
    assert mem.facts() == [] and [j["state"] for j in mem.jobs("extract")] == ["pending"]
    await mem.db.write(lambda c: c.execute("UPDATE jobs SET run_after = 0"))
    await mem.run()
    assert mem.facts() == [PRIYA, NURSE]
    assert [j["state"] for j in mem.jobs("extract")] == ["done", "pending"]
    # The first job once more (as if recovered after a crash): nothing new, no second refine.
    first = mem.jobs("extract")[0]["id"]
    await mem.db.write(
        lambda c: c.execute("UPDATE jobs SET state = 'pending' WHERE id = ?", (first,))
    )
    await mem.run()
    assert mem.facts() == [PRIYA, NURSE] and len(mem.jobs("extract")) == 2
    assert {r[0] for r in mem.rows("SELECT mention_count FROM memories")} == {1}


# -- caps ----------------------------------------------------------------------------------------
FIVE = [
    ("The user enjoys long walks along the river.", "preference"),
    ("The user grew up in a small fishing village.", "personal"),
    ("The user knows how to repair old radios.", "knowledge"),
    ("The user prefers oat milk in coffee.", "preference"),
    ("The user has a dentist appointment next month.", "event"),
]


def typed(facts: list[tuple[str, str]]) -> str:
    return json.dumps([{"fact": f, "type": t} for f, t in facts])


async def test_at_most_three_new_rows_per_exchange_the_most_important_kept(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], caplog: pytest.LogCaptureFixture
) -> None:
    state, _ = ollama
    state.script = Script(extract=lambda _: typed(FIVE))
    with caplog.at_level(logging.INFO):
        await mem.exchange("all about me")
        await mem.run()
    # personal 0.7, the preferences 0.6 — in the model's order; knowledge and event dropped.
    assert mem.facts() == [FIVE[0][0], FIVE[1][0], FIVE[3][0]]
    found = await mem.db.read(counters)
    assert found["extraction_capped_total"] == 2 and found["extraction_capped.turn"] == 2
    assert any("over the per-exchange cap" in r.getMessage() for r in caplog.records)
    # Repeats are not capped: three reinforcements and the two new facts fit next time.
    await mem.exchange("all about me, again")
    await mem.run()
    assert sorted(mem.facts()) == sorted(f for f, _ in FIVE)
    counts = {r[0]: r[1] for r in mem.rows("SELECT content, mention_count FROM memories")}
    assert [counts[f] for f, _ in FIVE] == [2, 2, 1, 2, 1]


async def test_at_most_n_new_rows_per_user_per_rolling_day(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, url = ollama
    batches = iter([FIVE[:3], FIVE[3:] + [("The user collects vinyl records.", "preference")]])
    state.script = Script(extract=lambda _: typed(next(batches)))
    async with memory_env(tmp_path, url, clock, **{"memory.max_writes_per_day": 4}) as mem:
        await mem.exchange("first")
        await mem.run()
        await mem.exchange("second")
        await mem.run()
        assert len(mem.facts()) == 4  # 3 + 1
        found = await mem.db.read(counters)
        assert found["extraction_capped.day"] == 2
        # Another user has a budget of their own, and a day later so has this one.
        state.script = Script(extract=lambda _: typed([("The user sings in a choir.", "event")]))
        await mem.exchange("choir", user_id="bob", session_id="s-bob")
        await mem.run()
        assert mem.value("SELECT COUNT(*) FROM memories WHERE user_id = 'bob'") == 1
        clock.advance(86400 + 1)
        state.script = Script(
            extract=lambda _: typed([("The user bakes sourdough bread.", "event")])
        )
        await mem.exchange("bread")
        await mem.run()
        assert "The user bakes sourdough bread." in mem.facts()


async def test_an_imported_history_spends_each_days_budget_on_its_own_day(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    """A year of conversation imported today is not one day of talk (issue 39): each turn's
    facts count against the day it was said."""
    state, url = ollama
    said = [
        ("The user planted basil by the kitchen door.", "The user owns a red wheelbarrow."),
        ("The user's tomatoes got blight in July.", "The user grows pumpkins every autumn."),
        ("The user's neighbour Olga gave them rhubarb.", "The user waters the lawn at dawn."),
    ]
    state.script = Script(
        extract=extract_by_keyword({f"day {d}": list(facts) for d, facts in enumerate(said)})
    )
    async with memory_env(tmp_path, url, clock, **{"memory.max_writes_per_day": 3}) as mem:
        start = clock() - 30 * 86400
        await mem.imported(
            [
                {
                    "session_id": f"s{d}",
                    "role": role,
                    "text": text,
                    "ts": start + d * 86400 + i,
                    "ref": f"s{d}/{i}",
                }
                for d in range(3)
                for i, (role, text) in enumerate(
                    [("user", f"On day {d}: {' '.join(said[d])}"), ("assistant", "Lovely.")]
                )
            ]  # fmt: skip
        )
        kept = mem.facts()
        # More than one day's budget, and every day's first fact (imported as one day of
        # talk, the third day's were all dropped).
        assert len(kept) > 3 and all(facts[0] in kept for facts in said), kept
        # Live talk still has its rolling day: today's budget is 3.
        state.script = Script(extract=lambda _: typed(FIVE))
        await mem.exchange("all about me")
        await mem.run()
        assert len(mem.facts()) == len(kept) + 3


async def test_the_llm_pass_counts_what_the_rules_wrote_for_the_exchange(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    state.memory_mode = "down"
    await mem.exchange("My name is Priya and I work as a nurse")
    await mem.run()
    assert mem.facts() == [PRIYA, NURSE]
    state.memory_mode = "ok"
    state.script = Script(extract=lambda _: typed(FIVE[:2]))
    clock.advance(extract_job.REFINE_AFTER_S + 1)
    await mem.run()
    assert mem.facts() == [PRIYA, NURSE, FIVE[1][0]]  # 2 + 1 = the cap of 3
    assert (await mem.db.read(counters))["extraction_capped_total"] == 1
