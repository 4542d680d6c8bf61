"""/v1 as app developers read seed 001 (issue 10): PATCH through the writing validator, confirm,
who wrote a memory (agent_id, run_id, actor_id), and `threshold` as a similarity floor. Every
response is checked against lobug/api/openapi.json (api_contract.V1); assertions are on rows."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from api_kit import ids, make_app
from memory_kit import drain, unpack

from lobug import keys
from lobug.llm.embedders import EmbeddingUnavailable
from lobug.memory import service as memory_service
from lobug.memory.vectors import knn

TEA = "The user prefers green tea over coffee in the morning."
KAYAK = "The user paddles a blue kayak on river trips with Sam."


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


async def test_patch_content_goes_through_the_writing_validator(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    tea = await app.remember(TEA, category="preference")
    before = app.rows("SELECT * FROM memories WHERE id = ?", tea["id"])[0]
    rejected = {
        "I prefer oolong tea.": "first_person",
        "You like oolong tea.": "addresses_assistant",
        "The user likes tea.\nThe user likes oolong.": "multiline",
        "- - -": "empty",
        "The user likes oolong tea " + "very " * 60 + "much": "too_long",
    }
    for content, reason in rejected.items():
        status, body, _ = await app.local.call(
            "PATCH", f"/v1/memories/{tea['id']}", json={"content": content}
        )
        assert status == 400, (content, body)
        assert body["error"]["code"] == "invalid_request"
        assert body["error"]["details"] == {"field": "content", "reason": reason}
        # The same answer POST gives for the same text.
        _, posted, _ = await app.local.call("POST", "/v1/memories", json={"content": content})
        assert posted == body
    # Nothing was written, and the rejections were counted like a POST's.
    assert app.rows("SELECT * FROM memories WHERE id = ?", tea["id"])[0] == before
    assert app.value("SELECT COUNT(*) FROM history WHERE memory_id = ?", tea["id"]) == 1
    counted = app.value(
        "SELECT value FROM meta WHERE key = ?", "counter.validator_rejected.first_person"
    )
    assert int(counted) == 2

    # Valid content is stored normalised the way POST stores it (spaces, case, full stop).
    changed = await app.local.patch(
        f"/v1/memories/{tea['id']}", {"content": '  "the user   prefers oolong tea"  '}
    )
    assert changed["content"] == "The user prefers oolong tea."
    assert app.value("SELECT content FROM memories WHERE id = ?", tea["id"]) == changed["content"]
    posted = await app.remember('  "the user   rides a red   bicycle"  ')
    assert posted["content"] == "The user rides a red bicycle."
    # A long summary is within its own kind's limit (the constraints follow the memory's kind).
    summary = await app.remember("The user talked about tea.", kind="summary")
    long_text = "The user talked about tea, travel and work. " * 20
    assert len(long_text.strip()) > 280
    done = await app.local.patch(f"/v1/memories/{summary['id']}", {"content": long_text})
    assert done["content"] == long_text.strip()


async def test_confirm_protects_a_memory_for_good(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    tea = await app.remember(TEA, category="preference", importance=0.3)
    assert app.value("SELECT decay_rate FROM memories WHERE id = ?", tea["id"]) > 0
    await app.local.get("/v1/context?session_id=watcher")  # the session's delta starts here
    status, confirmed, headers = await app.local.call(
        "POST", f"/v1/memories/{tea['id']}/confirm", 200, json={}
    )
    assert headers["ETag"] == f'"{confirmed["etag"]}"'
    assert (confirmed["id"], confirmed["confidence"], confirmed["decay_rate"]) == (
        tea["id"], 1.0, 0.0,
    )  # fmt: skip
    row = app.rows("SELECT confidence, decay_rate FROM memories WHERE id = ?", tea["id"])[0]
    assert (row["confidence"], row["decay_rate"]) == (1.0, 0.0)
    history = await app.local.get(f"/v1/memories/{tea['id']}/history")
    latest = history["events"][0]
    assert latest["event"] == "UPDATE" and latest["actor"] == "loopback:local"
    assert latest["meta"]["confirmed"] is True and latest["meta"]["decay_rate"] > 0
    context = await app.local.get("/v1/context?session_id=watcher")
    assert [(d["event"], d["memory_id"]) for d in context["delta"]] == [("updated", tea["id"])]

    # Unknown, invisible (the planner's allowlist has no `preference`), soft-deleted.
    await app.local.call("POST", "/v1/memories/999999/confirm", 404, json={})
    await app.local.call("POST", "/v1/memories/abc/confirm", 404, json={})
    planner = app.planner
    await planner.call("POST", f"/v1/memories/{tea['id']}/confirm", 404, json={})
    private = await app.remember(KAYAK, store="private")
    await app.as_["familiar"].call("POST", f"/v1/memories/{private['id']}/confirm", 404, json={})
    await app.local.delete(f"/v1/memories/{private['id']}")
    status, body, _ = await app.local.call(
        "POST", f"/v1/memories/{private['id']}/confirm", 409, json={}
    )
    assert "restore it first" in body["error"]["message"]
    assert app.value("SELECT decay_rate FROM memories WHERE id = ?", private["id"]) > 0


async def test_writers_are_recorded_returned_and_filterable(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    mine = await app.remember(TEA)  # loopback: the agent "local"
    assert (mine["agent_id"], mine["run_id"], mine["actor_id"]) == ("local", None, None)
    tokened = await app.as_["full"].post(
        "/v1/memories", {"content": KAYAK, "run_id": "run-7", "actor_id": "alex"}, 201
    )
    assert (tokened["agent_id"], tokened["run_id"], tokened["actor_id"]) == (
        "supervisor", "run-7", "alex",
    )  # fmt: skip
    named = await app.remember(
        "The user keeps bees in the garden hive.", agent_id="gardener", run_id="run-8"
    )
    row = app.rows("SELECT agent_id, run_id, actor_id FROM memories WHERE id = ?", named["id"])
    assert tuple(row[0]) == ("gardener", "run-8", None)
    assert (await app.local.get(f"/v1/memories/{named['id']}"))["agent_id"] == "gardener"
    add = app.value("SELECT meta FROM history WHERE memory_id = ? AND event = 'ADD'", named["id"])
    assert json.loads(add)["agent_id"] == "gardener"
    # Remembering a known fact again merges: the memory keeps its first writer.
    again = await app.as_["full"].post("/v1/memories", {"content": TEA, "agent_id": "other"}, 201)
    assert (again["id"], again["action"], again["agent_id"]) == (mine["id"], "merged", "local")

    # GET /v1/memories filters.
    assert ids(await app.local.get("/v1/memories?agent_id=supervisor")) == [tokened["id"]]
    assert ids(await app.local.get("/v1/memories?run_id=run-8")) == [named["id"]]
    assert ids(await app.local.get("/v1/memories?actor_id=alex")) == [tokened["id"]]
    assert ids(await app.local.get("/v1/memories?agent_id=gardener&run_id=run-7")) == []
    # POST /v1/query filters (seed 001 §6, §6.1).
    words = "green tea coffee blue kayak river bees garden hive user"

    async def found(filters: dict[str, Any]) -> set[int]:
        body = {"query": words, "top_k": 10, "filters": filters}
        return {r["id"] for r in (await app.local.post("/v1/query", body))["results"]}

    assert await found({}) == {mine["id"], tokened["id"], named["id"]}
    assert await found({"agent_id": "local"}) == {mine["id"]}
    assert await found({"run_id": "run-7"}) == {tokened["id"]}
    assert await found({"actor_id": "alex", "agent_id": "supervisor"}) == {tokened["id"]}
    assert await found({"agent_id": "nobody"}) == set()
    # A writer filter on episodes: turns have no writer, so they drop out.
    await app.local.post("/v1/turns", {"session_id": "s", "role": "user", "text": words,
                                       "auto_extract": False}, 201)  # fmt: skip
    episodes = await app.local.post(
        "/v1/query", {"query": words, "kinds": ["episode"], "filters": {"agent_id": "local"}}
    )
    assert episodes["results"] == []


async def test_turns_accept_and_validate_writer_ids(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    body = {"session_id": "s", "role": "user", "text": "hello there", "auto_extract": False}
    await app.local.post(
        "/v1/turns", {**body, "agent_id": "a", "run_id": "r", "actor_id": "p"}, 201
    )
    status, error, _ = await app.local.call("POST", "/v1/turns", json={**body, "run_id": "r\x00"})
    assert status == 400 and error["error"]["details"]["field"] == "run_id"


async def test_threshold_is_the_query_similarity_floor(
    make_client: Callable[..., Any], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_service, "HIT_FLUSH_S", 3600)  # scores stay put
    app = await make_app(make_client)
    facts = [
        "The user paddles a blue kayak on river trips with Sam.",
        "The blue kayak leaks a little after long river trips.",
        "The user keeps a blue kayak paddle in the hallway.",
        "Sam calls every river outing an adventure.",
    ]
    made = [await app.remember(fact) for fact in facts]
    summary = await app.remember("The user and Sam planned blue kayak river trips.", kind="summary")
    memory = app.client.app[keys.RECORDS].memory
    await drain(app.db_path, clock)  # the facts' embed jobs
    # The summary's vector is not there (yet): written while the embedder was down, say.
    await app.client.app[keys.DB].write(lambda c: knn.drop_memory_vector(c, summary["id"]))
    query = "blue kayak river trips"
    body = {"query": query, "kinds": ["fact", "summary"], "top_k": 10, "return": "full"}
    everything = (await app.local.post("/v1/query", body))["results"]
    by_id = {r["id"]: r for r in everything}
    assert set(by_id) >= {m["id"] for m in made[:3]} | {summary["id"]}
    # The similarity used: 1 − cosine distance of the query's vector and the stored one.
    (query_vector,) = await memory.embedder.embed([query])
    for result in everything:
        blob = app.value("SELECT embedding FROM memory_vectors WHERE memory_id = ?", result["id"])
        expected = None if blob is None else cosine(query_vector, unpack(blob))
        got = result["explain"]["similarity"]
        assert (got is None) == (expected is None), result
        if expected is not None:
            assert math.isclose(got, expected, abs_tol=1e-5)
    assert by_id[summary["id"]]["explain"]["similarity"] is None  # no vector, no similarity
    sims = sorted((r["explain"]["similarity"], r["id"]) for r in everything if r["kind"] == "fact")
    cut = (sims[-2][0] + sims[-3][0]) / 2
    strict = (await app.local.post("/v1/query", {**body, "threshold": cut}))["results"]
    assert {r["id"] for r in strict} == {sims[-1][1], sims[-2][1]}
    assert all(r["explain"]["similarity"] >= cut for r in strict)
    # Not the final score: at 0 every result with a vector pointing the query's way passes,
    # and the summary (no vector, so no similarity) never does, however well it scores.
    loose = (await app.local.post("/v1/query", {**body, "threshold": 0.0}))["results"]
    assert summary["id"] not in {r["id"] for r in loose}
    assert {r["id"] for r in loose} == {i for s, i in sims if s >= 0.0}
    # min_score is the old floor on the final score.
    scores = [r["score"] for r in everything]
    floor = (await app.local.post("/v1/query", {**body, "min_score": scores[1]}))["results"]
    assert [r["id"] for r in floor] == [r["id"] for r in everything[:2]]


async def test_threshold_without_the_embedder_is_503(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    await app.remember(KAYAK)
    memory = app.client.app[keys.RECORDS].memory

    async def broken(texts: Any) -> list[list[float]]:
        raise EmbeddingUnavailable("the embedding model is not reachable")

    memory.embedder.embed = broken
    body = {"query": "blue kayak river", "threshold": 0.5}
    status, error, _ = await app.local.call("POST", "/v1/query", 503, json=body)
    assert error["error"]["code"] == "unavailable"
    assert "threshold" in error["error"]["message"]
    assert "not reachable" in error["error"]["message"]
    # Without a threshold the query still answers from words; min_score needs no vectors.
    words = await app.local.post("/v1/query", {"query": "blue kayak river", "return": "full"})
    assert [r["text"] for r in words["results"]] == [KAYAK]
    assert words["results"][0]["explain"]["similarity"] is None  # no query vector
    floor = await app.local.post("/v1/query", {"query": "blue kayak river", "min_score": 0.01})
    assert len(floor["results"]) == 1


async def test_why_reports_the_similarity_a_threshold_compares(
    make_client: Callable[..., Any], clock: Any
) -> None:
    app = await make_app(make_client)
    kayak = await app.remember(KAYAK)
    await drain(app.db_path, clock)  # its embed job
    found = await app.local.post(
        "/v1/query", {"query": "blue kayak river", "return": "full", "top_k": 1}
    )
    similarity = found["results"][0]["explain"]["similarity"]
    why = await app.local.get(f"/v1/memories/{kayak['id']}/why?q=blue+kayak+river")
    assert math.isclose(why["similarity"], similarity, abs_tol=1e-9)
    assert math.isclose(why["terms"]["similarity"], similarity, abs_tol=1e-9)
    assert (await app.local.get(f"/v1/memories/{kayak['id']}/why"))["similarity"] is None
