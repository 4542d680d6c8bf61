"""Issue 16: what a hostile, lower-trust client must not learn or break through /v1.

- `why` ranks a memory only among what the caller may see (no oracle for private memories);
- reading a session's delta marks it seen for the reader only (no wiping the owner's feed);
- `filters.user_id` in /v1/query cannot name another user (as every other route).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_kit import make_app

from lobug import keys
from lobug.access import cli_principal
from lobug.memory.shapes import MemoryCreate

CHESS = "The user enjoys playing chess with neighbours in the park."
SECRET_CHESS = "The user secretly plays chess online every night until three."
QUERY = "chess"


async def why(caller: Any, memory_id: int, q: str = QUERY) -> tuple[Any, int]:
    found = await caller.get(f"/v1/memories/{memory_id}/why?q={q}")
    return found["rank"], found["candidates"]


async def test_why_ranks_only_among_what_the_caller_may_see(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    visible = await app.remember(CHESS, category="personal", store="social")
    familiar = app.as_["familiar"]
    before = await why(familiar, visible["id"])
    assert before == (1, 1)

    secret = await app.remember(SECRET_CHESS, category="personal", store="private")
    assert (await why(app.local, visible["id"]))[1] == 2  # the owner ranks among both
    assert await why(familiar, visible["id"]) == before  # the familiar token learns nothing
    await app.local.delete(f"/v1/memories/{secret['id']}?purge=true")
    assert await why(familiar, visible["id"]) == before
    # The hidden memory itself stays missing, query or not.
    await familiar.get(f"/v1/memories/{secret['id']}/why?q={QUERY}", 404)


async def test_why_names_no_related_memory_the_caller_may_not_see(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    visible = await app.remember(CHESS, category="personal", store="social")
    secret = await app.remember(SECRET_CHESS, category="personal", store="private")
    mate = await app.remember(
        "The user plays chess in the park on Saturdays with an old friend.",
        category="personal",
        store="social",
    )

    def link(conn: Any) -> None:
        for other in (secret["id"], mate["id"]):
            conn.execute(
                "INSERT INTO relations (user_id, from_id, to_id, relation_type, strength,"
                " created_at) VALUES ('default', ?, ?, 'related_to', 0.9, 0)",
                (visible["id"], other),
            )
        conn.execute(
            "UPDATE memories SET supersedes = ? WHERE id = ?", (visible["id"], secret["id"])
        )

    await app.client.app[keys.RECORDS].db.write(link)
    owner = await app.local.get(f"/v1/memories/{visible['id']}/why")
    assert {r["id"] for r in owner["relations"]} == {secret["id"], mate["id"]}
    assert owner["superseded_by"] == secret["id"]
    found = await app.as_["familiar"].get(f"/v1/memories/{visible['id']}/why")
    # (The embed jobs may add their own edge to the same neighbour: compare the set.)
    assert {r["id"] for r in found["relations"]} == {mate["id"]}
    assert found["superseded_by"] is None


async def test_a_lower_trust_reader_cannot_consume_the_owners_delta(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    owner, familiar = app.as_["full"], app.as_["familiar"]
    await owner.get("/v1/context?session_id=owner-chat")  # the owner starts looking
    await familiar.get("/v1/context?session_id=owner-chat")  # so does the hostile reader
    private = await app.remember(
        "The user's passport number is kept in the blue drawer.", category="personal"
    )
    social = await app.remember(CHESS, category="personal", store="social")

    seen = await familiar.get("/v1/context?session_id=owner-chat")
    assert [d["memory_id"] for d in seen["delta"]] == [social["id"]]  # never the private one
    assert (await familiar.get("/v1/context?session_id=owner-chat"))["delta"] == []
    queried = await familiar.post("/v1/query", {"query": QUERY, "session_id": "owner-chat"})
    assert queried["delta"] == []

    mine = await owner.get("/v1/context?session_id=owner-chat")
    assert [d["memory_id"] for d in mine["delta"]] == [private["id"], social["id"]]
    assert (await owner.get("/v1/context?session_id=owner-chat"))["delta"] == []
    # Nothing the familiar token reads reaches the plain session key the chat path uses.
    keys_ = [r[0] for r in app.rows("SELECT session_id FROM revisions ORDER BY session_id")]
    assert "owner-chat" not in keys_ and all(k.startswith("owner-chat\x1f") for k in keys_)


async def test_a_new_reader_of_a_session_sees_the_sessions_own_writes(
    make_client: Callable[..., Any],
) -> None:
    """A session that caused a change sees it, whoever reads the session's delta first."""
    app = await make_app(make_client)
    made = await app.local.post(
        "/v1/memories", {"content": CHESS, "category": "personal", "session_id": "s-own"}, 201
    )
    familiar = await app.as_["familiar"].get("/v1/context?session_id=s-own")
    assert [d["memory_id"] for d in familiar["delta"]] == []  # private store: not its business
    owner = await app.local.get("/v1/context?session_id=s-own")
    assert [d["memory_id"] for d in owner["delta"]] == [made["id"]]


async def test_query_cannot_name_another_user(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    records = app.client.app[keys.RECORDS]
    bobs = await records.create(
        cli_principal(),
        MemoryCreate.model_validate(
            {"content": CHESS, "category": "personal", "store": "social"}
        ).fields(),
        user_id="bob",
    )
    familiar = app.as_["familiar"]
    await familiar.get(f"/v1/memories/{bobs['id']}", 404)  # every other route: missing
    status, body, _ = await familiar.call(
        "POST", "/v1/query", 403, json={"query": QUERY, "filters": {"user_id": "bob"}}
    )
    assert body["error"]["details"] == {"field": "filters.user_id"}
    assert "bob" not in str(
        await familiar.post("/v1/query", {"query": QUERY, "filters": {"user_id": "default"}})
    )
    await app.local.call(
        "POST", "/v1/query", 403, json={"query": QUERY, "filters": {"user_id": "bob"}}
    )
