"""Theory-of-mind insights (seed 001 §3): 1-3 third-person notes, kind `insight`, category
`relationship_dynamic`, at most once in 24 h, low retrieval weight, in the prompt when they
rank; a confident one sets a benign profile field (seed 001 §10); entities linked (seed 003)."""

from __future__ import annotations

import json
from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, history_of
from thinking_kit import canned, prompt

from lobug.memory.reflect import insights
from lobug.memory.reflect.jobs import INSIGHTS
from lobug.memory.search.scoring import DEMOTED, status_weight
from lobug.workers.runner import BACKOFF_MAX_S

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
    # Not in every prompt: only where it ranks for the turn's words, with the relevant facts,
    # in this turn's part of the prompt (issue 22), not the system message's.
    assert "running" not in await prompt(mem, "hello there")
    sections = await mem.service.prompt_sections(
        user_id="default", session_id="s-other", text="do I care a lot about running"
    )
    assert "- The user cares a lot about running." in "\n".join(sections.turn)
    assert "running" not in "\n".join(sections.stable)
    # Like the reflection, only the owner's prompt: not a caller held to some categories.
    allowed = frozenset({"relationship_dynamic", "personal"})
    held = await mem.service.prompt_sections(
        user_id="default",
        session_id="s-other",
        text="do I care a lot about running",
        categories=allowed,
    )
    assert "running" not in "\n".join(held.all())
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
        clock.advance(BACKOFF_MAX_S * 2)
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
    assert status_weight({"kind": "insight", "valid_until": None}) == DEMOTED < 1
    assert status_weight({"kind": "fact", "valid_until": None}) == 1.0


async def test_a_confident_insight_sets_a_benign_field_never_a_sensitive_one(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    """Seed 001 §10: a benign field (tone) is applied on "ToM with high confidence" (importance
    ≥ 4 of 5); a sensitive one (the name) never without the owner's yes, nor a shy guess."""
    ollama[0].thinking = canned(
        insight=json.dumps(
            {
                "insights": [
                    {"summary": "The user prefers brief casual answers.", "importance": 5},
                    {"summary": "The user prefers to be called Al.", "importance": 5},
                    {"summary": "The user prefers a warm tone.", "importance": 3},
                ]
            }
        )
    )
    await mem.exchange("Keep it short, mate.", "Sure.")
    await mem.run()
    await mem.service._think()
    await mem.run()
    assert mem.facts() == ["The user prefers brief casual answers."]
    (fact_id,) = [r[0] for r in mem.rows("SELECT id FROM memories WHERE kind = 'fact'")]
    insight_id = mem.value(
        "SELECT id FROM memories WHERE kind = 'insight' AND content LIKE '%brief casual%'"
    )
    (proposal,) = mem.rows("SELECT * FROM proposals")
    assert (proposal["field"], proposal["status"], proposal["memory_id"]) == (
        "tone",
        "accepted",
        fact_id,
    )
    accepted = [h for h in await mem.db.read(history_of, fact_id) if h["meta"].get("decision")]
    assert [h["meta"]["decision"] for h in accepted] == ["auto_applied"]
    assert accepted[0]["meta"]["insight"] == insight_id
    assert accepted[0]["actor"] == insights.ACTOR


async def test_an_insight_is_linked_to_the_people_it_names(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    ollama[0].thinking = canned(
        insight=json.dumps({"insights": [{"summary": "The user lights up talking about Jen."}]})
    )
    await mem.exchange("Jen called me today!", "How nice.")
    await mem.run()
    await mem.service._think()
    await mem.run()
    linked = mem.rows(
        "SELECT e.canonical_name FROM memory_entities me JOIN entities e ON e.id = me.entity_id"
        " JOIN memories m ON m.id = me.memory_id WHERE m.kind = 'insight'"
    )
    assert [r[0] for r in linked] == ["Jen"]
