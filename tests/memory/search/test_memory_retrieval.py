"""Inline retrieval through the real app: memories in the prompt, in the seed's order, within
top-k and the similarity floor; failures cost the memories, never the reply."""

from __future__ import annotations

from typing import Any

import pytest
from contract import assert_valid
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import Script, drain, extract_by_keyword

from lobug import keys
from lobug.chat.prompt import REPLY_FORMAT
from lobug.llm.embedders import EmbeddingUnavailable
from lobug.memory.graph import relations
from lobug.memory.query import QueryRequest
from lobug.memory.search import prompt_context as retrieval
from lobug.memory.summaries import base_memory
from lobug.memory.table import rows as store
from lobug.memory.vectors import knn

ALEX = "The user's name is Alex and the user works at NASA."
ASK_ALEX = "Alex works at NASA, right?"
DIM = 256  # the hashing embedder at 64-d collides too often for floor tests


@pytest.fixture
async def client(make_client: Any) -> Any:
    return await make_client(**{"embedding.dim": DIM})


TEA = "The user drinks green tea every morning."
BASE = "User Profile:\n- Alex, works at NASA"


async def post(client: Any, text: str, **extra: Any) -> dict[str, Any]:
    resp = await client.post("/chat/text", json={"text": text, **extra})
    body = await resp.json()
    assert resp.status == 200, body
    assert_valid("chat_text.response", body)
    return body


def system_prompt(state: FakeOllamaState) -> str:
    return state.prompt_text()


async def seed(client: Any, facts: list[str], base: str = "") -> None:
    """Facts (with vectors from the app's own embedder) and a base memory, straight into the DB."""
    memory = client.app[keys.MEMORY]
    vectors = await memory.embedder.embed(facts)

    def write(conn: Any) -> None:
        for fact, vector in zip(facts, vectors, strict=True):
            memory_id = store.insert_memory(
                conn, user_id="default", kind="fact", content=fact, now=1.0, actor="test"
            )
            knn.put_memory_vector(conn, memory_id, vector)
        if base:
            base_memory.set_base(conn, "default", base, now=1.0, actor="test", meta={})

    await client.app[keys.DB].write(write)


