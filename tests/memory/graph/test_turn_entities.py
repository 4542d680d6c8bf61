"""Seed 003: episodes are entity-linked when saved (the fast strategy), here by the `embed_turn`
job off the hot path, into `turn_entities` (m013); the nightly alias merge moves turn links;
the turns' entity list reads them."""

from __future__ import annotations

from typing import Any

from memory_kit import MemoryEnv

from lobug.memory.graph import entities
from lobug.memory.query import QueryFilters, Reach
from lobug.memory.search.corpus import TURNS
from lobug.memory.search.hybrid import entity_ranks
from lobug.memory.table import rows as store
from lobug.memory.upkeep.jobs import ENRICH

DAY = 86400.0


def turn_links(mem: MemoryEnv, turn_id: int) -> list[str]:
    rows = mem.rows(
        "SELECT e.canonical_name FROM turn_entities te JOIN entities e ON e.id = te.entity_id"
        " WHERE te.turn_id = ? ORDER BY e.canonical_name",
        turn_id,
    )
    return [r[0] for r in rows]


async def test_embed_turn_links_the_users_words_and_search_reads_the_links(
    mem: MemoryEnv, clock: Any
) -> None:
    user, assistant = await mem.exchange("Jen is coming over with Marco Diaz.", "Say hi to Jen.")
    assert turn_links(mem, user.id) == []  # the turn itself writes no link: the job does
    await mem.run()
    (job,) = [j for j in mem.jobs("embed_turn") if f'"turn_id": {user.id}' in j["payload"]]
    assert job["state"] == "done"
    assert turn_links(mem, user.id) == ["Jen", "Marco Diaz"]
    assert assistant is not None and turn_links(mem, assistant.id) == []  # Lo-Bug's words
    assert mem.value("SELECT strategy FROM turn_ner WHERE turn_id = ?", user.id) == "fast"
    # One entity for both turns; a turn link is derived (not exported) and counts no mention.
    again, _ = await mem.exchange("Jen called again.", session_id="s-two")
    await mem.run()
    assert turn_links(mem, again.id) == ["Jen"]
    assert mem.value("SELECT COUNT(*) FROM entities WHERE canonical_name = 'Jen'") == 1
    assert mem.value("SELECT mention_count FROM entities WHERE canonical_name = 'Jen'") == 1
    # A guest's words are not the owner's world: not linked.
    await mem.db.write(
        lambda c: c.execute(
            "INSERT INTO sessions (id, device_id, user_id, trust, started_at, last_active)"
            " VALUES ('g-1', 'test', 'default', 'guest', ?, ?)",
            (clock(), clock()),
        )
    )
    guest, _ = await mem.exchange("Jen is my neighbour.", session_id="g-1")
    await mem.run()
    assert turn_links(mem, guest.id) == []

    # The turns' entity list: the linked turns, the one naming the entity in its text too.
    found = await mem.db.read(lambda c: entity_ranks(c, "what about jen", 10, corpus=TURNS))
    assert set(found) >= {user.id, again.id, assistant.id, guest.id}
    only_users = Reach(filters=QueryFilters(role="user"))
    found = await mem.db.read(
        lambda c: entity_ranks(c, "marco diaz and jen", 10, corpus=TURNS, flt=only_users)
    )
    assert found[0] == user.id  # names both


async def test_the_nightly_merge_moves_turn_links_to_the_kept_entity(
    mem: MemoryEnv, clock: Any
) -> None:
    said, _ = await mem.exchange("Jen moved to Lisbon.")
    await mem.run()
    fact = "Jen Okafor is the user's sister."

    def write(conn: Any) -> None:
        memory_id = store.insert_memory(
            conn, user_id="default", kind="fact", content=fact, now=clock(), actor="test"
        )
        entities.link_entities(conn, memory_id, entities.extract_entities(fact), "default", clock())

    await mem.db.write(write)
    await mem.service.periodic.run_due()
    clock.advance(DAY + 1)
    assert ENRICH in await mem.service.periodic.run_due()
    await mem.run()
    assert "Jen" not in [r[0] for r in mem.rows("SELECT canonical_name FROM entities")]
    assert turn_links(mem, said.id) == ["Jen Okafor", "Lisbon"]
