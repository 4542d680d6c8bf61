"""Category context modes in the prompt (seed 001 §5): `all` is always there (active, valid,
capped), `rag` only when retrieved (at most `rag_length`), `none` never (only an explicit
/v1/query finds it) — through the real chat turn, and the functions on a real database."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllamaState

from lobug import keys
from lobug.access import CategoryPolicy
from lobug.memory.query import QueryResult
from lobug.memory.search import prompt_context
from lobug.memory.table import rows as store
from lobug.memory.vectors import knn

CATEGORIES = """
[categories]
system = [
  {name = "profile", context = "all"},
  {name = "event", context = "rag", rag_length = 2},
  {name = "general", context = "rag"},
  {name = "diary", context = "none"},
]
custom = []
[allowlists]
supervisor = ["profile", "event", "general", "diary"]
planner = ["event"]
"""
NAME = "The user's name is Alex."
AGE = "The user is 41 years old."
OLD_CITY = "The user lives in Portland."  # archived
OLD_COLOR = "The user's favorite color is blue."  # superseded (valid_until set)
PARTY = [f"The user is planning garden party number {i} with lanterns." for i in range(4)]
DIARY = "The user wrote in the diary that the garden party with lanterns felt lonely."
ASK = "tell me about the garden party with lanterns"


def policy() -> CategoryPolicy:
    return CategoryPolicy.from_mapping(tomllib.loads(CATEGORIES), "test")


@pytest.fixture
async def client(make_client: Any, tmp_path: Path) -> Any:
    path = tmp_path / "categories.toml"
    path.write_text(CATEGORIES, encoding="utf-8")
    return await make_client(**{"api.categories_file": str(path), "embedding.dim": 256})


async def seed(client: Any, facts: list[tuple[str, str | None]], **fields: Any) -> list[int]:
    memory = client.app[keys.MEMORY]
    vectors = await memory.embedder.embed([text for text, _ in facts])

    def write(conn: Any) -> list[int]:
        ids = []
        for (text, category), vector in zip(facts, vectors, strict=True):
            memory_id = store.insert_memory(
                conn, user_id="default", kind="fact", content=text, now=1.0, actor="test",
                category=category, **fields,
            )  # fmt: skip
            knn.put_memory_vector(conn, memory_id, vector)
            ids.append(memory_id)
        return ids

    return await client.app[keys.DB].write(write)


async def retire(client: Any, memory_id: int, sql: str) -> None:
    await client.app[keys.DB].write(lambda c: c.execute(sql, (memory_id,)))


def system_prompt(state: FakeOllamaState) -> str:
    return state.prompt_text()


def section(system: str, title: str) -> list[str]:
    if title not in system:
        return []
    return system.split(title + "\n")[1].split("\n\n")[0].splitlines()


async def test_the_prompt_honours_all_rag_and_none(
    client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    profile = await seed(client, [(NAME, "profile"), (AGE, "profile"), (OLD_CITY, "profile"),
                                  (OLD_COLOR, "profile")])  # fmt: skip
    await retire(client, profile[2], "UPDATE memories SET status = 'archived' WHERE id = ?")
    await retire(client, profile[3], "UPDATE memories SET valid_until = 2.0 WHERE id = ?")
    await seed(client, [(text, "event") for text in PARTY] + [(DIARY, "diary")])
    resp = await client.post("/chat/text", json={"text": ASK, "session_id": "s-new"})
    assert resp.status == 200
    system = system_prompt(state)
    always = section(system, prompt_context.ALWAYS_TITLE)
    # `all`: every active, still valid profile fact, whatever the question asked.
    assert sorted(always) == sorted([f"- {NAME}", f"- {AGE}"])
    relevant = section(system, "[Relevant memories]")
    # `rag` with rag_length 2: two of the four matching events; `none`: never the diary.
    assert len(relevant) == 2 and all("garden party number" in line for line in relevant)
    assert DIARY not in system and OLD_CITY not in system and OLD_COLOR not in system
    assert system.index(prompt_context.ALWAYS_TITLE) < system.index("[Relevant memories]")
    # Still findable by an explicit query that names the category.
    resp = await client.post("/v1/query", json={"query": ASK, "categories": ["diary"]})
    assert [r["text"] for r in (await resp.json())["results"]] == [f"[diary] {DIARY}"]


async def test_a_huge_all_category_cannot_blow_the_prompt(
    client: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    filler = "and keeps a very detailed record of every single bird seen from the kitchen window"
    await seed(client, [(f"The user owns {i} notebooks {filler}.", "profile") for i in range(60)])
    (pinned,) = await seed(client, [(NAME, "profile")], pinned=True)
    await client.post("/chat/text", json={"text": "hello", "session_id": "s-new"})
    always = section(system_prompt(state), prompt_context.ALWAYS_TITLE)
    assert always[0] == f"- {NAME}"  # pinned first
    assert 1 < len(always) <= prompt_context.ALWAYS_MAX
    assert sum(len(line) for line in always) <= prompt_context.ALWAYS_BUDGET_TOKENS * 4


async def test_read_always_within_stores_and_categories(client: Any) -> None:
    await seed(client, [(NAME, "profile")])
    await seed(client, [(AGE, "profile")], store="social")
    await seed(client, [(PARTY[0], "event")])
    read = client.app[keys.DB].read
    rules = policy()

    async def texts(**kw: Any) -> list[str]:
        found = await read(lambda c: prompt_context.read_always(c, rules, user_id="default", **kw))
        return sorted(a.text for a in found)

    assert await texts() == sorted([NAME, AGE])
    assert await texts(stores=("social",)) == [AGE]
    assert await texts(stores=()) == []
    assert await texts(categories=("event",)) == []  # an allowlist without `profile`
    assert await texts(limit=1) == [AGE]  # same importance: the newest first


def result(memory_id: int, category: str | None) -> QueryResult:
    return QueryResult(
        id=memory_id,
        kind="fact",
        category=category,
        text=f"fact {memory_id}",
        score=1.0,
        sources=[],
    )


def test_pick_relevant_applies_rag_length_none_and_skip() -> None:
    found = [result(1, "event"), result(2, "diary"), result(3, "event"), result(4, "event"),
             result(5, None), result(6, "profile"), result(7, "unknown")]  # fmt: skip
    picked = prompt_context.pick_relevant(found, policy(), k=10, skip={6})
    assert [r.id for r in picked] == [1, 3, 5, 7]  # 2 events, no diary, profile already shown
    assert [r.id for r in prompt_context.pick_relevant(found, policy(), k=2)] == [1, 3]


async def test_v1_context_gives_the_prompt_sections(client: Any) -> None:
    await seed(client, [(NAME, "profile")])
    await seed(client, [(text, "event") for text in PARTY] + [(DIARY, "diary")])
    resp = await client.get("/v1/context", params={"session_id": "s-new", "q": ASK})
    body = await resp.json()
    assert resp.status == 200, body
    assert [a["text"] for a in body["always"]] == [NAME]
    assert len(body["memories"]) == 2
    assert all(m["category"] == "event" for m in body["memories"])
