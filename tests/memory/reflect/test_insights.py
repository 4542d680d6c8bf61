"""Theory-of-mind insights (seed 001 §3): 1-3 third-person notes, kind `insight`, category
`relationship_dynamic`, at most once in 24 h, low retrieval weight, in the prompt."""

from __future__ import annotations

import json
from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv
from thinking_kit import canned, prompt

from lobug.memory.reflect import insights
from lobug.memory.reflect.jobs import INSIGHTS
from lobug.memory.search.scoring import INSIGHT_WEIGHT, ScoringWeights, status_weight

DAY = 86400.0


async def test_insights_are_written_and_shown_in_the_prompt(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].thinking = canned()
    await mem.exchange("Just tell me the weather, short please.", "Sunny, 20 degrees.")
    await mem.run()
    await mem.service._think()
    await mem.run()
    rows = mem.rows("SELECT * FROM memories WHERE kind = 'insight' ORDER BY id")
    assert [r["content"] for r in rows] == [
        "The user prefers short, direct answers.",
        "The user cares a lot about running.",
    ]
    assert {r["category"] for r in rows} == {"relationship_dynamic"}
    assert [r["importance"] for r in rows] == [0.4, 0.8]
    (call,) = ollama[0].memory_calls("insight")
    assert "short please" in call["body"]["messages"][1]["content"]
    assert call["body"]["options"]["temperature"] == 0.0
    assert call["body"]["options"]["num_predict"] == 220  # seed 001 §3: a bounded answer
    text = await prompt(mem)
    assert "[How the user communicates]\n- The user cares a lot about running." in text
    # Within 24 hours: skipped, even with new words; after that, a new run.
    clock.advance(DAY - 60)
    await mem.exchange("And tomorrow?", "Rain.")
    await mem.run()
    await mem.service._think()
    assert len(mem.jobs(INSIGHTS)) == 1
    clock.advance(120)
    await mem.service._think()
    await mem.run()
    assert len(ollama[0].memory_calls("insight")) == 2
    # The same insights again are not stored twice.
    assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'insight'") == 2


async def test_nothing_said_since_the_last_run_is_no_run(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    await mem.exchange("Hello.", "Hi!")
    await mem.run()
    await mem.service._think()
    await mem.run()
    assert [j["state"] for j in mem.jobs(INSIGHTS)] == ["done"]  # the default: no insight
    assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'insight'") == 0
    clock.advance(2 * DAY)
    await mem.service._think()
    assert len(mem.jobs(INSIGHTS)) == 1


async def test_garbage_and_outage(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.thinking = canned(insight="I think the user is nice")
    await mem.exchange("Hello.", "Hi!")
    await mem.run()
    await mem.service._think()
    await mem.run()
    (job,) = mem.jobs(INSIGHTS)
    assert job["state"] == "failed"
    assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'insight'") == 0
    clock.advance(DAY + 1)
    await mem.exchange("Hello again.", "Hi!")
    state.thinking = canned()
    state.memory_mode = "down"
    await mem.run()
    await mem.service._think()
    for _ in range(mem.config.workers.max_attempts + 2):
        await mem.run()
        clock.advance(mem.config.workers.backoff_max_s * 2)
    assert mem.jobs(INSIGHTS)[-1]["state"] == "pending"
    state.memory_mode = "ok"
    await mem.run()
    assert mem.jobs(INSIGHTS)[-1]["state"] == "done"
    assert mem.value("SELECT COUNT(*) FROM memories WHERE kind = 'insight'") == 2


def test_parse_keeps_third_person_insights_of_at_most_280_characters() -> None:
    raw = json.dumps(
        {
            "insights": [
                {"summary": "I feel the user likes me.", "importance": 2},
                {"summary": "The user " + "really " * 60 + "likes detail."},
                {"summary": "The user values punctuality.", "tags": ["values"], "importance": 9},
                {"summary": "The user tests answers twice."},
                {"summary": "The user jokes when stressed."},
                {"summary": "The user is a fifth one."},
            ]
        }
    )
    found = insights.parse(raw)
    assert [text for text, _, _ in found] == [
        "The user values punctuality.",
        "The user tests answers twice.",
        "The user jokes when stressed.",
    ]
    assert found[0][1:] == (("values",), 1.0)
    assert insights.parse('{"insights": []}') == []


def test_insights_weigh_less_in_retrieval() -> None:
    weights = ScoringWeights()
    assert status_weight({"kind": "insight", "valid_until": None}, weights) == INSIGHT_WEIGHT < 1
    assert status_weight({"kind": "fact", "valid_until": None}, weights) == 1.0
