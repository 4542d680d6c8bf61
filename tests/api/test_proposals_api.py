"""/v1/proposals through the real app (seed 001 §10): list, accept, reject, with the /v1 access
rules (private store and category allowlist, else 404) and CONTRACT.md errors (404 unknown,
409 decided or expired); every response checked against lobug/api/openapi.json."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_kit import App, make_app

from lobug import conversation as turns
from lobug import keys
from lobug.memory.write import consent
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.reconcile import Origin

SAM = "The user's name is Sam."
LISBON = "The user lives in Lisbon."
DAY = 86400.0


async def spoken(app: App, *facts: str) -> list[int]:
    """A voice turn whose extracted `facts` went through consent: the proposal ids."""
    client = app.client
    memory = client.app[keys.MEMORY]

    def write(conn: Any) -> list[int]:
        now = memory.clock()
        turns.resolve_session(conn, device_id="desk", session_id="s-1", now=now, idle_s=0)
        user = turns.insert_turn(conn, session_id="s-1", role="user", text="(spoken)", ts=now,
                                 device_id="desk", ref=turns.VOICE_REF)  # fmt: skip
        origin = Origin(session_id="s-1", turn_ids=[user.id])
        for fact in facts:
            held = consent.intercept(conn, Candidate(fact, "profile", 0.9, ()), origin=origin,
                                     voice=user.voice, cfg=memory.memory, policy=memory.policy,
                                     now=now)  # fmt: skip
            assert held
        return [r[0] for r in conn.execute("SELECT id FROM proposals ORDER BY id")]

    return await client.app[keys.DB].write(write)


async def test_list_accept_and_reject(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    sam, lisbon = await spoken(app, SAM, LISBON)
    listing = await app.local.get("/v1/proposals")
    assert [(p["id"], p["field"], p["status"]) for p in listing["proposals"]] == [
        (lisbon, "city", "pending"), (sam, "preferred_name", "pending"),
    ]  # fmt: skip
    assert listing["count"] == 2 and listing["proposals"][0]["sensitive"] is True

    accepted = await app.local.post(f"/v1/proposals/{sam}/accept", {})
    assert (accepted["status"], accepted["action"], accepted["decided_by"]) == (
        "accepted", "added", "loopback:local",
    )  # fmt: skip
    memory = await app.local.get(f"/v1/memories/{accepted['memory_id']}")
    assert (memory["content"], memory["category"], memory["status"]) == (SAM, "profile", "active")
    events = await app.local.get(f"/v1/memories/{accepted['memory_id']}/history")
    assert "ACCEPT" in [e["event"] for e in events["events"]]

    rejected = await app.local.post(f"/v1/proposals/{lisbon}/reject", {})
    assert (rejected["status"], rejected["memory_id"]) == ("rejected", None)
    assert app.value("SELECT COUNT(*) FROM memories WHERE content = ?", LISBON) == 0
    assert (await app.local.get("/v1/proposals"))["proposals"] == []
    every = await app.local.get("/v1/proposals?status=all")
    assert [p["status"] for p in every["proposals"]] == ["rejected", "accepted"]
    only = await app.local.get("/v1/proposals?status=accepted&limit=1")
    assert [p["id"] for p in only["proposals"]] == [sam]
    events = app.rows(
        "SELECT event FROM history WHERE event IN ('PROPOSE', 'ACCEPT', 'REJECT') ORDER BY id"
    )
    assert [e[0] for e in events] == ["PROPOSE", "PROPOSE", "ACCEPT", "REJECT"]


async def test_errors_follow_the_contract(make_client: Callable[..., Any], clock: Any) -> None:
    app = await make_app(make_client)
    sam, lisbon = await spoken(app, SAM, LISBON)
    await app.local.post(f"/v1/proposals/{sam}/accept", {})
    for verb in ("accept", "reject"):
        body = await app.local.post(f"/v1/proposals/{sam}/{verb}", {}, expect=409)
        assert (
            body["error"]["code"] == "conflict" and "already accepted" in body["error"]["message"]
        )
        body = await app.local.post(f"/v1/proposals/999/{verb}", {}, expect=404)
        assert body["error"] == {"code": "not_found", "message": "no proposal 999"}
        await app.local.post(f"/v1/proposals/abc/{verb}", {}, expect=404)
    body = await app.local.get("/v1/proposals?status=maybe", expect=400)
    assert body["error"]["code"] == "invalid_request"
    clock.advance(7 * DAY + 1)  # memory.consent_days
    assert (await app.local.get("/v1/proposals"))["proposals"] == []
    body = await app.local.post(f"/v1/proposals/{lisbon}/accept", {}, expect=409)
    assert "expired" in body["error"]["message"]


async def test_who_may_see_and_decide(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    (sam,) = await spoken(app, SAM)
    # `inner` trust cannot read the private store; the planner's allowlist has no `profile`.
    for caller in (app.as_["inner"], app.as_["public"], app.planner):
        assert (await caller.get("/v1/proposals"))["proposals"] == []
        await caller.post(f"/v1/proposals/{sam}/accept", {}, expect=404)
        await caller.post(f"/v1/proposals/{sam}/reject", {}, expect=404)
    body = await app.as_["full"].get("/v1/proposals")
    assert [p["id"] for p in body["proposals"]] == [sam]
    assert (await app.as_["full"].post(f"/v1/proposals/{sam}/reject", {}))["status"] == "rejected"
    resp = await app.client.get("/v1/proposals", headers={"Authorization": "Bearer wrong"})
    assert resp.status == 401


async def test_memory_off_is_unavailable(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client, **{"memory.enabled": False})
    body = await app.local.get("/v1/proposals", expect=503)
    assert body["error"]["code"] == "unavailable"
