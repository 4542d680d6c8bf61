"""Access control through HTTP: the trust matrix (every level × store × read and write) and the
category allowlists (seed 001 §5), enforced in the service layer the CLI shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from api_kit import IN_STORE, TRUSTS, App, ids, make_app

from lobug.access import STORES, STORES_BY_TRUST

TASK = "The user must renew the car insurance before the end of March."
HOBBY = "The user collects vintage postcards from Portugal with a friend called Maria."


async def read_everything(app: App, caller: Any, memory_id: int, text: str) -> dict[str, bool]:
    """Whether the caller sees the memory through each read route."""
    seen = {}
    status, _, _ = await caller.call("GET", f"/v1/memories/{memory_id}")
    seen["get"] = status == 200
    seen["list"] = memory_id in ids(await caller.get("/v1/memories?limit=500"))
    seen["search"] = memory_id in ids(await caller.get("/v1/memories?q=" + text.split()[3]))
    found = await caller.post("/v1/query", {"query": text, "top_k": 100})
    seen["query"] = memory_id in [r["id"] for r in found["results"]]
    for route in ("history", "why"):
        status, _, _ = await caller.call("GET", f"/v1/memories/{memory_id}/{route}")
        seen[route] = status == 200
    status, _, _ = await caller.call("GET", f"/v1/timeline?anchor={memory_id}")
    seen["timeline"] = status == 200
    stats = await caller.get("/v1/stats")
    seen["stats"] = stats["memories"]["total"] == 1
    return seen


@pytest.mark.parametrize("op", ["read", "write"])
@pytest.mark.parametrize("store", STORES)
@pytest.mark.parametrize("trust", TRUSTS)
async def test_trust_matrix(
    make_client: Callable[..., Any], trust: str, store: str, op: str
) -> None:
    app = await make_app(make_client)
    caller = app.as_[trust]
    allowed = store in STORES_BY_TRUST[trust]
    text = IN_STORE[store]
    if op == "read":
        memory = await app.remember(text, category="personal", store=store)
        seen = await read_everything(app, caller, memory["id"], text)
        assert seen == dict.fromkeys(seen, allowed), seen
        # Changing, confirming, deleting or restoring what one cannot see: as if it did not exist.
        for method, path in (
            ("PATCH", ""), ("POST", "/confirm"), ("DELETE", ""), ("POST", "/restore"),
        ):  # fmt: skip
            body = {"importance": 0.9} if method == "PATCH" else {} if method == "POST" else None
            status, _, _ = await caller.call(
                method, f"/v1/memories/{memory['id']}{path}", json=body
            )
            assert status == (200 if allowed else 404), (method, path)
        assert app.value("SELECT importance FROM memories") == (0.9 if allowed else 0.5)
        assert (app.value("SELECT decay_rate FROM memories") == 0) == allowed  # confirmed
        return
    status, body, _ = await caller.call(
        "POST", "/v1/memories", json={"content": text, "category": "personal", "store": store}
    )
    assert status == (201 if allowed else 403), body
    stored = app.rows("SELECT store FROM memories")
    assert [r[0] for r in stored] == ([store] if allowed else [])
    if not allowed:
        assert body["error"]["details"] == {"store": store, "trust": trust}
        return
    # Moving a memory between stores needs the target to be writable too.
    memory_id = body["id"]
    for target in STORES:
        status, body, _ = await caller.call(
            "PATCH", f"/v1/memories/{memory_id}", json={"store": target}
        )
        assert status == (200 if target in STORES_BY_TRUST[trust] else 403), (target, body)


async def test_default_write_store_follows_trust(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    for trust, expected in (("full", "private"), ("inner", "shared"), ("familiar", "social")):
        memory = await app.as_[trust].post(
            "/v1/memories", {"content": IN_STORE[expected], "category": "personal"}, 201
        )
        assert memory["store"] == expected
    status, body, _ = await app.as_["public"].call(
        "POST", "/v1/memories", 403, json={"content": "The user is tall.", "category": "personal"}
    )
    assert "writable: none" in body["error"]["message"]


async def test_conversation_turns_are_private(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    turn = {"session_id": "chat-1", "role": "user", "text": "I collect vintage postcards"}
    await app.as_["full"].post("/v1/turns", turn, 201)
    for trust in ("inner", "familiar", "public"):
        caller = app.as_[trust]
        await caller.post("/v1/turns", turn, 403)
        context = await caller.get("/v1/context?session_id=chat-1")
        assert context["short_term"] == [] and context["base_memory"] == ""
        status, body, _ = await caller.call(
            "POST", "/v1/query", 403, json={"query": "postcards", "kinds": ["episode"]}
        )
        assert "conversation turns" in body["error"]["message"]
        assert (await caller.get("/v1/stats"))["turns"] == 0
        await caller.call("GET", "/v1/export", 403)
        await caller.call("POST", "/v1/gc", 403, json={})
    assert app.value("SELECT COUNT(*) FROM turns") == 1


async def test_category_allowlist_over_http(make_client: Callable[..., Any]) -> None:
    """The planner token has full trust but the planner's categories (goals, tasks, …)."""
    app = await make_app(make_client)
    task = await app.remember(TASK, category="tasks")
    hobby = await app.remember(HOBBY, category="interests")
    loose = await app.remember("The user owns a small blue sailing boat.")  # general
    planner = app.planner

    assert ids(await planner.get("/v1/memories")) == [task["id"]]
    await planner.get(f"/v1/memories/{hobby['id']}", 404)
    await planner.get(f"/v1/memories/{loose['id']}", 404)
    status, body, _ = await planner.call("GET", "/v1/memories?category=interests", 403)
    assert body["error"]["details"] == {"agent": "planner", "categories": ["interests"]}
    found = await planner.post("/v1/query", {"query": "insurance postcards boat", "top_k": 10})
    assert [r["id"] for r in found["results"]] == [task["id"]]
    status, body, _ = await planner.call(
        "POST", "/v1/query", 403, json={"query": "postcards", "categories": ["tasks", "interests"]}
    )
    assert body["error"]["details"]["categories"] == ["interests"]
    assert (await planner.post("/v1/query", {"query": "insurance", "categories": ["tasks"]}))[
        "results"
    ][0]["id"] == task["id"]
    # Writes stay inside the allowlist too: no widening through a write or an edit.
    await planner.call("POST", "/v1/memories", 403, json={"content": HOBBY, "category": "travel"})
    await planner.call("POST", "/v1/memories", 403, json={"content": "The user sails."})
    await planner.patch(f"/v1/memories/{task['id']}", {"category": "interests"}, 403)
    goal = await planner.post(
        "/v1/memories", {"content": "The user plans to run a marathon.", "category": "goals"}, 201
    )
    assert goal["category"] == "goals"
    # `agent` may narrow (loopback acting as the planner), never widen (planner as supervisor).
    narrowed = await app.local.post(
        "/v1/query", {"query": "insurance postcards boat", "agent": "planner", "top_k": 10}
    )
    assert {r["id"] for r in narrowed["results"]} <= {task["id"], goal["id"]}
    status, body, _ = await planner.call(
        "POST", "/v1/query", 403, json={"query": "postcards", "agent": "supervisor"}
    )
    assert "may not act as agent 'supervisor'" in body["error"]["message"]
    assert (await planner.get("/v1/stats"))["memories"]["total"] == 2
    # Entities are seen through memories one may see: Maria only through the hobby.
    maria = (await app.local.get("/v1/entities?q=maria"))["entities"]
    assert [e["canonical_name"] for e in maria] == ["Maria"]
    assert (await planner.get("/v1/entities?q=maria"))["entities"] == []
    await planner.get(f"/v1/entities/{maria[0]['id']}", 404)
    await planner.call("GET", "/v1/export", 403)
    await planner.call("POST", "/v1/gc", 403, json={})


