"""Entity enrichment (seed 003) through the persisted schedule and the job runner, and the
people index's person filter (seed 002) on a real DB: aliases merged, unlinked facts linked,
profiles filled; `person` finds the memories linked to a person by any of their names."""

from __future__ import annotations

import json
from typing import Any

from memory_kit import MemoryEnv

from lobug.memory.graph import enrich, entities
from lobug.memory.query import QueryFilters, QueryRequest, Reach
from lobug.memory.search.corpus import MEMORIES, TURNS, visible_ids
from lobug.memory.search.lexical import text_ranks
from lobug.memory.table import rows as store
from lobug.memory.upkeep.jobs import ENRICH

DAY = 86400.0
JEN = "Jen moved to Lisbon last spring."
PARK = "Jen Okafor is the user's sister."
MET = "The user met Jennifer at the climbing gym."  # written without its entity links
BOB = "Bob fixed the user's bike."
OTHER = "The user's dentist is Dr Alvarez."


def _seed(conn: Any, now: float) -> dict[str, int]:
    def fact(text: str, link: bool = True) -> int:
        memory_id = store.insert_memory(
            conn, user_id="default", kind="fact", content=text, now=now, actor="test"
        )
        if link:
            entities.link_entities(conn, memory_id, entities.extract_entities(text), "default", now)
        return memory_id

    ids = {text: fact(text) for text in (JEN, PARK, OTHER)}
    ids[MET] = fact(MET, link=False)
    # A registry from before the alias lookup: "Robert" known as Bob, and "Bob" on its own.
    robert = conn.execute(
        "INSERT INTO entities (user_id, canonical_name, type, aliases, created_at,"
        " last_mentioned) VALUES ('default', 'Robert', 'person', '[\"Bob\"]', ?, ?)",
        (now - DAY, now - DAY),
    ).lastrowid
    bob = conn.execute(
        "INSERT INTO entities (user_id, canonical_name, type, created_at, last_mentioned)"
        " VALUES ('default', 'Bob', 'person', ?, ?)",
        (now, now),
    ).lastrowid
    ids[BOB] = fact(BOB, link=False)
    conn.execute("INSERT INTO memory_entities VALUES (?, ?)", (ids[BOB], bob))
    ids["robert"] = int(robert)
    return ids


def names(mem: MemoryEnv) -> dict[str, list[str]]:
    rows = mem.rows("SELECT canonical_name, aliases FROM entities WHERE type = 'person'")
    return {r["canonical_name"]: json.loads(r["aliases"]) for r in rows}


async def test_the_nightly_pass_merges_links_and_profiles(mem: MemoryEnv, clock: Any) -> None:
    ids = await mem.db.write(lambda c: _seed(c, clock()))
    assert {"Jen", "Jen Okafor", "Robert", "Bob"} <= set(names(mem))
    await mem.service.periodic.run_due()  # the persisted schedule's first check starts it
    clock.advance(DAY + 1)
    assert ENRICH in await mem.service.periodic.run_due()
    await mem.run()
    (job,) = mem.jobs(ENRICH)
    assert job["state"] == "done", dict(job)

    people = names(mem)
    assert "Jen" not in people and "Jen" in people["Jen Okafor"]
    assert "Bob" not in people and people["Robert"] == ["Bob"]
    assert "Jennifer" in people  # linked now, by the NER's second look
    park = mem.rows("SELECT * FROM entities WHERE canonical_name = 'Jen Okafor'")[0]
    linked = {r[0] for r in mem.rows(
        "SELECT memory_id FROM memory_entities WHERE entity_id = ?", park["id"])}  # fmt: skip
    assert linked == {ids[JEN], ids[PARK]}
    assert park["mention_count"] == 2
    assert park["summary"].startswith("Jen Okafor (person), also called Jen.")
    assert JEN in park["summary"] and PARK in park["summary"]
    enriched = mem.value("SELECT attributes FROM memories WHERE id = ?", ids[MET])
    assert json.loads(enriched)["enriched_at"] == clock()
    assert mem.value("SELECT SUM(count) FROM op_events WHERE op = 'entity_merge'") == 2

    # Idempotent: the next night changes nothing.
    before = mem.rows("SELECT * FROM entities ORDER BY id")
    clock.advance(DAY + 1)
    assert ENRICH in await mem.service.periodic.run_due()
    await mem.run()
    assert [dict(r) for r in mem.rows("SELECT * FROM entities ORDER BY id")] == [
        dict(r) for r in before
    ]


async def test_the_person_filter_finds_a_person_by_any_name(mem: MemoryEnv, clock: Any) -> None:
    ids = await mem.db.write(lambda c: _seed(c, clock()))
    everything = [v for k, v in ids.items() if k != "robert"]

    async def visible(person: str) -> set[int]:
        flt = Reach(filters=QueryFilters(person=person))
        return set(await mem.db.read(lambda c: visible_ids(c, MEMORIES, flt, everything)))

    assert await visible("jen okafor") == {ids[PARK]}
    assert await visible("Bob") == {ids[BOB]}  # Bob: an entity of its own until enrichment
    assert await visible("Alvarez") == set() and await visible("Nobody") == set()
    await mem.db.write(lambda c: enrich.enrich(c, "default", now=clock()))
    assert await visible("JEN OKAFOR") == {ids[JEN], ids[PARK]}
    assert await visible("jen") == {ids[JEN], ids[PARK]}
    assert await visible("Robert") == {ids[BOB]}
    # The lexical list honours it.
    flt = Reach(filters=QueryFilters(person="Jen"), kinds=("fact",))
    found = await mem.db.read(lambda c: text_ranks(c, "Jen Lisbon sister", 10, flt=flt))
    assert set(found) == {ids[JEN], ids[PARK]}
    # A turn is about a person when it names them (its entity links, made by embed_turn).
    await mem.exchange("Jen says hi from Lisbon", session_id="s-a")
    await mem.exchange("The weather is fine", session_id="s-a")
    await mem.run()
    said = {r[1]: r[0] for r in mem.rows("SELECT id, text FROM turns WHERE role = 'user'")}
    turn_ids = [r[0] for r in mem.rows("SELECT id FROM turns")]

    async def visible_turns(person: str) -> set[int]:
        flt = Reach(filters=QueryFilters(person=person))
        return set(await mem.db.read(lambda c: visible_ids(c, TURNS, flt, turn_ids)))

    jen_turn = said["Jen says hi from Lisbon"]
    assert await visible_turns("Jen") == {jen_turn}
    assert await visible_turns("jen okafor") == {jen_turn}  # by the merged entity's alias too
    assert await visible_turns("Robert") == set()
    # Through the service's query (what /v1/query runs): the facts and the turn about Jen.
    request = QueryRequest(
        query="Jen",
        kinds=["fact", "episode"],
        filters=QueryFilters(user_id="default", person="jen okafor"),
        top_k=10,
    )
    found_ids = {(r.kind, r.id) for r in await mem.service.query(request)}
    assert found_ids == {("fact", ids[JEN]), ("fact", ids[PARK]), ("episode", jen_turn)}
