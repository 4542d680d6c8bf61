"""Writing memories end to end: extraction modes and the LLM fallback, the validator and its
counters, exact/near duplicates, contradictions (Portland → Seattle), two-level batch dedup,
PII tags, rules, entities, relations, history and delta — through the jobs and remember()."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script, extract_by_keyword, facts_json, history_of, memory_env

from lobug.memory.query import InvalidMemory
from lobug.memory.table import delta
from lobug.memory.table.rows import counters

PORTLAND = "The user lives in Portland."
SEATTLE = "The user moved to Seattle."


def events(mem: MemoryEnv, memory_id: int) -> list[str]:
    rows = mem.rows("SELECT event FROM history WHERE memory_id = ? ORDER BY id", memory_id)
    return [r[0] for r in rows]


def row_of(mem: MemoryEnv, content: str) -> Any:
    return mem.rows("SELECT * FROM memories WHERE content = ?", content)[0]


async def test_contradiction_supersedes_through_two_llm_exchanges(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    table = {"Portland": [PORTLAND], "Seattle": [SEATTLE]}
    state.script = Script(extract=extract_by_keyword(table, kind="personal"))
    first, _ = await mem.exchange("I live in Portland", session_id="s1")
    await mem.run()
    clock.advance(3600)
    second, _ = await mem.exchange("Big news: I moved to Seattle!", session_id="s1")
    await mem.run()
    assert mem.facts() == [SEATTLE]
    old, new = row_of(mem, PORTLAND), row_of(mem, SEATTLE)
    assert (old["status"], old["valid_until"]) == ("archived", clock())
    assert (new["status"], new["supersedes"], new["fact_key"]) == (
        "active",
        old["id"],
        "user|residence",
    )
    assert json.loads(new["rules"]) == ["state.moved_to"]  # the rule agreed with the model
    archive = (await mem.db.read(history_of, old["id"]))[-1]
    assert (archive["event"], archive["old_value"], archive["new_value"]) == (
        "SUPERSEDE",
        PORTLAND,
        SEATTLE,
    )
    assert archive["meta"]["superseded_by"] == new["id"] and archive["actor"] == "extractor"
    # The fake judge labels nothing by default: the fact keys decided.
    assert (archive["meta"]["reason"], archive["meta"]["judge"]) == ("contradiction", "heuristic")
    assert json.loads(old["attributes"])["superseded_by"] == new["id"]
    edges = mem.rows(
        "SELECT from_id, to_id, strength FROM relations WHERE relation_type = ?", "supersedes"
    )
    assert [tuple(e) for e in edges] == [(new["id"], old["id"], 1.0)]
    assert (await mem.db.read(history_of, new["id"]))[0]["meta"]["supersedes"] == old["id"]
    # Provenance of both stays; the new fact has its vector.
    sources = mem.rows("SELECT memory_id, turn_id FROM memory_sources WHERE reason = 'extracted'")
    assert {(old["id"], first.id), (new["id"], second.id)} <= {tuple(r) for r in sources}
    # Seed 000: the new memory's link to the turn that overturned the old one says so.
    conflict = mem.rows("SELECT memory_id, turn_id FROM memory_sources WHERE reason = 'conflict'")
    assert (new["id"], second.id) in [tuple(r) for r in conflict]  # and Lo-Bug's reply
    assert {r[0] for r in conflict} == {new["id"]}
    assert new["id"] in [r[0] for r in mem.rows("SELECT memory_id FROM memory_vectors")]
    # The delta log says "updated" once, for the session that caused it.
    changes = await mem.db.read(lambda c: delta.changes_since(c, "s1", 0))
    assert [(c.event, c.memory_id) for c in changes] == [
        ("created", old["id"]),
        ("updated", new["id"]),
    ]
    # Same value again: a repeat, not a contradiction.
    await mem.exchange("I moved to Seattle, remember", session_id="s1")
    await mem.run()
    assert mem.facts() == [SEATTLE] and row_of(mem, SEATTLE)["mention_count"] == 2


async def test_contradiction_in_heuristic_mode_with_the_llm_down(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, url = ollama
    state.mode = "down"
    overrides = {"memory.extraction_mode": "heuristic"}
    async with memory_env(tmp_path, url, clock, **overrides) as mem:
        await mem.exchange("I live in Portland.")
        await mem.run()
        await mem.exchange("Oh, and I moved to Seattle last week")
        await mem.run()
        assert mem.facts(status=None) == [PORTLAND, "The user moved to Seattle last week."]
        assert mem.facts() == ["The user moved to Seattle last week."]
        assert state.memory_calls() == []  # heuristic mode never asks the LLM
        assert {r["state"] for r in mem.rows("SELECT state FROM jobs")} == {"done"}
        row = row_of(mem, "The user moved to Seattle last week.")
        assert json.loads(row["attributes"])["source"] == "heuristic"
        assert row["category"] == "profile" and row["supersedes"] == 1


async def test_llm_unreachable_stores_the_heuristic_facts_at_once(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any, caplog: Any
) -> None:
    state, _ = ollama
    state.memory_mode = "down"
    await mem.exchange("My name is Priya")
    with caplog.at_level(logging.WARNING):
        await mem.run()
    # Memory works without Ollama: the first attempt stores what the rules found…
    first, refine = mem.jobs("extract")
    assert (first["state"], first["attempts"]) == ("done", 1)
    assert mem.facts() == ["The user's name is Priya."]
    assert json.loads(row_of(mem, "The user's name is Priya.")["attributes"])["source"] == (
        "heuristic"
    )
    # …and the exchange is owed its LLM pass, as a job in the same commit.
    assert refine["state"] == "pending" and refine["run_after"] > clock()
    assert json.loads(refine["payload"]) == {**json.loads(first["payload"]), "refine": True}
    found = await mem.db.read(counters)
    assert found["extraction_llm_unavailable_total"] == 1
    assert found["extraction_fallback_total"] == 1
    assert any("unreachable" in r.getMessage() for r in caplog.records)


async def test_hybrid_keeps_the_models_wording_and_fills_gaps_with_rules(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    model = "The user's name is Alex and the user works at NASA."
    state.script = Script(extract=lambda _: facts_json(model))
    await mem.exchange("My name is Alex and I work at NASA. I'm allergic to peanuts.")
    await mem.run()
    # The rules' "name is Alex" and "works at NASA" are covered by the model's fact; the
    # allergy the model missed is added from the rules.
    assert mem.facts() == [model, "The user is allergic to peanuts."]
    rules = {r["content"]: json.loads(r["rules"]) for r in mem.rows("SELECT * FROM memories")}
    assert rules[model] == ["identity.name", "identity.work_at"]
    assert rules["The user is allergic to peanuts."] == ["identity.trait"]


async def test_validator_rejections_are_counted(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    long_fact = "The user " + "really " * 60 + "likes tea"
    bad = ["I like tea.", "The user likes you.", long_fact, "The user likes green tea."]
    state.script = Script(extract=lambda _: json.dumps(bad))
    await mem.exchange("tea talk")
    await mem.run()
    assert mem.facts() == ["The user likes green tea."]
    found = await mem.db.read(counters)
    assert found["validator_rejected_total"] == 3
    assert found["validator_rejected.first_person"] == 1
    assert found["validator_rejected.addresses_assistant"] == 1
    assert found["validator_rejected.too_long"] == 1


async def test_batches_dedupe_within_and_against_the_db(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    tea = "The user drinks jasmine tea every single morning before work."
    batch = [tea, tea.upper(), "the user drinks jasmine tea every single morning before work"]
    state.script = Script(extract=lambda _: json.dumps(batch))
    await mem.exchange("jasmine")
    await mem.run()
    assert mem.facts() == [tea]  # level 1: one row for three spellings of one fact
    near = "The user drinks jasmine tea every single morning before their work."
    state.script = Script(extract=lambda _: json.dumps([tea, near]))
    await mem.exchange("jasmine again")
    await mem.run()
    # Level 2: an exact repeat and a near duplicate (Jaccard 0.9) — one exchange, one mention.
    assert mem.facts() == [tea]
    row = row_of(mem, tea)
    assert (row["mention_count"], row["hits"]) == (2, 1)
    state.script = Script(extract=lambda _: json.dumps([near]))
    await mem.exchange("jasmine once more")
    await mem.run()
    assert mem.facts() == [tea]
    row = row_of(mem, tea)
    assert (row["mention_count"], row["hits"]) == (3, 2)
    merges = [h for h in await mem.db.read(history_of, row["id"]) if h["event"] == "MERGE"]
    assert [m["meta"]["reason"] for m in merges] == ["exact_duplicate", "near_duplicate"]
    assert merges[1]["new_value"] == near and merges[1]["meta"]["jaccard"] >= 0.75


async def test_new_memories_get_pii_rules_entities_and_relations(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    facts = [
        "The user's sister Jen lives in Denver and her email is jen@example.com.",
        "The user's sister Jen lives in Denver with her two cats.",
    ]
    state.script = Script(extract=lambda _: json.dumps(facts))
    await mem.exchange("about Jen")
    await mem.run()
    first, second = (row_of(mem, f) for f in facts)
    assert json.loads(first["pii"]) == ["email"] and json.loads(second["pii"]) == []
    names = {
        r[0]
        for r in mem.rows(
            "SELECT e.canonical_name FROM entities e JOIN memory_entities me"
            " ON me.entity_id = e.id WHERE me.memory_id = ?",
            first["id"],
        )
    }
    assert {"Jen", "Denver", "jen@example.com"} <= names
    (edge,) = mem.rows("SELECT from_id, to_id, strength FROM relations")
    assert (edge["from_id"], edge["to_id"]) == (second["id"], first["id"])
    assert 0.55 <= edge["strength"] < 0.85
    assert events(mem, second["id"]) == ["ADD", "LINK"]


async def test_remember_validates_reconciles_and_embeds_later(mem: MemoryEnv) -> None:
    with pytest.raises(InvalidMemory) as caught:
        await mem.service.remember(content="I love tea", actor="api")
    assert caught.value.reason == "first_person" and isinstance(caught.value, ValueError)
    with pytest.raises(InvalidMemory):
        await mem.service.remember(content="   ", actor="api")
    with pytest.raises(InvalidMemory):
        await mem.service.remember(content="The user likes tea.", store="public", actor="api")
    assert (await mem.db.read(counters))["validator_rejected.first_person"] == 1

    added = await mem.service.remember(
        content="the user lives in Portland",
        category="profile",
        importance=0.8,
        tags=["home"],
        store="shared",
        actor="api",
        session_id="s-api",
    )
    assert added["action"] == "added" and added["content"] == PORTLAND
    assert (added["store"], added["tags"], added["pinned"], added["category"]) == (
        "shared",
        ["home"],
        False,
        "profile",
    )
    assert mem.value("SELECT COUNT(*) FROM memory_vectors") == 0  # not inline: a job does it
    assert [j["state"] for j in mem.jobs("embed_memory")] == ["pending"]
    await mem.run()
    assert mem.value("SELECT memory_id FROM memory_vectors") == added["id"]

    # Reconciliation stays within a store: the repeat and the move are written to "shared" too.
    again = await mem.service.remember(
        content="The user lives in Portland!", actor="api", store="shared"
    )
    assert (again["action"], again["id"], again["mention_count"]) == ("merged", added["id"], 2)
    moved = await mem.service.remember(content=SEATTLE, actor="api", pinned=True, store="shared")
    assert (moved["action"], moved["replaced_id"], moved["pinned"]) == (
        "superseded",
        added["id"],
        True,
    )
    history = await mem.db.read(history_of, added["id"])
    assert [(h["event"], h["actor"]) for h in history] == [
        ("ADD", "api"),
        ("MERGE", "api"),
        ("SUPERSEDE", "api"),
    ]
    # A pinned fact is the user's word: a contradiction adds beside it, never archives it.
    beside = await mem.service.remember(content="The user lives in Tacoma.", actor="api")
    assert beside["action"] == "added" and beside["supersedes"] is None
    assert set(mem.facts()) == {SEATTLE, "The user lives in Tacoma."}


def test_migration_m003_recomputes_hashes_and_keys(tmp_path: Path) -> None:
    from lobug.memory.table.dedup import content_hash
    from lobug.storage import migrations
    from lobug.storage.sqlite import connect

    conn = connect(tmp_path / "old.db")
    try:
        original = migrations.MIGRATIONS
        migrations.MIGRATIONS = original[:2]  # a database from before m003
        try:
            migrations.migrate(conn)
        finally:
            migrations.MIGRATIONS = original
        conn.execute(
            "INSERT INTO memories (content, hash, created_at, updated_at)"
            " VALUES (?, 'an-old-style-hash', 1, 1)",
            (PORTLAND,),
        )
        later = [name for name, _ in migrations.MIGRATIONS[2:]]  # m003 and every later one
        assert later[0] == "m003_memory_hash_and_keys"
        assert migrations.migrate(conn) == later
        row = conn.execute("SELECT hash, fact_key FROM memories").fetchone()
        assert (row["hash"], row["fact_key"]) == (content_hash(PORTLAND), "user|residence")
    finally:
        conn.close()
