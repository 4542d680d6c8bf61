"""MemoryService.query through the real write path: filters, floors, budget, sources,
episodes, hostile FTS input, the LIKE fallback, hit counting off the request path, and why()."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllamaState
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memory_kit import MemoryEnv, memory_env, unpack

from lobug.errors import ApiError
from lobug.llm.embedders import EmbeddingUnavailable
from lobug.memory import service as memory_service
from lobug.memory.query import QueryFilters, QueryRequest, Reach, Source, tokens_of
from lobug.memory.vectors import knn

BIKE = "The user rides a red bicycle to the bakery every Saturday."
BOAT = "The user keeps a small wooden sailboat at the lake."
PIANO = "The user practises the piano after dinner."
JEN = "Jen is the user's sister and lives in Denver."


@pytest.fixture
async def mem(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[MemoryEnv]:
    monkeypatch.setattr(memory_service, "HIT_FLUSH_S", 3600)
    async with memory_env(tmp_path, ollama[1], clock) as env:
        yield env


async def remember(mem: MemoryEnv, content: str, **fields: Any) -> int:
    row = await mem.service.remember(content=content, actor="test", **fields)
    await mem.run()  # the embed_memory job gives it a vector
    return int(row["id"])


REACH = {"user_id", "stores", "categories", "statuses", "layer", "exclude_session"}


def ask(text: str, **fields: Any) -> QueryRequest:
    """A request as the chat prompt builds one (unvalidated: any text reaches the search); the
    reach's fields (what the door sets, not the caller) go in its reach."""
    reach = Reach(**{key: fields.pop(key) for key in REACH & fields.keys()})
    return QueryRequest.model_construct(query=text, reach=reach, **fields)


async def ids(mem: MemoryEnv, req: QueryRequest) -> list[int]:
    return [r.id for r in await mem.service.query(req)]


async def test_finds_by_meaning_words_and_entities_with_sources(mem: MemoryEnv) -> None:
    user, _ = await mem.exchange("I ride my red bicycle to the bakery on Saturdays")
    bike = await remember(mem, BIKE)
    await mem.db.write(
        lambda c: c.execute(
            "INSERT INTO memory_sources (memory_id, turn_id) VALUES (?, ?)", (bike, user.id)
        )
    )
    boat = await remember(mem, BOAT)
    jen = await remember(mem, JEN)
    (first, *_) = await mem.service.query(ask("the red bicycle and the bakery", top_k=3))
    assert (first.id, first.kind, first.text, first.store) == (bike, "fact", BIKE, "private")
    assert first.sources == [Source(turn_id=user.id, ref=None)]
    assert first.explain["ranks"].keys() >= {"vector", "bm25"}
    assert first.score == first.explain["final"]
    # An entity named in the question finds the memory linked to it (regex NER at write time).
    (hit, *_) = await mem.service.query(ask("where is jen these days", top_k=1))
    assert hit.id == jen and "entity" in hit.explain["ranks"]
    assert boat in await ids(mem, ask("sailboat", top_k=1))


async def test_filters(mem: MemoryEnv, clock: Any) -> None:
    start = clock()
    bike = await remember(mem, BIKE, category="hobbies", importance=0.9, session_id="s1")
    clock.advance(100)
    boat = await remember(mem, BOAT, category=None, pinned=True, store="shared")
    clock.advance(100)
    piano = await remember(mem, PIANO, category="hobbies", importance=0.2, user_id="other")
    everything = "bicycle sailboat piano user"

    async def found(**fields: Any) -> set[int]:
        return set(await ids(mem, ask(everything, top_k=10, **fields)))

    assert await found() == {bike, boat}  # the default user only
    assert await found(user_id="other") == {piano}
    assert await found(categories=("hobbies",)) == {bike}
    assert await found(categories=("general",)) == {boat}  # uncategorised counts as general
    assert await found(categories=()) == set()
    assert await found(stores=("shared", "social")) == {boat}
    assert await found(stores=()) == set()
    assert await found(filters=QueryFilters(pinned=True)) == {boat}
    assert await found(filters=QueryFilters(pinned=False)) == {bike}
    assert await found(filters=QueryFilters(importance_min=0.6)) == {bike}
    assert await found(filters=QueryFilters(importance_max=0.6)) == {boat}
    assert await found(filters=QueryFilters(session_id="s1")) == {bike}
    assert await found(exclude_session="s1") == {boat}
    assert await found(filters=QueryFilters(updated_after=start + 50)) == {boat}
    assert await found(filters=QueryFilters(updated_before=start + 50)) == {bike}
    assert await found(layer="long") == set()
    assert await found(layer="mid") == {bike, boat}
    assert await found(kinds=("insight",)) == set()
    await mem.service.forget(bike, purge=False, actor="test")
    assert await found() == {boat}
    # A soft-deleted memory stays hidden even when its status is asked for; an archived one is
    # out of the prompt's default set but still found (issue 10), unless the filter says not.
    assert await found(statuses=("active", "soft_deleted")) == {boat}
    await mem.db.write(
        lambda c: c.execute("UPDATE memories SET status = 'archived' WHERE id = ?", (boat,))
    )
    assert await found() == {boat}
    assert await found(statuses=("active",)) == set()
    assert await found(statuses=("archived",)) == {boat}


