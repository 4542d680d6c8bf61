"""Seed 003's NER providers and strategies through the nightly enrichment job: the `accurate`
strategy asks the memory model (the fake Ollama's `ner` script) a few notes a call, over facts
and the user's turns, ≤ 2 links, 50 a night; without an LLM provider the regexes look again."""

from __future__ import annotations

import json
import re
from functools import partial
from typing import Any

import spacy
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, memory_env

from lobug.memory.graph import entities, ner, ner_llm
from lobug.memory.table import rows as store
from lobug.memory.upkeep import budget
from lobug.memory.upkeep.jobs import CONSOLIDATE, ENRICH

DAY = 86400.0
SISTER = "the user's sister jen moved to lisbon."  # lowercase: the regexes find nothing
SAID = "my friend marco works at acme labs now"
NAMES = {
    "jen": ["Jen", "person"],
    "lisbon": ["Lisbon", "location"],
    "marco": ["Marco", "person"],
    "acme labs": ["Acme Labs", "organization"],
}


def ner_by(names: dict[str, list[str]], invent: bool = False) -> Any:
    """A `ner` script: for each numbered note, the known names it contains (any case)."""

    def answer(body: dict[str, Any]) -> str:
        notes = body["messages"][-1]["content"].splitlines()
        found: dict[str, list[list[str]]] = {}
        for line in notes:
            number, text = line.split(". ", 1)
            found[number] = [v for k, v in names.items() if k in text.lower()]
            if invent:
                found[number].append(["Zanzibar", "location"])  # in no note
        return json.dumps(found)

    return answer


def notes_asked(state: FakeOllamaState) -> list[str]:
    return [
        re.sub(r"^\d+\. ", "", line)
        for call in state.memory_calls("ner")
        for line in call["body"]["messages"][-1]["content"].splitlines()
    ]


async def add_fact(mem: MemoryEnv, text: str) -> int:
    return int(
        await mem.db.write(
            lambda c: store.insert_memory(
                c, user_id="default", kind="fact", content=text, now=mem.clock(), actor="test"
            )
        )
    )


async def nightly(mem: MemoryEnv, clock: Any) -> list[str]:
    """The persisted schedule's first check starts the clocks; a day later it enqueues."""
    await mem.service.periodic.run_due()
    clock.advance(DAY + 1)
    ran = await mem.service.periodic.run_due()
    await mem.run()
    return ran


def linked(mem: MemoryEnv, table: str, column: str, row_id: int) -> dict[str, str]:
    rows = mem.rows(
        f"SELECT e.canonical_name, e.type FROM {table} x JOIN entities e ON e.id = x.entity_id"
        f" WHERE x.{column} = ?",
        row_id,
    )
    return {r[0]: r[1] for r in rows}


