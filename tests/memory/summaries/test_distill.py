"""The base memory held to seed 004 (§4.2, §7.2) through its two jobs, `cascade_long` and
`base_from_facts`: four headings or a re-ask, at most `base_memory_max_words`, the facts chosen
by a broad KNN query (the top facts while vectors are off); and summaries linked to the
entities they name (seed 003)."""

from __future__ import annotations

from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script

from lobug.llm.embedders import EmbeddingUnavailable
from lobug.memory import enqueue, instructions
from lobug.memory.reflect.jobs import BASE_FROM_FACTS
from lobug.memory.summaries.distill import words
from lobug.memory.table import rows as store

GARDEN = [f"The user grows {v} tomatoes in the garden beds." for v in ("cherry", "plum", "roma")]
# More important than the garden facts: the top facts by importance would be these.
OTHERS = [f"The user's cousin number {n} lives abroad." for n in range(12)]
SUMMARY = "The user and Lo-Bug talked about the tomatoes in the garden beds."
DOC = (
    "User Profile:\n- Alex\nPreferences:\n- Green tea\nOngoing Topics:\n- The garden\n"
    "Key History:\n- Moved to Seattle"
)


async def add(mem: MemoryEnv, kind: str, texts: list[str], importance: float = 0.5) -> None:
    """Memories written as the daemon does, their vectors made by the embed_memory jobs."""

    def write(conn: Any) -> None:
        for text in texts:
            memory_id = store.insert_memory(
                conn,
                user_id="default",
                kind=kind,
                content=text,
                now=mem.clock(),
                actor="test",
                importance=importance,
            )
            enqueue.embed_memory(conn, memory_id, now=mem.clock())

    await mem.db.write(write)
    await mem.run()


async def long_cascade(mem: MemoryEnv) -> None:
    await mem.db.write(
        lambda c: enqueue.per_user(c, enqueue.CASCADE_LONG, user_id="default", now=mem.clock())
    )
    await mem.run()


def known_facts(messages: list[dict[str, str]]) -> list[str]:
    body = next(m["content"] for m in messages if m["role"] == "user")
    return [line[2:] for line in body.split("Known facts:\n", 1)[1].splitlines()]


async def test_the_long_cascade_distils_the_facts_nearest_its_summaries(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    script = Script(distill=lambda _: DOC)
    ollama[0].script = script
    await add(mem, "fact", OTHERS, importance=0.9)
    await add(mem, "fact", GARDEN, importance=0.3)
    await add(mem, "summary", [SUMMARY] * 20)
    await long_cascade(mem)
    (messages,) = script.seen["distill"]
    facts = known_facts(messages)
    assert len(facts) == 10  # seed 004 §7.2: top 10
    assert set(GARDEN) <= set(facts), "the facts about what is distilled, not the loudest ones"
    assert mem.value("SELECT content FROM base_memory") == DOC


async def test_without_vectors_the_top_facts_stand_in(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    script = Script(distill=lambda _: DOC)
    ollama[0].script = script
    await add(mem, "fact", OTHERS[:10], importance=0.9)
    await add(mem, "fact", GARDEN, importance=0.3)
    await add(mem, "summary", [SUMMARY] * 20)

    async def down(texts: Any) -> list[list[float]]:
        raise EmbeddingUnavailable("down")

    mem.service.embedder.embed = down  # type: ignore[method-assign]
    await long_cascade(mem)
    (messages,) = script.seen["distill"]
    assert known_facts(messages) == OTHERS[:10]  # the most important; no garden fact
    assert mem.value("SELECT content FROM base_memory") == DOC  # distilled all the same


async def test_a_document_without_all_four_headings_is_asked_for_again(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    answers = iter(["User Profile:\n- Alex\nPreferences:\n- Green tea", DOC])
    script = Script(distill=lambda _: next(answers))
    ollama[0].script = script
    await add(mem, "summary", [SUMMARY] * 20)
    await long_cascade(mem)
    first, again = script.seen["distill"]
    assert again[-1] == {"role": "user", "content": instructions.DISTILL_REMINDER}
    assert mem.jobs("cascade_long")[-1]["state"] == "done"
    assert mem.value("SELECT content FROM base_memory") == DOC


async def test_an_overlong_document_is_trimmed_to_the_cap_not_rejected(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    """430 words for a cap of 400: the longest section loses its last bullets; every heading
    stays, the preamble goes, and there is no second (minutes-long, on a Pi) generation."""
    profile = [f"- The user fact number {n} has exactly nine words." for n in range(44)]
    long_doc = (
        "Here is the updated base memory:\n## User Profile\n"
        + "\n".join(profile)
        + "\n**Preferences:**\n- Green tea in the morning.\nOngoing Topics:\n- The garden.\n"
        "Key History:\n- Moved to Seattle in 2024.\n"
    )
    assert 400 < words(long_doc) < 440
    script = Script(distill=lambda _: long_doc)
    ollama[0].script = script
    await add(mem, "summary", [SUMMARY] * 20)
    await long_cascade(mem)
    assert len(script.seen["distill"]) == 1
    stored = mem.value("SELECT content FROM base_memory")
    assert words(stored) <= 400
    assert stored.startswith("User Profile:\n- The user fact number 0 ")
    assert "- The user fact number 43 " not in stored  # the last bullets went
    for heading in ("Preferences:\n- Green tea", "Ongoing Topics:\n- The garden", "Key History:"):
        assert heading in stored
    assert "Here is" not in stored


async def test_the_early_base_memory_is_held_to_the_same_shape(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    answers = iter(["Profile: Alex", DOC])
    script = Script(distill=lambda _: next(answers))
    ollama[0].script = script
    await add(mem, "fact", GARDEN + OTHERS[:6])
    await mem.service._think()
    await mem.run()
    assert [j["state"] for j in mem.jobs(BASE_FROM_FACTS)] == ["done"]
    first, again = script.seen["distill"]
    assert again[-1]["content"] == instructions.DISTILL_REMINDER
    assert set(known_facts(first)) == set(GARDEN + OTHERS[:6])  # ≤ 30 facts: all of them
    assert mem.value("SELECT content FROM base_memory") == DOC


async def test_a_summary_is_linked_to_the_people_it_names(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    ollama[0].script = Script(
        summarize=lambda _: "The user told Lo-Bug about Jen's trip to Paris next spring."
    )
    for i in range(15):
        await mem.exchange(f"message {i}", f"reply {i}")
    await mem.run()
    linked = mem.rows(
        "SELECT e.canonical_name FROM memory_entities me JOIN entities e ON e.id = me.entity_id"
        " JOIN memories m ON m.id = me.memory_id WHERE m.kind = 'summary' ORDER BY e.id"
    )
    assert sorted(r[0] for r in linked) == ["Jen", "Paris"]  # not Lo-Bug, in every summary
