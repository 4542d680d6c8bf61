"""Relations in retrieval (seed 001 §2): the prompt gets 1-2 facts tied to the ones it picked,
through the real chat turn; the boost counts an edge to any live memory, not only to another
candidate of the same search."""

from __future__ import annotations

from typing import Any

import pytest
from fake_ollama import FakeOllamaState

from lobug import keys
from lobug.memory.graph import relations
from lobug.memory.table import rows as store
from lobug.memory.vectors import knn

ASK = "where does my sister Maya live these days?"
MAYA = "The user's sister Maya lives in Lisbon."
TRIP = "The user plans a June trip to Portugal."  # no word of the question
CAR = "The user repaired an old red motorbike."
GONE = "The user once owned a sailboat."  # soft-deleted
HIDDEN = "The user booked flights through Porto."


@pytest.fixture
async def client(make_client: Any) -> Any:
    return await make_client(**{"embedding.dim": 256})


async def seed(client: Any, facts: list[tuple[str, str]]) -> list[int]:
    memory = client.app[keys.MEMORY]
    vectors = await memory.embedder.embed([text for text, _ in facts])

    def write(conn: Any) -> list[int]:
        ids = []
        for (text, where), vector in zip(facts, vectors, strict=True):
            memory_id = store.insert_memory(
                conn, user_id="default", kind="fact", content=text, now=1.0, actor="test",
                store=where,
            )  # fmt: skip
            knn.put_memory_vector(conn, memory_id, vector)
            ids.append(memory_id)
        return ids

    return await client.app[keys.DB].write(write)


async def link(client: Any, a: int, b: int, strength: float, kind: str = "related_to") -> None:
    await client.app[keys.DB].write(
        lambda c: relations.link(
            c, a, b, strength, user_id="default", now=1.0, actor="test", relation_type=kind
        )
    )


def relevant(state: FakeOllamaState) -> list[str]:
    system = state.prompt_text()
    if "[Relevant memories]" not in system:
        return []
    return system.split("[Relevant memories]\n")[1].split("\n\n")[0].splitlines()


async def test_the_prompt_adds_the_facts_tied_to_the_ones_it_picked(
    client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    maya, trip, car, gone, hidden = await seed(
        client,
        [(MAYA, "private"), (TRIP, "private"), (CAR, "private"), (GONE, "private"),
         (HIDDEN, "private")],
    )  # fmt: skip
    await client.app[keys.DB].write(
        lambda c: c.execute("UPDATE memories SET status = 'soft_deleted' WHERE id = ?", (gone,))
    )
    await link(client, maya, trip, 0.7)
    await link(client, gone, maya, 0.9)  # soft-deleted: never shown
    resp = await client.post("/chat/text", json={"text": ASK, "session_id": "s-new"})
    assert resp.status == 200
    lines = relevant(state)
    assert f"- {MAYA}" in lines
    assert f"- {TRIP}" in lines  # not a match for the question: there by its edge
    assert f"- {CAR}" not in lines and GONE not in "\n".join(lines)

    # At most two, strongest first.
    await link(client, maya, car, 0.6)
    await link(client, maya, hidden, 0.56)
    resp = await client.post("/chat/text", json={"text": ASK, "session_id": "s-other"})
    assert resp.status == 200
    lines = relevant(state)
    assert lines.index(f"- {MAYA}") < lines.index(f"- {TRIP}") < lines.index(f"- {CAR}")
    assert f"- {HIDDEN}" not in lines
    # Shown beside what was asked for, not asked for: a related fact is not a use (one shown
    # every week would otherwise grow strong from its neighbour alone).
    await client.app[keys.MEMORY].flush_hits()
    hits = await client.app[keys.DB].read(
        lambda c: c.execute("SELECT hits FROM memories WHERE id = ?", (trip,)).fetchone()[0]
    )
    assert hits == 0


async def test_the_boost_counts_an_edge_to_any_live_memory(client: Any) -> None:
    maya, trip, car, gone, _ = await seed(
        client, [(MAYA, "private"), (TRIP, "private"), (CAR, "private"), (GONE, "private"),
                 (HIDDEN, "private")],
    )  # fmt: skip
    await link(client, maya, trip, 0.7)
    await link(client, car, gone, 0.9)
    await link(client, trip, car, 1.0, kind=relations.SUPERSEDES)  # an update counts too
    await client.app[keys.DB].write(
        lambda c: c.execute("UPDATE memories SET status = 'soft_deleted' WHERE id = ?", (gone,))
    )
    # One candidate alone: its edge to a memory outside the search still counts, both ways.
    got = await client.app[keys.DB].read(relations.max_related_strength, [maya])
    assert got == {maya: 0.7}
    got = await client.app[keys.DB].read(relations.max_related_strength, [trip, car])
    # The update's `supersedes` edge (1.0) ties trip and car; car's other edge goes to a
    # soft-deleted fact and does not count.
    assert got == {trip: 1.0, car: 1.0}
    # Nor does an edge to a memory past its `expires_at` (seed 002), before the GC deletes it.
    await client.app[keys.DB].write(
        lambda c: c.execute("UPDATE memories SET expires_at = 2.0 WHERE id = ?", (trip,))
    )
    got = await client.app[keys.DB].read(relations.max_related_strength, [maya, car], 3.0)
    assert got == {}
    got = await client.app[keys.DB].read(relations.max_related_strength, [maya, car], 1.0)
    assert got == {maya: 0.7, car: 1.0}
    # The prompt's related bullets follow `related_to` edges only: an update is not a topic.
    found = await client.app[keys.DB].read(
        lambda c: relations.related_facts(c, [car], user_id="default", stores=("private",))
    )
    assert found == []


async def test_related_facts_stay_within_the_callers_stores(client: Any) -> None:
    maya, trip, car = await seed(client, [(MAYA, "private"), (TRIP, "social"), (CAR, "shared")])
    await link(client, maya, trip, 0.9)
    await link(client, car, maya, 0.6)

    def found(conn: Any, stores: tuple[str, ...]) -> list[tuple[int, int, float]]:
        got = relations.related_facts(conn, [maya], user_id="default", stores=stores)
        return [(int(row["id"]), via, strength) for row, via, strength in got]

    db = client.app[keys.DB]
    assert await db.read(found, ("private", "shared", "social")) == [
        (trip, maya, 0.9),
        (car, maya, 0.6),
    ]
    assert await db.read(found, ("private", "shared")) == [(car, maya, 0.6)]


async def test_a_related_fact_past_its_expires_at_is_not_shown(
    client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    """Seed 002: past its `expires_at` a memory is hidden at once, also as a related bullet,
    before the GC pass deletes it."""
    state, _ = ollama
    maya, trip = await seed(client, [(MAYA, "private"), (TRIP, "private")])
    await link(client, maya, trip, 0.7)
    await client.app[keys.DB].write(
        lambda c: c.execute("UPDATE memories SET expires_at = 2.0 WHERE id = ?", (trip,))
    )
    resp = await client.post("/chat/text", json={"text": ASK, "session_id": "s-new"})
    assert resp.status == 200
    lines = relevant(state)
    assert f"- {MAYA}" in lines
    assert TRIP not in "\n".join(lines)