async def test_delta_is_filtered_by_what_the_caller_may_see(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    await app.local.get("/v1/context?session_id=watcher")  # the session starts looking now
    await app.planner.get("/v1/context?session_id=planner-view")
    await app.remember(TASK, category="tasks")
    await app.remember(HOBBY, category="interests", store="social")
    full = await app.local.get("/v1/context?session_id=watcher")
    assert [d["category"] for d in full["delta"]] == ["tasks", "interests"]
    assert full["delta_header"].startswith("Memory updates since rev 0:")
    assert (await app.local.get("/v1/context?session_id=watcher"))["delta"] == []  # seen now
    planner = await app.planner.get("/v1/context?session_id=planner-view")
    assert [d["category"] for d in planner["delta"]] == ["tasks"]
    familiar = await app.as_["familiar"].post(
        "/v1/query", {"query": "postcards", "session_id": "familiar-view"}
    )
    assert familiar["delta"] == []  # a session first seen starts at the current revision


async def test_a_lower_trust_write_never_changes_an_invisible_memory(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    secret = await app.remember("The user lives in Portland.", category="personal")
    written = await app.as_["familiar"].post(
        "/v1/memories", {"content": "The user lives in Seattle.", "category": "personal"}, 201
    )
    assert written["supersedes"] is None
    assert app.value("SELECT status FROM memories WHERE id = ?", secret["id"]) == "active"


async def test_query_stores_narrow_within_the_trusts_stores(
    make_client: Callable[..., Any],
) -> None:
    """Seed 002: a query's `stores` are intersected with what the trust reads; naming a store it
    may not read is 403 with the contract's error body, as writing there is."""
    app = await make_app(make_client)
    made = {
        store: (await app.remember(IN_STORE[store], category="personal", store=store))["id"]
        for store in STORES
    }
    words = " ".join(IN_STORE.values())
    for trust in TRUSTS:
        caller, readable = app.as_[trust], STORES_BY_TRUST[trust]
        for store in STORES:
            body = {"query": words, "top_k": 100, "stores": [store]}
            if store not in readable:
                status, error, _ = await caller.call("POST", "/v1/query", 403, json=body)
                assert error == {
                    "error": {
                        "code": "forbidden",
                        "message": f"trust '{trust}' may not read the '{store}' store "
                        f"(readable: {', '.join(readable) or 'none'})",
                        "details": {"store": store, "trust": trust},
                    }
                }
                continue
            found = await caller.post("/v1/query", {**body, "return": "full"})
            assert [r["id"] for r in found["results"]] == [made[store]]
            assert {r["store"] for r in found["results"]} == {store}
    both = await app.as_["inner"].post(
        "/v1/query", {"query": words, "top_k": 100, "stores": ["social", "shared"]}
    )
    assert sorted(r["id"] for r in both["results"]) == sorted([made["shared"], made["social"]])
    # A store the owner names leaves the conversation turns (the private store) out too.
    await app.local.post(
        "/v1/turns", {"session_id": "s", "role": "user", "text": words, "auto_extract": False}, 201
    )
    episodes = await app.local.post(
        "/v1/query", {"query": words, "kinds": ["episode", "fact"], "stores": ["shared"]}
    )
    assert [r["id"] for r in episodes["results"]] == [made["shared"]]
    status, error, _ = await app.local.call(
        "POST", "/v1/query", 400, json={"query": words, "stores": ["attic"]}
    )
    assert error["error"]["details"]["field"] == "stores"