async def test_memories_enter_the_prompt_in_the_seed_order(
    client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    await seed(client, [ALEX, TEA], BASE)
    resp = await client.post("/context/sensors", json={"orientation": "face_up", "battery": 80})
    assert resp.status == 200
    await post(client, ASK_ALEX)
    system = system_prompt(state)
    order = [
        system.index("You are Lo-Bug"),
        system.index(REPLY_FORMAT),
        system.index(f"[Long-term memory]\n{BASE}"),
        system.index(f"[Relevant memories]\n- {ALEX}"),
        system.index("[Current physical state:"),
    ]
    assert order == sorted(order)
    assert TEA not in system  # below the similarity floor for this question
    # The conversation itself is still the messages after the system prompt.
    assert state.chat_calls()[-1]["body"]["messages"][-1]["content"].endswith("\n\n" + ASK_ALEX)


async def test_top_k_and_the_similarity_floor(
    make_client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    client = await make_client(**{"memory.top_k": 3, "embedding.dim": DIM})
    facts = [f"The user keeps bees number {i} in the garden hive." for i in range(6)]
    await seed(client, [*facts, "The user plays chess on Sundays."])
    await post(client, "tell me about the bees in the garden hive")
    relevant = system_prompt(state).split("[Relevant memories]\n")[1].split("\n\n")[0]
    assert len(relevant.splitlines()) == 3
    assert all("bees" in line for line in relevant.splitlines())
    memory = client.app[keys.MEMORY]
    found = await memory.query(
        QueryRequest(query="tell me about the bees in the garden hive", top_k=10)
    )
    assert all("bees" in r.text for r in found[:3])
    chess = [r for r in found if "chess" in r.text]
    # Found by the query's vector list (it shares no word with the question), but below the
    # prompt's similarity floor: kept out of the prompt.
    assert chess and "vector" in chess[0].explain["ranks"] and "chess" not in relevant


HIVE = "The user keeps bees in the garden hive."
TAP = "A leaking garden tap dripped all night last August near our shed."  # "garden" alone
# Two words of the question ("garden", "winter": enough for BM25), about something else.
FENCE = (
    "Our neighbours two doors down painted their garden fence bright yellow over the long"
    " winter holidays while we travelled abroad."
)
GARDEN_HIVE = "Is the garden hive ready for winter?"


async def test_weak_matches_stay_out_of_the_prompt(
    client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    await seed(client, [TAP, TEA])
    # One shared word: below the vector list's similarity floor, short of BM25's two words.
    await post(client, GARDEN_HIVE)
    assert "[Relevant memories]" not in system_prompt(state)
    # Two shared words bring the fence through BM25, but beside a fact that matches it
    # scores less than half of it (prompt_context.FLOOR): the prompt shows the hive only.
    await seed(client, [HIVE, FENCE])
    await post(client, GARDEN_HIVE, session_id="s-other")
    found = await client.app[keys.MEMORY].query(QueryRequest(query=GARDEN_HIVE, top_k=10))
    fence = next(r for r in found if FENCE in r.text)
    assert "bm25" in fence.explain["ranks"]
    relevant = system_prompt(state).split("[Relevant memories]\n")[1].split("\n\n")[0]
    assert relevant.splitlines() == [f"- {HIVE}"]


async def test_related_bullets_count_inside_top_k(
    make_client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    client = await make_client(**{"memory.top_k": 1, "embedding.dim": DIM})
    await seed(client, [HIVE, TEA])
    hive, tea = (r[0] for r in query(client.app[keys.CONFIG].storage.db_path,
                                     "SELECT id FROM memories ORDER BY id"))  # fmt: skip
    await client.app[keys.DB].write(
        lambda c: relations.link(
            c, hive, tea, 0.9, user_id="default", now=1.0, actor="test", relation_type="related_to"
        )
    )
    await post(client, GARDEN_HIVE)
    relevant = system_prompt(state).split("[Relevant memories]\n")[1].split("\n\n")[0]
    # One memory in all (seed 004: up to top-K), the fact asked about, not its neighbour.
    assert relevant.splitlines() == [f"- {HIVE}"]


async def test_no_memory_sections_when_there_is_nothing(
    client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    await post(client, "hello there")
    system = system_prompt(state)
    assert "[Long-term memory]" not in system and "[Relevant memories]" not in system


async def test_a_turn_teaches_the_next_one(
    client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    state.script = Script(extract=extract_by_keyword({"NASA": [ALEX]}))
    first = await post(client, "My name is Alex and I work at NASA")
    await drain(client.app[keys.CONFIG].storage.db_path, clock)
    path = client.app[keys.CONFIG].storage.db_path
    assert [r[0] for r in query(path, "SELECT content FROM memories")] == [ALEX]
    assert query(path, "SELECT turn_id FROM memory_sources LIMIT 1")[0][0] == first["turn_id"]
    await post(client, ASK_ALEX, session_id="s-other")
    assert f"[Relevant memories]\n- {ALEX}" in system_prompt(state)


async def test_embedder_down_costs_the_memories_not_the_reply(
    client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    await seed(client, [ALEX], BASE)
    memory = client.app[keys.MEMORY]

    async def broken(texts: Any) -> list[list[float]]:
        raise EmbeddingUnavailable("the embedding model is not loaded")

    memory.embedder.embed = broken
    body = await post(client, ASK_ALEX)
    assert body["action"] == "RESPOND" and "degraded" not in body
    system = system_prompt(state)
    # No vector for the question: the fact is still found by its words (BM25) and entities.
    assert f"[Long-term memory]\n{BASE}" in system and f"[Relevant memories]\n- {ALEX}" in system
    body = await post(client, "what do you remember about the weather")
    assert "[Relevant memories]" not in system_prompt(state)
    health = await (await client.get("/health")).json()
    assert_valid("health.response", health)
    assert health["embedding"]["problem"].startswith(f"embedder hashing-v1-{DIM} (hashing) is")
    assert health["status"] == "degraded"


async def test_a_database_error_in_retrieval_never_raises(
    client: Any, ollama: tuple[FakeOllamaState, str], monkeypatch: Any
) -> None:
    state, _ = ollama

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(retrieval, "read_context", explode)
    body = await post(client, "still there?")
    assert body["response"] == "You said: still there?"


async def test_health_reports_the_embedding_state(client: Any) -> None:
    health = await (await client.get("/health")).json()
    assert_valid("health.response", health)
    assert health["embedding"] == {
        "backend": "hashing",
        "model": f"hashing-v1-{DIM}",
        "dim": DIM,
        "stored_model": f"hashing-v1-{DIM}",
        "stored_dim": DIM,
        "vectors": True,
        "problem": None,
        "last_error": None,
    }
    assert health["status"] == "ok"


async def test_memory_off_means_working_memory_only(
    make_client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    client = await make_client(**{"memory.enabled": False})
    await post(client, "My name is Alex")
    path = client.app[keys.CONFIG].storage.db_path
    assert query(path, "SELECT COUNT(*) FROM jobs")[0][0] == 0
    health = await (await client.get("/health")).json()
    assert "embedding" not in health


async def test_the_query_vector_is_reused_for_the_turn(client: Any, clock: Any) -> None:
    memory = client.app[keys.MEMORY]
    seen: list[str] = []
    original = memory.embedder.embed

    async def counting(texts: Any) -> list[list[float]]:
        seen.extend(texts)
        return await original(texts)

    memory.embedder.embed = counting
    await post(client, "remember my blue umbrella")
    path = client.app[keys.CONFIG].storage.db_path
    await drain(path, clock)
    assert seen == ["remember my blue umbrella", "You said: remember my blue umbrella"]
    assert query(path, "SELECT COUNT(*) FROM turn_vectors")[0][0] == 2
