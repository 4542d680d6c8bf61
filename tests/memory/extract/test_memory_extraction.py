"""Fact extraction jobs: defensive parsing, one reminder then a loud give-up, idempotent re-runs,
near-duplicates merging with history kept, outages answered by the rules at once and refined by
the LLM later."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script, extract_by_keyword, facts_json, history_of, memory_env

from lobug.llm.ask import InvalidOutput
from lobug.llm.embedders import HashingEmbedder
from lobug.memory import settings
from lobug.memory.extract.llm import Extracted, parse_facts
from lobug.memory.instructions import EXTRACT_TASK
from lobug.memory.table.rows import counters
from lobug.workers import queue

TEA = "The user likes green tea."
CAT = "The user has a cat called Tom."


# -- the parser, shape by shape ------------------------------------------------------------------
ARRAY = json.dumps([{"fact": TEA, "type": "preference"}, {"fact": CAT, "type": "personal"}])
SHAPES = {
    "array": ARRAY,
    "fenced": f"```json\n{ARRAY}\n```",
    "fenced_no_lang": f"Here are the facts:\n```\n{ARRAY}\n```\nLet me know!",
    "trailing_prose": f"{ARRAY}\n\nThese are the facts I found in the exchange.",
    "leading_prose": f"Sure! Here is the JSON: {ARRAY}",
    "wrapped": json.dumps({"facts": json.loads(ARRAY)}),
    "wrapped_other_key": json.dumps({"memories": json.loads(ARRAY)}),
    "reasoning": f"<think>The user said {{tea}}; [maybe] a cat?</think>\n{ARRAY}",
    "strings": json.dumps([TEA, CAT]),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_parser_accepts_what_small_models_send(shape: str) -> None:
    got = [c.content for c in parse_facts(SHAPES[shape])]
    assert got == [TEA, CAT]


def test_parser_single_object_types_and_cleanup() -> None:
    single = json.dumps({"fact": "the user  works at NASA", "type": "Personal_Info"})
    assert parse_facts(single) == [Extracted("The user works at NASA.", "personal")]
    kinds = json.dumps([{"fact": TEA, "type": "preferences"}, {"fact": CAT, "type": "pets"}])
    assert [c.category for c in parse_facts(kinds)] == ["preference", "knowledge"]
    dupes = json.dumps([TEA, TEA.upper(), "ok", {"fact": 42}])
    assert parse_facts(dupes) == [Extracted(TEA, "knowledge")]
    assert (
        parse_facts("[]") == []
        and parse_facts("{}") == []
        and parse_facts("```json\n[]\n```") == []
    )


@pytest.mark.parametrize(
    "raw",
    [
        "Sure! The user likes green tea.",
        "",
        "[1, 2, 3]",
        '{"action": "RESPOND", "response": "Nice to meet you"}',
        '[{"fact": 1}, {"fact": null}]',
        '{"facts": "The user likes tea"',
    ],
)
def test_parser_rejects_garbage(raw: str) -> None:
    with pytest.raises(InvalidOutput):
        parse_facts(raw)


# -- the job -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", ["fenced", "trailing_prose", "wrapped", "reasoning"])
async def test_each_shape_stores_facts_with_provenance(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], shape: str
) -> None:
    state, _ = ollama
    state.script = Script(extract=lambda _: SHAPES[shape])
    user, assistant = await mem.exchange("I love green tea and my cat Tom", "Lovely!")
    assert await mem.run() >= 2
    assert mem.facts() == [TEA, CAT]
    assert assistant is not None
    sources = mem.rows("SELECT memory_id, turn_id, reason FROM memory_sources ORDER BY 1, 2")
    ids = [r[0] for r in mem.rows("SELECT id FROM memories ORDER BY id")]
    assert [tuple(r) for r in sources] == [
        (ids[0], user.id, "extracted"),
        (ids[0], assistant.id, "extracted"),
        (ids[1], user.id, "extracted"),
        (ids[1], assistant.id, "extracted"),
    ]
    assert mem.value("SELECT COUNT(*) FROM memory_vectors") == 2
    assert mem.value("SELECT COUNT(*) FROM turn_vectors") == 2
    assert {r["state"] for r in mem.rows("SELECT state FROM jobs")} == {"done"}


async def test_invalid_then_valid_after_the_reminder(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    answers = iter(["I think the user likes tea.", facts_json(TEA)])
    script = Script(extract=lambda _: next(answers))
    state.script = script
    await mem.exchange("I like green tea")
    await mem.run()
    assert mem.facts() == [TEA]
    retry = script.seen["extract"][1]
    assert retry[-2] == {"role": "assistant", "content": "I think the user likes tea."}
    assert "only the JSON array" in retry[-1]["content"]
    assert (await mem.db.read(counters)).get("extraction_invalid_total", 0) == 0


async def test_garbage_twice_falls_back_to_the_heuristic_facts_loudly(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], caplog: pytest.LogCaptureFixture
) -> None:
    state, _ = ollama
    script = Script(extract=lambda _: "Sorry, I cannot do that.")
    state.script = script
    await mem.exchange("I like green tea")
    with caplog.at_level(logging.WARNING):
        await mem.run()
    assert len(script.seen["extract"]) == 2  # the answer, and one reminder
    (job,) = mem.jobs("extract")
    assert job["state"] == "done"
    # Never silently discarded: the exchange's facts come from the heuristic rules instead.
    assert mem.facts() == [TEA]
    row = mem.rows("SELECT rules, attributes FROM memories")[0]
    assert json.loads(row["rules"]) == ["preference.like"]
    assert json.loads(row["attributes"])["source"] == "heuristic"
    found = await mem.db.read(counters)
    assert found["extraction_invalid_total"] == 1 and found["extraction_fallback_total"] == 1
    assert any(
        "invalid twice" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records
    )


async def test_rerunning_an_extract_job_adds_nothing(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    script = Script(extract=lambda _: facts_json(TEA, CAT))
    state.script = script
    await mem.exchange("tea and Tom")
    await mem.run()
    assert mem.facts() == [TEA, CAT]
    # As if the process died after the commit and the job ran again.
    await mem.db.write(
        lambda c: c.execute("UPDATE jobs SET state = 'running' WHERE kind = 'extract'")
    )
    await mem.db.write(lambda c: queue.recover(c, now=mem.clock()))
    await mem.run()
    assert mem.facts() == [TEA, CAT]
    assert len(script.seen["extract"]) == 1, "a finished extraction must not call the LLM again"
    assert mem.value("SELECT COUNT(*) FROM memories") == 2
    # The same fact said again in a later turn is one more mention, not a second row.
    await mem.exchange("did I tell you about the tea")
    await mem.run()
    assert mem.facts() == [TEA, CAT]
    assert [r[0] for r in mem.rows("SELECT mention_count FROM memories ORDER BY id")] == [2, 2]
    assert [h["event"] for h in await mem.db.read(history_of, 1)] == ["ADD", "MERGE"]


def _distance(a: str, b: str) -> float:
    ea, eb = (HashingEmbedder(64).embed_one(t) for t in (a, b))
    return 1.0 - sum(x * y for x, y in zip(ea, eb, strict=True))


STAMPS = "The user collects rare vintage stamps from old European postal archives."
STAMPS_2 = "The user collects rare vintage stamps from old Asian postal archives."
FAR = "The user plays the cello in a community orchestra on Tuesdays."


@pytest.mark.parametrize("margin", [+0.001, -0.001])
async def test_the_vector_band_merges_exactly_below_the_threshold(
    tmp_path: Path,
    ollama: tuple[FakeOllamaState, str],
    clock: Any,
    margin: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state, url = ollama
    distance = _distance(STAMPS, STAMPS_2)
    assert distance < 0.3 and _distance(STAMPS, FAR) > 0.5
    policy = settings.WritePolicy(
        duplicate_distance=round(distance + margin, 6),
        near_jaccard=1.0,  # words alone never merge here: the band decides
    )
    monkeypatch.setattr(settings, "write_policy", lambda config: policy)
    table = {"Europe": [STAMPS], "Asia": [STAMPS_2], "cello": [FAR]}
    state.script = Script(extract=extract_by_keyword(table))
    async with memory_env(tmp_path, url, clock) as mem:
        first, _ = await mem.exchange("stamps from Europe")
        await mem.run()
        await mem.exchange("the cello")
        await mem.run()
        second, _ = await mem.exchange("stamps from Asia")
        await mem.run()
        if margin < 0:  # threshold just below the distance: a second fact
            assert mem.facts() == [STAMPS, FAR, STAMPS_2]
            return
        assert mem.facts() == [STAMPS, FAR]  # merged into the first: nothing archived
        row = mem.rows("SELECT * FROM memories WHERE content = ?", STAMPS)[0]
        assert (row["mention_count"], row["hits"]) == (2, 1)
        events = await mem.db.read(history_of, row["id"])
        assert [e["event"] for e in events] == ["ADD", "MERGE"]
        merge = events[-1]
        assert (merge["old_value"], merge["new_value"]) == (STAMPS, STAMPS_2)
        assert merge["meta"]["reason"] == "near_duplicate"
        assert abs(merge["meta"]["distance"] - distance) < 1e-3
        sources = {r[0] for r in mem.rows("SELECT turn_id FROM memory_sources")}
        assert {first.id, second.id} <= sources


async def test_ollama_down_during_extraction_stores_rules_now_and_refines_later(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    state.script = Script(extract=lambda _: facts_json(TEA))
    state.memory_mode = "down"
    await mem.exchange("I like green tea")
    await mem.run()
    first, refine = mem.jobs("extract")
    assert (first["state"], first["attempts"]) == ("done", 1)
    assert mem.facts() == [TEA]  # the heuristic rule's fact, at once
    assert (refine["state"], json.loads(refine["payload"])["refine"]) == ("pending", True)
    assert await mem.run() == 0  # the refine pass waits: nothing runs, nothing sleeps
    clock.advance(refine["run_after"] - clock() + 0.01)
    await mem.run()  # still down: the refine pass backs off, nothing is written twice
    refine = mem.jobs("extract")[1]
    assert (refine["state"], refine["attempts"]) == ("pending", 1)
    assert "LLM unavailable" in refine["last_error"] and refine["run_after"] > clock()
    state.memory_mode = "ok"
    clock.advance(refine["run_after"] - clock() + 0.01)
    await mem.run()
    refine = mem.jobs("extract")[1]
    assert (refine["state"], refine["attempts"]) == ("done", 2)
    # The model said what the rule said: no second row, and still one mention.
    assert mem.facts() == [TEA]
    assert mem.value("SELECT mention_count FROM memories") == 1
    assert [h["event"] for h in await mem.db.read(history_of, 1)] == ["ADD"]
    # Seed 000's extraction figures: each extractor's runs, failures and latency.
    ops = {
        r["op"]: (r["runs"], r["failures"])
        for r in mem.rows(
            "SELECT op, SUM(count) AS runs, SUM(failures) AS failures FROM op_events"
            " WHERE op LIKE 'extract_%' GROUP BY op"
        )
    }
    assert ops == {"extract_llm": (1, 2), "extract_heuristic": (1, 0)}


async def test_embedder_outage_is_retried_and_reported(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, url = ollama
    state.embed_dim = 64
    state.models.append("house-embed:latest")
    # A model whose size lobug does not know (a known one at 64-d stops the config itself).
    overrides = {"embedding.backend": "ollama", "embedding.model": "house-embed"}
    async with memory_env(tmp_path, url, clock, **overrides) as mem:
        state.mode = "down"
        await mem.exchange("remember the milk", None)
        await mem.run()
        job = mem.jobs("embed_turn")[0]
        assert job["state"] == "pending" and "embedder unavailable" in job["last_error"]
        report = await mem.service.embedding_status()
        assert "is failing" in report["problem"]
        state.mode = "ok"
        clock.advance(60)
        await mem.run()
        assert mem.jobs("embed_turn")[0]["state"] == "done"
        assert mem.value("SELECT COUNT(*) FROM turn_vectors") == 1
        assert (await mem.service.embedding_status())["problem"] is None


async def test_embed_jobs_are_batched(mem: MemoryEnv) -> None:
    for i in range(6):
        await mem.exchange(f"note number {i}", f"noted {i}")
    await mem.run()
    assert mem.value("SELECT COUNT(*) FROM turn_vectors") == 12
    # The first job embedded every pending turn in one call and settled the other jobs.
    jobs = mem.jobs("embed_turn")
    assert len(jobs) == 12 and {j["state"] for j in jobs} == {"done"}
    assert [j["attempts"] for j in jobs] == [1] + [0] * 11


async def test_a_degraded_turn_is_extracted_from_the_user_text_later(
    make_client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    from contract import assert_valid
    from memory_kit import drain

    from lobug import keys

    state, _ = ollama
    script = Script(extract=lambda _: facts_json(TEA))
    state.script = script
    client = await make_client()
    path = client.app[keys.CONFIG].storage.db_path
    state.mode = "down"  # Ollama is down for the turn and for the memory work
    resp = await client.post("/chat/text", json={"text": "I like green tea"})
    body = await resp.json()
    assert_valid("chat_text.response", body)
    assert body["degraded"] is True
    await drain(path, clock)
    # The rules' fact is stored at once; the LLM pass is owed.
    assert [r[0] for r in query(path, "SELECT content FROM memories")] == [TEA]
    first, refine = query(path, "SELECT * FROM jobs WHERE kind = 'extract' ORDER BY id")
    assert first["state"] == "done" and refine["state"] == "pending"
    assert json.loads(refine["payload"])["assistant_turn_id"] is None
    state.mode = "ok"
    clock.advance(60)
    client.app[keys.RUNNER].wake()
    await drain(path, clock)
    assert query(path, "SELECT state FROM jobs WHERE id = ?", refine["id"])[0][0] == "done"
    assert [tuple(r) for r in query(path, "SELECT content, mention_count FROM memories")] == [
        (TEA, 1)
    ]
    # The apology is not part of what the model was shown.
    assert script.seen["extract"][-1][1]["content"] == f"{EXTRACT_TASK}\nUser: I like green tea"


async def test_an_answer_nested_too_deep_falls_back_to_the_heuristic_facts(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    """Issue 38: JSON nested ~1,000 deep raised RecursionError, which no parser caught: the job
    failed for good with no fact kept, not even the heuristic ones."""
    state, _ = ollama
    script = Script(extract=lambda _: "[" * 1500 + "]" * 1500)
    state.script = script
    await mem.exchange("I like green tea")
    await mem.run()
    assert len(script.seen["extract"]) == 2  # the answer, and one reminder
    (job,) = mem.jobs("extract")
    assert job["state"] == "done"
    assert mem.facts() == [TEA]
    row = mem.rows("SELECT attributes FROM memories")[0]
    assert json.loads(row["attributes"])["source"] == "heuristic"


async def test_the_model_is_told_to_skip_chitchat_and_an_empty_answer_stores_nothing(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    """Seed 004 §4.2, "be selective" (docs/seeds.md row 29): the extraction's instructions tell
    the model to skip greetings, chitchat and filler, and a greeting it finds nothing in (an
    empty list) leaves no memory, neither the model's nor a heuristic one."""
    state, _ = ollama
    script = Script(extract=lambda _: "[]")
    state.script = script
    await mem.exchange("Hi Lo-Bug, good morning! How are you?", "Good morning! I'm well.")
    await mem.run()
    ((system, *_),) = script.seen["extract"]
    assert system["role"] == "system"
    assert "Be selective." in system["content"]
    assert "Skip greetings, chitchat, filler" in system["content"]
    assert mem.facts(status=None) == []
    assert {j["state"] for j in mem.jobs("extract")} == {"done"}