async def test_top_k_min_score_and_token_budget(mem: MemoryEnv) -> None:
    facts = [
        "The user owns a blue kayak for the river trips with Sam.",
        "A blue kayak paddle hangs in the hallway for river trips.",
        "River trips need the blue kayak roof rack on the car.",
        "The blue kayak leaks a little after long river trips.",
        "Mia calls river trips in the blue kayak an adventure.",
    ]
    for fact in facts:
        await remember(mem, fact)
    query = "blue kayak river trips"
    everything = await mem.service.query(ask(query, top_k=10))
    assert len(everything) == 5
    scores = [r.score for r in everything]
    assert scores == sorted(scores, reverse=True)
    assert len(await mem.service.query(ask(query, top_k=2))) == 2
    cut = (scores[1] + scores[2]) / 2  # min_score floors the final score (the old threshold)
    assert [r.id for r in await mem.service.query(ask(query, top_k=10, min_score=cut))] == [
        r.id for r in everything[:2]
    ]
    assert await mem.service.query(ask(query, min_score=scores[0] + 1)) == []
    costs = [tokens_of(r.text) for r in everything]
    assert costs[0] == -(-len(everything[0].text) // 4)  # ~4 characters a token, rounded up
    two, three = costs[0] + costs[1], costs[0] + costs[1] + costs[2]
    for budget, expected in [(1, 1), (costs[0], 1), (two - 1, 1), (two, 2), (three, 3)]:
        got = await mem.service.query(ask(query, top_k=10, budget_tokens=budget))
        assert [r.id for r in got] == [r.id for r in everything[:expected]], budget


async def test_episodes_are_turns_when_asked(mem: MemoryEnv) -> None:
    user, assistant = await mem.exchange("My sourdough starter is called Bubbles", "Cute name!")
    await remember(mem, "The user bakes sourdough bread on Sundays.")
    await mem.run()  # the turns' embed jobs
    only_facts = await mem.service.query(ask("sourdough starter bubbles"))
    assert {r.kind for r in only_facts} == {"fact"}
    both = await mem.service.query(ask("sourdough starter bubbles", kinds=("fact", "episode")))
    episode = next(r for r in both if r.kind == "episode")
    assert (episode.id, episode.text, episode.store) == (user.id, user.text, "private")
    assert episode.sources == [Source(turn_id=user.id, ref=None)]
    assert episode.explain.keys() == both[0].explain.keys()
    roles = QueryFilters(role="assistant")
    assert assistant is not None
    assert await ids(mem, ask("cute name", kinds=("episode",), filters=roles)) == [assistant.id]
    # The conversation log is private: lower trust never sees it, nor a category filter.
    assert await mem.service.query(ask("sourdough", kinds=("episode",), stores=("social",))) == []
    assert await mem.service.query(ask("sourdough", kinds=("episode",), categories=("x",))) == []


async def test_works_without_vectors(mem: MemoryEnv) -> None:
    bike = await remember(mem, BIKE)

    async def broken(texts: Any) -> list[list[float]]:
        raise EmbeddingUnavailable("down")

    mem.service.embedder.embed = broken  # type: ignore[method-assign]
    (hit,) = await mem.service.query(ask("red bicycle bakery"))
    assert hit.id == bike and "vector" not in hit.explain["ranks"]


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


async def test_threshold_is_a_floor_on_the_cosine_similarity(mem: MemoryEnv) -> None:
    """Seed 001 §6: `threshold` drops results less similar to the query than it (cosine of
    the query's vector and the stored one), whatever their final score; a result with no
    stored vector has no similarity and is dropped."""
    facts = [
        "The user owns a blue kayak for the river trips with Sam.",
        "A blue kayak paddle hangs in the hallway for river trips.",
        "Sam calls every river outing an adventure.",
        "The user bought a roof rack for the car.",
    ]
    made = [await remember(mem, fact) for fact in facts]
    summary = await remember(
        mem, "The user and Sam planned blue kayak river trips.", kind="summary"
    )
    # Its vector not there (yet): written while the embedder was down, say.
    await mem.db.write(lambda c: knn.drop_memory_vector(c, summary))
    user, _ = await mem.exchange("We took the blue kayak on the river trips again")
    await mem.run()  # the turns' vectors
    query, kinds = "blue kayak river trips", ("fact", "summary", "episode")
    everything = await mem.service.query(ask(query, kinds=kinds, top_k=20))
    (query_vector,) = await mem.service.embedder.embed([query])
    similarity: dict[tuple[str, int], float | None] = {}
    for result in everything:
        table, key = ("turn_vectors", "turn_id") if result.kind == "episode" else (
            "memory_vectors", "memory_id",
        )  # fmt: skip
        blob = mem.value(f"SELECT embedding FROM {table} WHERE {key} = ?", result.id)
        expected = None if blob is None else cosine(query_vector, unpack(blob))
        got = result.explain["similarity"]
        assert (got is None) == (expected is None) and (
            got is None or math.isclose(got, expected, abs_tol=1e-5)
        ), result
        similarity[(result.kind, result.id)] = got
    assert similarity[("summary", summary)] is None  # no vector, no similarity
    assert similarity[("episode", user.id)] is not None  # a turn has one
    assert {("fact", i) for i in made[:3]} <= similarity.keys()
    for floor in sorted({s for s in similarity.values() if s is not None}) + [0.0, 0.99]:
        got = await mem.service.query(ask(query, kinds=kinds, top_k=20, threshold=floor))
        expected = [
            (r.kind, r.id) for r in everything
            if similarity[(r.kind, r.id)] is not None and similarity[(r.kind, r.id)] >= floor
        ]  # fmt: skip
        assert [(r.kind, r.id) for r in got] == expected, floor  # the score order is kept
    # Not a floor on the final score: the summary scores, but never passes even at 0.
    low = await mem.service.query(ask(query, kinds=kinds, top_k=20, threshold=0.0))
    assert summary not in {r.id for r in low if r.kind == "summary"}
    assert all(r.score > 0 for r in everything)


async def test_threshold_needs_the_query_vector(mem: MemoryEnv) -> None:
    bike = await remember(mem, BIKE)

    async def broken(texts: Any) -> list[list[float]]:
        raise EmbeddingUnavailable("down for maintenance")

    mem.service.embedder.embed = broken  # type: ignore[method-assign]
    with pytest.raises(ApiError) as info:
        await mem.service.query(ask("red bicycle bakery", threshold=0.2))
    assert (info.value.status, info.value.code) == (503, "unavailable")
    assert "threshold" in info.value.message and "down for maintenance" in info.value.message
    (hit,) = await mem.service.query(ask("red bicycle bakery", min_score=0.01))
    assert hit.id == bike and hit.explain["similarity"] is None


async def test_like_fallback_without_fts5(mem: MemoryEnv) -> None:
    bike = await remember(mem, BIKE)
    await remember(mem, BOAT)

    def drop_fts(conn: Any) -> None:
        for trigger in ("trg_memories_ai", "trg_memories_ad", "trg_memories_au"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE memories_fts")

    await mem.db.write(drop_fts)
    mem.service.embedder.embed = None  # type: ignore[assignment] # words only, via LIKE
    got = await mem.service.query(ask("bicycle bakery"))
    assert [r.id for r in got] == [bike] and "bm25" in got[0].explain["ranks"]


HOSTILE = [
    '"',
    '""""',
    "AND OR NOT",
    "NEAR(a b, 3)",
    "bicycle*",
    "content:bicycle",
    "^bicycle",
    "'; DROP TABLE memories; --",
    "%_\\",
    "\x00\x01",
    "🚲🥐",
    "(((",
    "a" * 5000,
    "bicycle " * 500,
    "",
]


async def test_hostile_text_never_breaks_query(mem: MemoryEnv) -> None:
    bike = await remember(mem, BIKE)
    generated: list[str] = []

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
    def collect(text: str) -> None:
        generated.append(text)

    collect()
    for text in HOSTILE + generated:
        found = await mem.service.query(ask(text, top_k=3, kinds=("fact", "episode")))
        assert all(r.kind in ("fact", "episode") for r in found), text
    assert bike in await ids(mem, ask('"red" bicycle* AND NOT( bakery'))
    assert mem.value("SELECT COUNT(*) FROM memories") == 1


async def test_hits_are_counted_off_the_request_path(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_service, "HIT_FLUSH_S", 0.05)
    async with memory_env(tmp_path, ollama[1], clock) as mem:
        bike = await remember(mem, BIKE)
        writes = 0
        original = mem.db.write

        async def counting(fn: Any, *args: Any) -> Any:
            nonlocal writes
            writes += 1
            return await original(fn, *args)

        mem.db.write = counting  # type: ignore[method-assign]
        # The flusher waits until both queries are done, however slow the machine is, so the
        # writes counted below are the queries' own and then the flush's.
        queries_done = asyncio.Event()
        flush = mem.service.flush_hits

        async def after_the_queries() -> int:
            await queries_done.wait()
            return await flush()

        mem.service.flush_hits = after_the_queries  # type: ignore[method-assign]
        clock.advance(60)
        await mem.service.query(ask("red bicycle"))
        await mem.service.query(ask("bakery bicycle"))
        assert writes == 0, "a query must not write"
        queries_done.set()
        assert mem.value("SELECT hits FROM memories WHERE id = ?", bike) == 0
        for _ in range(100):  # the flusher runs every 50 ms
            await asyncio.sleep(0.02)
            if mem.value("SELECT hits FROM memories WHERE id = ?", bike):
                break
        row = mem.rows("SELECT hits, last_accessed FROM memories WHERE id = ?", bike)[0]
        assert (row["hits"], row["last_accessed"]) == (2, clock())
        # A counter, not a history row per retrieval (issue 42).
        assert mem.rows("SELECT * FROM history WHERE memory_id = ? AND event = 'HIT'", bike) == []
        assert writes == 1  # both queries' hits in one transaction


async def test_why_matches_the_ranking_query_returned(mem: MemoryEnv, clock: Any) -> None:
    facts = [
        "The user repairs a red bicycle in the garage.",
        "A red toolbox sits in the garage next to the bicycle pump.",
        "The garage door is red and squeaks when it opens.",
        "The user repairs old radios for the neighbours.",
    ]
    for i, fact in enumerate(facts):
        await remember(mem, fact, importance=0.2 * i)
        clock.advance(86_400)
    await mem.exchange("I repair bicycles")
    query = "repairs a red bicycle in the garage"
    results = await mem.service.query(ask(query, top_k=10))
    assert len(results) == 4
    for rank, result in enumerate(results, start=1):
        why = await mem.service.why(result.id, query=query)
        assert why is not None
        assert why["score"] == result.explain and why["score"]["final"] == result.score
        assert why["rank"] == rank and why["candidates"] == 4
        assert why["similarity"] == result.explain["similarity"] is not None
    plain = await mem.service.why(results[0].id)
    assert plain is not None and plain["rank"] is None and plain["similarity"] is None
    assert plain["score"].keys() == results[0].explain.keys() and plain["score"]["rrf"] == 0.0
    assert plain["memory_score"]["age_days"] == plain["age_days"]
    assert await mem.service.why(999) is None
    assert await mem.service.why(results[0].id, user_id="other") is None


async def test_why_tells_rules_hits_and_decisions(mem: MemoryEnv) -> None:
    await mem.exchange("I am vegetarian")
    await mem.run()
    (memory_id,) = [r[0] for r in mem.rows("SELECT id FROM memories")]
    await mem.exchange("just so you know, I'm vegetarian")
    await mem.run()
    await mem.service.query(ask("vegetarian"))
    await mem.service.flush_hits()
    why = await mem.service.why(memory_id, query="is the user vegetarian")
    assert why is not None
    assert why["rules"] == ["identity.trait"]
    assert why["hits"] == 2  # the repeat, and the retrieval
    assert [d["event"] for d in why["decisions"]] == ["MERGE", "ADD"]
    assert len(why["sources"]) == 4  # both exchanges, user and assistant turns
    assert why["rank"] == 1 and why["score"]["ranks"]["bm25"] == 1


async def test_the_prompt_path_never_writes(mem: MemoryEnv, clock: Any) -> None:
    bike = await remember(mem, BIKE)
    (await mem.service.prompt_sections(user_id="default", session_id="s9", text="hello")).all()
    await remember(mem, BOAT)  # news for s9 from now on
    writes = 0
    original = mem.db.write

    async def counting(fn: Any, *args: Any) -> Any:
        nonlocal writes
        writes += 1
        return await original(fn, *args)

    mem.db.write = counting  # type: ignore[method-assign]
    sections = (
        await mem.service.prompt_sections(
            user_id="default", session_id="s9", text="the red bicycle and the bakery"
        )
    ).all()
    assert sections[0].startswith("Memory updates since rev 1:\n- +created:")
    assert sections[1].startswith(f"[Relevant memories]\n- {BIKE}")
    again = (
        await mem.service.prompt_sections(user_id="default", session_id="s9", text="bicycle")
    ).all()
    assert not again[0].startswith("Memory updates")  # shown once, even before it is written
    assert writes == 0 and mem.value("SELECT hits FROM memories WHERE id = ?", bike) == 0
    assert mem.value("SELECT rev FROM revisions WHERE session_id = 's9'") is None
    await mem.service.flush_hits()  # what the periodic flush does: one transaction for both
    assert writes == 1 and mem.value("SELECT hits FROM memories WHERE id = ?", bike) == 2
    assert mem.value("SELECT rev FROM revisions WHERE session_id = 's9'") == 2