async def test_the_llm_names_what_the_regexes_missed_in_facts_and_turns(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.ner = ner_by(NAMES, invent=True)
    fact = await add_fact(mem, SISTER)
    user, assistant = await mem.exchange(SAID, "Marco sounds busy.")
    await mem.run()  # embed_turn: the fast strategy found nothing in lowercase words
    assert linked(mem, "turn_entities", "turn_id", user.id) == {}
    assert mem.value("SELECT strategy FROM turn_ner WHERE turn_id = ?", user.id) == "fast"

    assert ENRICH in await nightly(mem, clock)
    (job,) = mem.jobs(ENRICH)
    assert job["state"] == "done", dict(job)
    # One call for both notes, through the LLM lane as background work, bounded and short.
    (call,) = state.memory_calls("ner")
    assert call["body"]["messages"][0]["content"] == ner_llm.SYSTEM
    notes = notes_asked(state)
    assert {SISTER, SAID} <= set(notes)
    assert "Marco sounds busy." not in notes  # Lo-Bug's words are not linked (enrich.py)
    assert call["body"]["options"]["num_predict"] == len(notes) * ner_llm.TOKENS_PER_NOTE + 16
    # Linked, typed by the model; the invented name (not in the note) is dropped.
    assert linked(mem, "memory_entities", "memory_id", fact) == {
        "Jen": "person",
        "Lisbon": "location",
    }
    assert linked(mem, "turn_entities", "turn_id", user.id) == {
        "Marco": "person",
        "Acme Labs": "organization",
    }
    assert mem.value("SELECT COUNT(*) FROM entities WHERE canonical_name = 'Zanzibar'") == 0
    assert assistant is not None
    assert linked(mem, "turn_entities", "turn_id", assistant.id) == {}
    attributes = json.loads(mem.value("SELECT attributes FROM memories WHERE id = ?", fact))
    assert attributes["enriched_by"] == "accurate"
    assert mem.value("SELECT strategy FROM turn_ner WHERE turn_id = ?", user.id) == "accurate"
    # Spent from the daily upkeep budget, counted with the consolidation's calls.
    assert await mem.db.read(budget.spent, budget.BUDGET, "default", clock()) >= 1
    assert mem.value("SELECT SUM(count) FROM op_events WHERE op = 'upkeep_llm_call'") >= 1

    # The next night has nothing left to ask about.
    clock.advance(DAY + 1)
    assert ENRICH in await mem.service.periodic.run_due()
    await mem.run()
    assert len(state.memory_calls("ner")) == 1


async def test_fifty_a_night_of_those_with_at_most_two_links(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.ner = ner_by(NAMES)
    crowd = "Ann met Bob, Cy and Dee at the Lisbon Opera House."
    crowded = await add_fact(mem, crowd)
    await mem.db.write(
        lambda c: entities.link_entities(
            c, crowded, entities.extract_entities(crowd), "default", clock()
        )
    )
    for i in range(40):
        await add_fact(mem, f"the user's note number {i} about jen.")
    for i in range(40):
        await mem.exchange(f"remind me about marco, item {i}")
    await mem.run()
    await nightly(mem, clock)
    asked = notes_asked(state)
    # Seed 003: limit 50, facts and episodes (half each when both have that many), newest
    # first; 10 notes a call, so 5 calls of the budget.
    assert len(asked) == 50 and len(state.memory_calls("ner")) == 5
    assert sum("about jen" in n for n in asked) == 25
    assert sum("marco, item" in n for n in asked) == 25
    assert "the user's note number 39 about jen." in asked
    assert "the user's note number 0 about jen." not in asked
    assert all("Opera House" not in n for n in asked)  # four links already: not asked
    assert len(linked(mem, "memory_entities", "memory_id", crowded)) > 2
    # The rest are the next night's, never the same again.
    clock.advance(DAY + 1)
    await mem.service.periodic.run_due()
    await mem.run()
    second = notes_asked(state)[50:]
    assert second and not set(second) & set(asked)
    assert sum("marco, item" in n for n in second) == 15  # the turns left (facts merge)


async def test_an_outage_or_nonsense_never_holds_the_consolidation(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.memory_mode = "down"
    fact = await add_fact(mem, SISTER)
    ran = await nightly(mem, clock)
    assert [n for n in ran if n in (ENRICH, CONSOLIDATE)] == [ENRICH, CONSOLIDATE]  # seed 003
    assert [j["state"] for j in mem.jobs(ENRICH)] == ["done"]
    assert [j["state"] for j in mem.jobs(CONSOLIDATE)] == ["done"]
    # Not enriched: tomorrow's candidate again.
    attributes = json.loads(mem.value("SELECT attributes FROM memories WHERE id = ?", fact))
    assert attributes.get("enriched_by") != "accurate"

    state.memory_mode = "ok"
    state.ner = lambda body: "I found Jen and Lisbon."  # nonsense, twice
    clock.advance(DAY + 1)
    await mem.service.periodic.run_due()
    await mem.run()
    assert len(state.memory_calls("ner")) == 1 + 2  # the outage's; the answer and the reminder's
    attributes = json.loads(mem.value("SELECT attributes FROM memories WHERE id = ?", fact))
    assert attributes["enriched_by"] == "accurate"  # with the regexes' entities: not asked again
    assert mem.value("SELECT SUM(count) FROM op_events WHERE op = 'upkeep_llm_call'") == 2


async def test_without_an_llm_provider_the_regexes_look_again(
    tmp_path: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.ner = ner_by(NAMES)
    overrides = {"memory.extraction_mode": "heuristic"}
    async with memory_env(tmp_path, ollama[1], clock, **overrides) as mem:
        fact = await add_fact(mem, "Jen Okafor moved to Lisbon.")  # no links when written
        await nightly(mem, clock)
        assert state.memory_calls("ner") == []  # accurate_ner_available is false: skipped
        assert set(linked(mem, "memory_entities", "memory_id", fact)) == {"Jen Okafor", "Lisbon"}
        attributes = json.loads(mem.value("SELECT attributes FROM memories WHERE id = ?", fact))
        assert attributes["enriched_by"] == "fast"


def spacy_pipeline(path: Any) -> str:
    """A real spaCy pipeline saved to disk, as a downloaded model is: a blank English one with
    an `entity_ruler` (no model download is possible offline, and the rules make it exact)."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(
        [
            {"label": "PERSON", "pattern": [{"LOWER": "jen"}]},
            {"label": "GPE", "pattern": [{"LOWER": "lisbon"}]},
            {"label": "ORG", "pattern": [{"LOWER": "acme"}, {"LOWER": "labs"}]},
            {"label": "DATE", "pattern": [{"LOWER": "tuesday"}]},  # a label NER does not keep
        ]
    )
    nlp.to_disk(path)
    return str(path)


async def test_spacy_names_what_the_regexes_missed_in_the_nightly_pass(
    tmp_path: Any, ollama: tuple[FakeOllamaState, str], clock: Any, monkeypatch: Any
) -> None:
    """Seed 003's spaCy provider (docs/seeds.md row 236): when a spaCy model loads, the
    `accurate` strategy runs it in the nightly enrichment (here without the LLM provider:
    extraction `heuristic`), and its PERSON/GPE/ORG entities are linked and typed."""
    model = spacy_pipeline(tmp_path / "spacy-model")
    monkeypatch.setattr(ner_llm, "load_spacy", partial(ner.load_spacy, model))
    provider = ner.load_spacy(model)
    assert isinstance(provider, ner.SpacyProvider)
    assert ner.load_spacy(str(tmp_path / "no-such-model")) is None  # logged, NER goes on
    overrides = {"memory.extraction_mode": "heuristic"}
    async with memory_env(tmp_path, ollama[1], clock, **overrides) as mem:
        fact = await add_fact(mem, SISTER + " She starts on tuesday at acme labs.")
        await nightly(mem, clock)
        assert ollama[0].memory_calls("ner") == []  # no LLM provider: spaCy alone
        assert linked(mem, "memory_entities", "memory_id", fact) == {
            "jen": "person",
            "lisbon": "location",
            "acme labs": "organization",
        }
        attributes = json.loads(mem.value("SELECT attributes FROM memories WHERE id = ?", fact))
        assert attributes["enriched_by"] == "accurate"
