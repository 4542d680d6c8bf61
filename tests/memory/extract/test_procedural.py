"""Procedural memory (seed 001 §12): "how I like things done" is stored as kind `procedural` at
extraction (rules and model) and comes into the prompt when the user asks to do that task."""

from __future__ import annotations

import json

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script

from lobug.memory.extract.llm import parse_facts
from lobug.memory.extract.procedures import procedural_candidates

COFFEE = (
    "When I make coffee, I first grind the beans, then I heat the water to 94 degrees, "
    "and finally I pour slowly."
)
COFFEE_STEPS = (
    "How the user likes to make coffee: 1) grind the beans; 2) heat the water to 94 degrees; "
    "3) pour slowly."
)
PLANTS = "How the user likes to water the plants: 1) check the soil; 2) water at the base."


def test_rules_find_routines_and_step_lists_not_plain_preferences() -> None:
    found = {
        text: [c.content for c in procedural_candidates(text)]
        for text in (
            COFFEE,
            "My morning routine is stretching, then a cold shower, then coffee.",
            "To clean the bike, first rinse it, then degrease the chain, then oil it.",
            "I like coffee.",
            "When I travel, I pack light.",
            "How do I make coffee?",
        )
    }
    assert list(found.values()) == [
        [COFFEE_STEPS],
        ["The user's morning routine: 1) stretching; 2) a cold shower; 3) coffee."],
        ["How the user likes to clean the bike: 1) rinse it; 2) degrease the chain; 3) oil it."],
        [],
        [],
        [],
    ]
    (cand,) = procedural_candidates(COFFEE)
    assert (cand.kind, cand.category, cand.rules) == (
        "procedural",
        "procedural",
        ("procedure.when",),
    )


def test_the_model_may_label_a_procedure() -> None:
    (item,) = parse_facts(json.dumps([{"fact": PLANTS, "type": "procedural"}]))
    assert item.category == "procedural"


async def test_a_procedure_is_stored_and_recalled_when_the_task_comes_up(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    ollama[0].script = Script(
        extract=lambda exchange: (
            json.dumps([{"fact": PLANTS, "type": "procedural"}]) if "plants" in exchange else "[]"
        )
    )
    await mem.exchange(COFFEE)
    await mem.exchange("I watered the plants today, I check the soil first.")
    await mem.run()
    rows = mem.rows("SELECT content, category FROM memories WHERE kind = 'procedural' ORDER BY id")
    assert [(r[0], r[1]) for r in rows] == [
        (COFFEE_STEPS, "procedural"),
        (PLANTS, "procedural"),
    ]

    async def prompt(text: str) -> str:
        found = (
            await mem.service.prompt_sections(user_id="default", session_id="s2", text=text)
        ).all()
        return "\n\n".join(found)

    asked = await prompt("Can you help me make coffee?")
    assert f"[How the user likes this done]\n- {COFFEE_STEPS}" in asked
    assert PLANTS not in asked
    assert "How the user likes" not in await prompt("What is the weather like?")
    assert PLANTS in await prompt("Time to water the plants.")


async def test_a_model_labelling_a_plain_habit_procedural_gets_a_preference(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    """Seed 001 §12: a procedure only on a clear cue; the model's label alone is a guess."""
    habit = "The user drinks black coffee every morning."
    ollama[0].script = Script(
        extract=lambda exchange: json.dumps([{"fact": habit, "type": "procedural"}])
    )
    await mem.exchange("I drink black coffee every morning.")
    await mem.run()
    rows = mem.rows("SELECT content, kind, category FROM memories")
    assert [tuple(r) for r in rows] == [(habit, "fact", "preference")]
