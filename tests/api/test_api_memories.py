"""/v1 memories through the real app: create, read, list, PATCH with If-Match, delete, purge,
restore, history, timeline, entities, stats, why, gc. Every response is checked against
lobug/api/openapi.json (api_contract.V1); the assertions are on rows in the database."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from api_contract import document
from api_kit import ids, make_app
from memory_kit import drain

from lobug.openai_api.errors import OPENAI_ROUTES

TEA = "The user prefers green tea over coffee in the morning."
JAZZ = "The user listens to jazz records while cooking dinner."
BIKE = "The user rides a red bicycle to the office on Fridays."


async def test_create_get_list_and_search(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    status, tea, headers = await app.local.call(
        "POST", "/v1/memories", 201,
        json={"content": f"  {TEA} ", "category": "Preference", "importance": 0.7,
              "tags": ["drink", "drink", "morning"], "pinned": True, "color": "ignored"},
    )  # fmt: skip
    assert headers["Location"] == f"/v1/memories/{tea['id']}"
    assert headers["ETag"] == f'"{tea["etag"]}"'
    assert (tea["content"], tea["category"], tea["store"], tea["action"]) == (
        TEA, "preference", "private", "added",
    )  # fmt: skip
    row = app.rows("SELECT * FROM memories WHERE id = ?", tea["id"])[0]
    assert (row["tags"], row["pinned"], row["importance"], row["store"]) == (
        '["drink", "morning"]', 1, 0.7, "private",
    )  # fmt: skip
    assert app.value("SELECT actor FROM history WHERE memory_id = ?", tea["id"]) == "loopback:local"
    jazz = await app.remember(JAZZ, category="preference")
    bike = await app.remember(BIKE, category="event", store="social", kind="fact")

    assert await app.local.get(f"/v1/memories/{tea['id']}") == {
        k: v for k, v in tea.items() if k != "action"
    }
    assert ids(await app.local.get("/v1/memories")) == [bike["id"], jazz["id"], tea["id"]]
    assert ids(await app.local.get("/v1/memories?q=jazz+cooking")) == [jazz["id"]]
    assert ids(await app.local.get("/v1/memories?q=the")) == []  # only stopwords: no search
    assert ids(await app.local.get("/v1/memories?category=preference&limit=1")) == [jazz["id"]]
    assert ids(await app.local.get("/v1/memories?category=preference&offset=1")) == [tea["id"]]
    assert ids(await app.local.get("/v1/memories?store=social")) == [bike["id"]]
    assert ids(await app.local.get("/v1/memories?status=archived")) == []
    listing = await app.local.get("/v1/memories?kind=fact&layer=mid&unknown=1")
    assert listing["count"] == 3


async def test_patch_with_if_match_and_conflicts(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    tea = await app.remember(TEA, category="preference")
    old_etag = tea["etag"]
    changed = await app.local.patch(
        f"/v1/memories/{tea['id']}",
        {"content": "The user prefers oolong tea over coffee in the morning.", "tags": ["t"],
         "importance": 0.9, "category": None},
        headers={"If-Match": f'W/"{old_etag}"'},
    )  # fmt: skip
    assert changed["etag"] != old_etag and changed["category"] is None
    row = app.rows("SELECT content, hash, tags, importance FROM memories WHERE id = ?", tea["id"])
    assert row[0]["content"].startswith("The user prefers oolong") and row[0]["importance"] == 0.9
    assert ids(await app.local.get("/v1/memories?q=oolong")) == [tea["id"]]
    assert ids(await app.local.get("/v1/memories?q=green")) == []  # FTS follows the edit
    event = app.rows(
        "SELECT event, old_value, new_value, meta FROM history WHERE memory_id = ?"
        " ORDER BY id DESC LIMIT 1",
        tea["id"],
    )[0]
    assert event["event"] == "UPDATE" and event["old_value"] == TEA
    assert '"importance": [0.5, 0.9]' in event["meta"]
    # The content changed, so the old vector went and a job makes the new one.
    jobs = app.rows("SELECT payload FROM jobs WHERE kind = 'embed_memory'")
    assert any(f'"memory_id": {tea["id"]}' in j[0] for j in jobs)

    # A stale If-Match is 409 and writes nothing.
    before = app.rows("SELECT * FROM memories WHERE id = ?", tea["id"])[0]
    status, body, _ = await app.local.call(
        "PATCH", f"/v1/memories/{tea['id']}", 409, json={"importance": 0.1},
        headers={"If-Match": f'"{old_etag}"'},
    )  # fmt: skip
    assert body["error"]["code"] == "conflict" and changed["etag"] in body["error"]["message"]
    assert dict(app.rows("SELECT * FROM memories WHERE id = ?", tea["id"])[0]) == dict(before)
    await app.local.patch(f"/v1/memories/{tea['id']}", {"pinned": True}, headers={"If-Match": "*"})

    archived = await app.local.patch(f"/v1/memories/{tea['id']}", {"status": "archived"})
    assert archived["status"] == "archived" and archived["valid_until"] is not None
    assert app.value("SELECT event FROM history ORDER BY id DESC LIMIT 1") == "ARCHIVE"
    await app.local.delete(f"/v1/memories/{tea['id']}")
    status, body, _ = await app.local.call(
        "PATCH", f"/v1/memories/{tea['id']}", 409, json={"importance": 0.2}
    )
    assert "restore it first" in body["error"]["message"]


async def test_soft_delete_restore_purge(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    tea = await app.remember(TEA, category="preference")
    path = f"/v1/memories/{tea['id']}"
    deleted = await app.local.delete(path)
    assert deleted["status"] == "soft_deleted" and deleted["purge_at"] > 0
    assert ids(await app.local.get("/v1/memories")) == []
    assert ids(await app.local.get("/v1/memories?status=soft_deleted")) == [tea["id"]]
    assert (await app.local.delete(path))["status"] == "soft_deleted"  # again: no change
    restored = await app.local.post(f"{path}/restore", {})
    assert restored["status"] == "active" and restored["purge_at"] is None
    status, body, _ = await app.local.call("POST", f"{path}/restore", 409, json={})
    assert body["error"]["code"] == "conflict"

    purged = await app.local.delete(f"{path}?purge=true")
    assert purged == {"id": tea["id"], "status": "purged", "purge_at": None}
    assert app.rows("SELECT id FROM memories") == []
    assert app.rows("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'green'") == []
    assert [r[0] for r in app.rows("SELECT event FROM history")] == ["PURGE"]
    assert app.value("SELECT COUNT(*) FROM change_log WHERE memory_id = ?", tea["id"]) == 0
    await app.local.get(path, 404)
    # The owner can still see that it was purged, and when; nobody sees what it said.
    history = await app.local.get(f"{path}/history")
    assert [e["event"] for e in history["events"]] == ["PURGE"]
    assert history["events"][0]["old_value"] is None and history["events"][0]["new_value"] is None
    await app.as_["familiar"].get(f"{path}/history", 404)
    await app.local.delete(path, 404)


async def test_history_timeline_entities_stats(make_client: Callable[..., Any], clock: Any) -> None:
    app = await make_app(make_client)
    made = []
    for content in ("The user's sister Maria lives in Lisbon.", TEA, JAZZ, BIKE):
        made.append(await app.remember(content, category="personal"))
        clock.advance(-60)  # each older than the one before: the timeline orders by time
    made.reverse()
    await app.local.patch(f"/v1/memories/{made[0]['id']}", {"importance": 0.8})
    history = await app.local.get(f"/v1/memories/{made[0]['id']}/history?limit=1")
    assert [e["event"] for e in history["events"]] == ["UPDATE"]  # newest first
    window = await app.local.get(f"/v1/timeline?anchor={made[1]['id']}&before=1&after=1")
    assert [m["id"] for m in window["items"]] == [m["id"] for m in made[0:3]]
    window = await app.local.get(f"/v1/timeline?anchor={made[0]['id']}&before=5&after=0")
    assert [m["id"] for m in window["items"]] == [made[0]["id"]]

    people = await app.local.get("/v1/entities?q=mar")
    assert [e["canonical_name"] for e in people["entities"]] == ["Maria"]
    maria = await app.local.get(f"/v1/entities/{people['entities'][0]['id']}")
    assert [m["id"] for m in maria["memories"]] == [made[3]["id"]]
    assert made[3]["content"].startswith("The user's sister Maria")
    assert (await app.local.get("/v1/entities?q=nobody"))["entities"] == []
    # The people index (seed 002) is the person entities; a place is another type.
    people = await app.local.get("/v1/entities?type=person")
    assert [e["canonical_name"] for e in people["entities"]] == ["Maria"]
    places = await app.local.get("/v1/entities?type=location")
    assert [e["canonical_name"] for e in places["entities"]] == ["Lisbon"]
    assert (await app.local.get("/v1/entities?q=%25"))["entities"] == []  # LIKE's % is literal
    error = await app.local.get("/v1/entities?type=planet", 400)
    assert error["error"]["details"]["field"] == "type"

    stats = await app.local.get("/v1/stats")
    assert stats["memories"]["total"] == 4 and stats["memories"]["by_store"] == {"private": 4}
    assert stats["memories"]["created_last_day"] == 4 and stats["memories"]["mean_score"] is None
    ages = [(clock() - r[0]) / 86400 for r in app.rows("SELECT created_at FROM memories")]
    assert stats["memories"]["mean_age_days"] == pytest.approx(sum(ages) / 4, abs=1e-4)
    await app.local.post("/v1/gc", {})
    assert (await app.local.get("/v1/stats"))["memories"]["mean_score"] > 0
    assert stats["entities"] >= 2 and stats["jobs"]["failed"] == 0
    assert stats["delta_rev"] == 5  # four memories created, one updated


async def test_why_and_gc(make_client: Callable[..., Any], clock: Any) -> None:
    app = await make_app(make_client)
    tea = await app.remember(TEA, category="preference")
    await app.remember(JAZZ, category="preference")
    # Both facts' vectors (their embed jobs): with only the jazz one written, the vector list
    # holds jazz alone and ranks it above tea, which only its words find.
    await drain(app.db_path, clock)
    why = await app.local.get(f"/v1/memories/{tea['id']}/why")
    assert why["id"] == tea["id"] and why["decisions"][0]["event"] == "ADD"
    assert {"memory.importance", "memory.recency"} <= set(why["terms"])
    ranked = await app.local.get(f"/v1/memories/{tea['id']}/why?q=green+tea")
    assert ranked["rank"] == 1 and ranked["score"] > why["score"]
    assert ranked["terms"]["rrf_norm"] > 0
    result = await app.local.post("/v1/gc", {})
    assert result["rescored"] == 2 and result["purged"] == 0
    await app.local.get("/v1/memories/999/why", 404)


async def test_every_memory_route_404s_on_unknown_and_malformed_ids(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    for raw in ("999", "0", "-1", "abc", "1.5", "99999999999999999999", "%C3%A9"):
        for method, suffix in (("GET", ""), ("DELETE", ""), ("POST", "/restore"),
                               ("GET", "/why"), ("GET", "/history")):  # fmt: skip
            body_ = {} if method == "POST" else None
            status, body, _ = await app.local.call(
                method, f"/v1/memories/{raw}{suffix}", 404, json=body_
            )
            assert body["error"]["code"] == "not_found"
        await app.local.call("PATCH", f"/v1/memories/{raw}", 404, json={"importance": 0.5})
        await app.local.call("GET", f"/v1/entities/{raw}", 404)
    await app.local.call("GET", "/v1/timeline?anchor=999", 404)


def bad(field: str | None, code: str = "invalid_request") -> tuple[str, str | None]:
    return code, field


BAD_REQUESTS: list[tuple[str, str, Any, tuple[str, str | None]]] = [
    ("POST", "/v1/memories", {}, bad("content")),
    ("POST", "/v1/memories", {"content": "   "}, bad("content")),
    ("POST", "/v1/memories", {"content": "x" * 2001}, bad("content")),
    ("POST", "/v1/memories", {"content": 5}, bad("content")),
    ("POST", "/v1/memories", {"content": TEA, "importance": 2}, bad("importance")),
    ("POST", "/v1/memories", {"content": TEA, "importance": "0.5"}, bad("importance")),
    ("POST", "/v1/memories", {"content": TEA, "tags": ["t"] * 33}, bad("tags")),
    ("POST", "/v1/memories", {"content": TEA, "tags": ["x" * 65]}, bad("tags")),
    ("POST", "/v1/memories", {"content": TEA, "tags": "drink"}, bad("tags")),
    ("POST", "/v1/memories", {"content": TEA, "kind": "thought"}, bad("kind")),
    ("POST", "/v1/memories", {"content": TEA, "store": "vault"}, bad("store")),
    ("POST", "/v1/memories", {"content": TEA, "category": "c" * 65}, bad("category")),
    ("POST", "/v1/memories", {"content": TEA, "pinned": "yes"}, bad("pinned")),
    ("POST", "/v1/memories", {"content": "I like tea"}, bad("content")),  # writing rules
    ("POST", "/v1/memories", [TEA], bad(None)),
    ("POST", "/v1/query", {}, bad("query")),
    ("POST", "/v1/query", {"query": "x" * 2001}, bad("query")),
    ("POST", "/v1/query", {"query": "tea", "top_k": 101}, bad("top_k")),
    ("POST", "/v1/query", {"query": "tea", "top_k": 0}, bad("top_k")),
    ("POST", "/v1/query", {"query": "tea", "top_k": True}, bad("top_k")),
    ("POST", "/v1/query", {"query": "tea", "budget_tokens": 0}, bad("budget_tokens")),
    ("POST", "/v1/query", {"query": "tea", "budget_tokens": 40000}, bad("budget_tokens")),
    ("POST", "/v1/query", {"query": "tea", "threshold": 1.5}, bad("threshold")),
    ("POST", "/v1/query", {"query": "tea", "return": "xml"}, bad("return")),
    ("POST", "/v1/query", {"query": "tea", "kinds": ["thought"]}, bad("kinds")),
    ("POST", "/v1/query", {"query": "tea", "kinds": []}, bad("kinds")),
    ("POST", "/v1/query", {"query": "tea", "categories": ["x"] * 65}, bad("categories")),
    ("POST", "/v1/query", {"query": "tea", "filters": {"colour": "a"}}, bad("filters.colour")),
    (
        "POST",
        "/v1/query",
        {"query": "tea", "filters": {"agent_id": "a" * 129}},
        bad("filters.agent_id"),
    ),  # fmt: skip
    ("POST", "/v1/query", {"query": "tea", "filters": {"run_id": 7}}, bad("filters.run_id")),
    ("POST", "/v1/query", {"query": "tea", "min_score": -1}, bad("min_score")),
    ("POST", "/v1/memories", {"content": TEA, "agent_id": "a\x07b"}, bad("agent_id")),
    ("POST", "/v1/memories", {"content": TEA, "run_id": "r\u200bx"}, bad("run_id")),
    ("POST", "/v1/memories", {"content": TEA, "actor_id": "x" * 129}, bad("actor_id")),
    (
        "POST",
        "/v1/turns",
        {"session_id": "s", "role": "user", "text": "hi", "agent_id": ""},
        bad("agent_id"),
    ),  # fmt: skip
    ("GET", "/v1/memories?actor_id=" + "x" * 129, None, bad("actor_id")),
    ("POST", "/v1/query", {"query": "tea", "filters": []}, bad("filters")),
    (
        "POST",
        "/v1/query",
        {"query": "tea", "filters": {"updated_after": "soon"}},
        bad("filters.updated_after"),
    ),  # fmt: skip
    (
        "POST",
        "/v1/query",
        {"query": "tea", "filters": {"importance_min": 0.9, "importance_max": 0.1}},
        bad("filters.importance_min"),
    ),  # fmt: skip
    ("POST", "/v1/query", {"query": "tea", "filters": {"role": "bot"}}, bad("filters.role")),
    ("POST", "/v1/query", {"query": "tea", "agent": "x" * 65}, bad("agent")),
    ("POST", "/v1/turns", {"session_id": "s", "role": "user"}, bad("text")),
    ("POST", "/v1/turns", {"session_id": "s", "role": "bot", "text": "hi"}, bad("role")),
    ("POST", "/v1/turns", {"session_id": "s\n1", "role": "user", "text": "hi"}, bad("session_id")),
    (
        "POST",
        "/v1/turns",
        {"session_id": "s" * 129, "role": "user", "text": "hi"},
        bad("session_id"),
    ),  # fmt: skip
    ("POST", "/v1/turns", {"session_id": "s", "role": "user", "text": "x" * 4001}, bad("text")),
    ("POST", "/v1/turns", {"session_id": "s", "role": "user", "text": "hi", "ts": -1}, bad("ts")),
    ("POST", "/v1/turns", {"session_id": "s", "role": "user", "text": "hi", "ts": 1e13}, bad("ts")),
    (
        "POST",
        "/v1/turns",
        {"session_id": "s", "role": "user", "text": "hi", "ref": "r" * 257},
        bad("ref"),
    ),  # fmt: skip
    ("PATCH", "/v1/memories/1", {}, bad(None)),
    ("PATCH", "/v1/memories/1", {"colour": "red"}, bad(None)),
    ("PATCH", "/v1/memories/1", {"status": "soft_deleted"}, bad("status")),
    ("PATCH", "/v1/memories/1", {"content": ""}, bad("content")),
    ("PATCH", "/v1/memories/1", {"content": "I like tea"}, bad("content")),  # writing rules
    ("GET", "/v1/memories?limit=0", None, bad("limit")),
    ("GET", "/v1/memories?limit=501", None, bad("limit")),
    ("GET", "/v1/memories?limit=ten", None, bad("limit")),
    ("GET", "/v1/memories?offset=-1", None, bad("offset")),
    ("GET", "/v1/memories?status=gone", None, bad("status")),
    ("GET", "/v1/memories?kind=thought", None, bad("kind")),
    ("GET", "/v1/memories?q=" + "x" * 501, None, bad("q")),
    ("GET", "/v1/timeline", None, bad("anchor")),
    ("GET", "/v1/timeline?anchor=abc", None, bad("anchor")),
    ("GET", "/v1/timeline?anchor=1&before=101", None, bad("before")),
    ("GET", "/v1/context", None, bad("session_id")),
    ("GET", "/v1/context?session_id=s&k=0", None, bad("k")),
    ("GET", "/v1/entities?limit=0", None, bad("limit")),
    ("GET", "/v1/memories/1/history?limit=0", None, bad("limit")),
    ("DELETE", "/v1/memories/1?purge=maybe", None, bad("purge")),
]


async def test_bad_input_is_400_naming_the_field(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    await app.remember(TEA, category="preference")
    for method, path, body, (code, field) in BAD_REQUESTS:
        kwargs = {"json": body} if body is not None else {}
        status, answer, _ = await app.local.call(method, path, **kwargs)
        assert status == 400, (method, path, body, answer)
        assert answer["error"]["code"] == code, (method, path, answer)
        if field is not None:
            assert answer["error"]["details"]["field"] == field, (method, path, answer)
    assert app.value("SELECT COUNT(*) FROM memories") == 1
    assert app.value("SELECT COUNT(*) FROM turns") == 0


async def test_body_errors(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client, **{"server.max_json_bytes": 4096})
    cases = [
        ({"data": b"{not json", "headers": {"Content-Type": "application/json"}}, 400,
         "invalid_json"),
        ({"data": b"", "headers": {"Content-Type": "application/json"}}, 400, "invalid_json"),
        ({"data": b"content=x", "headers": {"Content-Type": "text/plain"}}, 415,
         "unsupported_media_type"),
        ({"json": {"content": "x" * 5000}}, 413, "payload_too_large"),
    ]  # fmt: skip
    for kwargs, status, code in cases:
        for path in ("/v1/memories", "/v1/query", "/v1/turns"):
            got, body, _ = await app.local.call("POST", path, **kwargs)
            assert (got, body["error"]["code"]) == (status, code), (path, body)
    tea = await app.remember(TEA, category="preference")
    status, body, _ = await app.local.call(
        "PATCH", f"/v1/memories/{tea['id']}", 400, json={"importance": 0.5},
        headers={"If-Match": "x" * 300},
    )  # fmt: skip
    assert body["error"]["details"]["field"] == "If-Match"


async def test_the_app_serves_exactly_the_documented_routes(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    served = {
        (route.method.lower(), route.resource.canonical)
        for route in app.client.app.router.routes()
        if route.resource is not None
        and route.resource.canonical.startswith("/v1/")
        and route.resource.canonical not in OPENAI_ROUTES  # OpenAI's API, documented by OpenAI
        and route.method != "HEAD"
    }
    documented = {
        (method, path)
        for path, item in document()["paths"].items()
        for method in item
        if method != "parameters"
    }
    assert served == documented


async def test_list_by_the_score_the_upkeep_keeps(make_client: Callable[..., Any]) -> None:
    """Seed 000's `GET /memories` ordered by score: the daily upkeep's stored score, highest
    first; what was made since the last upkeep comes after, newest first."""
    app = await make_app(make_client)
    low = await app.remember(TEA, importance=0.1)
    high = await app.remember(JAZZ, importance=0.9)
    mid = await app.remember(BIKE, importance=0.5)
    await app.local.post("/v1/gc", {})  # scores every live memory
    later = await app.remember("The user's sister Maria lives in Lisbon.", importance=1.0)
    assert ids(await app.local.get("/v1/memories?sort=score")) == [
        high["id"], mid["id"], low["id"], later["id"],
    ]  # fmt: skip
    score = "SELECT json_extract(attributes, '$.score') FROM memories WHERE id = ?"
    assert app.value(score, high["id"]) > app.value(score, mid["id"]) > app.value(score, low["id"])
    assert app.value(score, later["id"]) is None
    newest = [later["id"], mid["id"], high["id"], low["id"]]
    assert ids(await app.local.get("/v1/memories")) == newest
    found = ids(await app.local.get("/v1/memories?sort=score&q=tea+lisbon+jazz"))
    assert found == [high["id"], low["id"], later["id"]]
    error = await app.local.get("/v1/memories?sort=random", 400)
    assert error["error"]["details"]["field"] == "sort"


async def test_list_by_personal_data(make_client: Callable[..., Any]) -> None:
    """Seed 000: PII tags usable as a filter (what to review before sharing an export)."""
    app = await make_app(make_client)
    mail = await app.remember("The user's work email is sam.jones@example.com.")
    phone = await app.remember("The user's dentist can be reached on 020 7946 0321.")
    plain = await app.remember(TEA)
    assert set(ids(await app.local.get("/v1/memories?pii=any"))) == {mail["id"], phone["id"]}
    assert ids(await app.local.get("/v1/memories?pii=email")) == [mail["id"]]
    assert ids(await app.local.get("/v1/memories?pii=phone")) == [phone["id"]]
    assert ids(await app.local.get("/v1/memories?pii=none")) == [plain["id"]]
    assert ids(await app.local.get("/v1/memories?pii=address")) == []
    error = await app.local.get("/v1/memories?pii=passport", 400)
    assert error["error"]["details"]["field"] == "pii"
