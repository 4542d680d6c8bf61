"""/v1/devices (issue 40) through the test client, every answer checked against the OpenAPI
document, with devices calling the firmware routes from real addresses: pairing in the window,
a device at a new address (a stranger until confirmed, then its conversation goes on), forget,
a window that ran out, and who may do any of it (full trust with every category only)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from api_contract import V1
from api_kit import TOKEN_CONFIG, App, make_app
from lan_kit import NO_LOOPBACK, lan_client

pytestmark = pytest.mark.timeout(60)

DEVICE = "m5stack-kitchen"
# The owner's own app: full trust and no allowlist (every category), what managing devices needs.
OWNER_TOKEN = "owner-app-token-0123456789abcdef"
OWNER_APP = {"token": OWNER_TOKEN, "trust": "full", "agent": "owner-app", "name": "phone"}


@pytest.fixture
async def app(make_client: Callable[..., Any]) -> App:
    return await make_app(make_client, **NO_LOOPBACK, **{"api.tokens": [*TOKEN_CONFIG, OWNER_APP]})


def owner_of(app: App) -> V1:
    return V1(app.client).as_token(OWNER_TOKEN)


def last_prompt(ollama: Any) -> str:
    state, _ = ollama
    return json.dumps(state.chat_calls()[-1]["body"]["messages"])


def rows_by_address(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["address"]: d for d in listing["devices"]}


async def test_pair_a_device_move_it_and_forget_it(app: App, ollama: Any) -> None:
    owner, base = owner_of(app), str(app.client.make_url("/"))
    assert await owner.get("/v1/devices") == {"devices": [], "pairing_until": None}
    window = await owner.post("/v1/devices/pair", {"seconds": 60})
    assert window["seconds"] == 60
    assert (await owner.get("/v1/devices"))["pairing_until"] == window["pairing_until"]

    async with lan_client(base, "127.0.0.2") as m5stack, lan_client(base, "127.0.0.3") as moved:
        await m5stack.say("my PIN is 7311", device_id=DEVICE)  # paired: the window closes
        listing = await owner.get("/v1/devices")
        assert listing["pairing_until"] is None
        (paired,) = listing["devices"]
        assert (paired["address"], paired["trust"], paired["turns"]) == ("127.0.0.2", "full", 1)
        assert "token 'phone'" in paired["paired_by"]  # who opened the window
        await m5stack.say("what is my PIN?", device_id=DEVICE)
        assert "7311" in last_prompt(ollama)

        # The same id from another address: a stranger, listed as a new address.
        await moved.say("what is my PIN?", device_id=DEVICE)
        assert "7311" not in last_prompt(ollama)
        new = rows_by_address(await owner.get("/v1/devices"))["127.0.0.3"]
        assert (new["trust"], new["paired_elsewhere"]) == (None, "127.0.0.2")

        # The owner confirms it moved: the trust moves, and its conversation goes on.
        confirmed = await owner.post(f"/v1/devices/{new['id']}/trust", {})
        assert (confirmed["trust"], confirmed["paired_elsewhere"]) == ("full", None)
        await moved.say("what is my PIN?", device_id=DEVICE)
        assert "7311" in last_prompt(ollama)
        old = rows_by_address(await owner.get("/v1/devices"))["127.0.0.2"]
        assert (old["trust"], old["paired_elsewhere"]) == (None, "127.0.0.3")
        await m5stack.say("what is my PIN?", device_id=DEVICE)
        assert "7311" not in last_prompt(ollama)

        forgotten = await owner.delete(f"/v1/devices/{new['id']}")
        assert forgotten["id"] == new["id"]
        await moved.say("what is my PIN?", device_id=DEVICE)
        assert "7311" not in last_prompt(ollama)
        assert rows_by_address(await owner.get("/v1/devices"))["127.0.0.3"]["trust"] is None


async def test_a_device_after_the_window_closed_is_a_stranger(
    app: App, ollama: Any, clock: Any
) -> None:
    owner, base = owner_of(app), str(app.client.make_url("/"))
    await owner.post("/v1/devices/pair", {})  # the default window: 120 s
    clock.advance(121)
    async with lan_client(base, "127.0.0.2") as late:
        await late.say("hello", device_id=DEVICE)
    (device,) = (await owner.get("/v1/devices"))["devices"]
    assert device["trust"] is None
    assert (await owner.get("/v1/devices"))["pairing_until"] is None


async def test_only_the_owner_manages_devices(app: App) -> None:
    owner = owner_of(app)
    await owner.post("/v1/devices/pair", {"seconds": 30})
    callers = [app.as_[t] for t in ("full", "inner", "familiar", "public")] + [app.planner]
    for caller in callers:  # below full trust, or full with an allowlist (an agent's token)
        await caller.get("/v1/devices", 403)
        await caller.post("/v1/devices/pair", {}, 403)
        await caller.post("/v1/devices/1/trust", {}, 403)
        await caller.delete("/v1/devices/1", 403)
    await app.local.get("/v1/devices", 401)  # loopback is nobody with allow_loopback off


async def test_bad_requests_get_the_error_body(app: App) -> None:
    owner = owner_of(app)
    for body in ({"seconds": 0}, {"seconds": 86400}, {"seconds": "soon"}, {"minutes": 2}):
        got = await owner.post("/v1/devices/pair", body, 400)
        assert got["error"]["code"] == "invalid_request"
    assert (await owner.get("/v1/devices"))["pairing_until"] is None  # nothing opened
    await owner.post("/v1/devices/99/trust", {}, 404)
    await owner.delete("/v1/devices/99", 404)
    await owner.delete("/v1/devices/abc", 404)
    await owner.post("/v1/devices/pair", {"seconds": 30})
    async with lan_client(str(app.client.make_url("/")), "127.0.0.2") as m5stack:
        await m5stack.say("hello", device_id=DEVICE)
    got = await owner.post("/v1/devices/1/trust", {"trust": "root"}, 400)
    assert got["error"]["details"]["field"] == "trust"
