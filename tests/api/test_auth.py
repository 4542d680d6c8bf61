"""Auth through the real app: /v1 bearer tokens and loopback, the firmware device guard."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from audio_fixtures import raw_pcm
from contract import assert_error, assert_valid
from dbutil import scalar
from memory_kit import drain

from lobug import keys
from lobug.api.auth import principal_of
from lobug.app import Overrides, create_app

TOKEN_FULL = "full-token-0123456789"
TOKEN_INNER = "inner-token-0123456789"
TOKEN_PLANNER = "planner-token-0123456789"
DEVICE_TOKEN = "device-token-0123456789"
AUDIO = "application/octet-stream"
TOKENS = [
    {"token": TOKEN_FULL, "name": "main"},
    {"token": TOKEN_INNER, "trust": "inner"},
    {"token": TOKEN_PLANNER, "trust": "familiar", "agent": "planner", "name": "planner-app"},
]


async def whoami(request: web.Request) -> web.Response:
    p = principal_of(request)
    return web.json_response(
        {"agent": p.agent, "trust": p.trust, "token_name": p.token_name, "via": p.via}
    )


def remote_as(address: str) -> Any:
    """A middleware that makes the request look like it came from `address`."""

    @web.middleware
    async def fake_remote(request: web.Request, handler: Any) -> web.StreamResponse:
        return await handler(request.clone(remote=address))

    return fake_remote


@pytest.fixture
def v1_client(
    aiohttp_client: Any, make_config: Callable[..., Any], transcriber: Any, clock: Any
) -> Callable[..., Any]:
    """The real app plus a test-only /v1/whoami route; `remote` fakes the peer address."""

    async def factory(remote: str | None = None, **overrides: Any) -> TestClient:
        overrides.setdefault("api.tokens", TOKENS)
        app = create_app(make_config(**overrides), Overrides(transcriber=transcriber, clock=clock))
        app.router.add_get("/v1/whoami", whoami)
        if remote is not None:
            app.middlewares.insert(0, remote_as(remote))
        client: TestClient = await aiohttp_client(TestServer(app))
        return client

    return factory


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def assert_unauthorized(resp: Any, challenge: str) -> None:
    assert resp.status == 401
    assert_error(await resp.json(), "unauthorized")
    assert resp.headers["WWW-Authenticate"] == challenge


async def test_bearer_tokens_name_the_principal(v1_client: Callable[..., Any]) -> None:
    client = await v1_client(remote="192.168.1.20")
    cases = [
        (TOKEN_FULL, {"agent": "supervisor", "trust": "full", "token_name": "main"}),
        (TOKEN_INNER, {"agent": "supervisor", "trust": "inner", "token_name": None}),
        (TOKEN_PLANNER, {"agent": "planner", "trust": "familiar", "token_name": "planner-app"}),
    ]
    for token, expected in cases:
        resp = await client.get("/v1/whoami", headers=bearer(token))
        assert resp.status == 200
        assert await resp.json() == {**expected, "via": "token"}
    resp = await client.get("/v1/whoami", headers={"Authorization": f"bearer  {TOKEN_INNER} "})
    assert (await resp.json())["trust"] == "inner"


async def test_loopback_is_full_local_agent_only_without_a_header(
    v1_client: Callable[..., Any],
) -> None:
    client = await v1_client()  # the test client connects from 127.0.0.1
    resp = await client.get("/v1/whoami")
    assert await resp.json() == {
        "agent": "local",
        "trust": "full",
        "token_name": None,
        "via": "loopback",
    }
    # A presented but wrong token is refused even from loopback: no silent upgrade to full.
    resp = await client.get("/v1/whoami", headers=bearer("wrong-token-0123456789"))
    await assert_unauthorized(resp, 'Bearer realm="lobug", error="invalid_token"')
    resp = await client.get("/v1/whoami", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    await assert_unauthorized(resp, 'Bearer realm="lobug", error="invalid_request"')
    resp = await client.get("/v1/whoami", headers={"Authorization": "Bearer "})
    await assert_unauthorized(resp, 'Bearer realm="lobug", error="invalid_request"')


async def test_no_token_is_401_off_loopback_or_with_loopback_disabled(
    v1_client: Callable[..., Any],
) -> None:
    for client in (
        await v1_client(remote="192.168.1.20"),
        await v1_client(remote="::ffff:10.0.0.7"),
        await v1_client(**{"api.allow_loopback": False}),
    ):
        resp = await client.get("/v1/whoami")
        await assert_unauthorized(resp, 'Bearer realm="lobug"')
        # Unknown /v1 routes do not reveal themselves before authentication either.
        resp = await client.get("/v1/no-such-route")
        assert resp.status == 401
        resp = await client.get("/v1/no-such-route", headers=bearer(TOKEN_FULL))
        assert resp.status == 404
        resp = await client.get("/v1/whoami", headers=bearer(TOKEN_FULL))
        assert resp.status == 200


async def test_openapi_document_is_public(v1_client: Callable[..., Any]) -> None:
    client = await v1_client(remote="192.168.1.20", **{"api.allow_loopback": False})
    resp = await client.get("/v1/openapi.json")
    assert resp.status == 200 and resp.content_type == "application/json"
    assert (await resp.json())["openapi"].startswith("3.1")


async def test_tokens_never_reach_the_log(
    v1_client: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    client = await v1_client(remote="192.168.1.20", **{"api.device_token": DEVICE_TOKEN})
    wrong = "a-wrong-token-that-is-long"
    with caplog.at_level(logging.DEBUG):
        await client.get("/v1/whoami", headers=bearer(TOKEN_FULL))
        await client.get("/v1/whoami", headers=bearer(wrong))
        await client.post("/context/sensors", json={}, headers={"X-Device-Token": wrong})
        await client.post("/context/sensors", json={}, headers={"X-Device-Token": DEVICE_TOKEN})
    for secret in (TOKEN_FULL, wrong, DEVICE_TOKEN):
        assert secret not in caplog.text
    assert "unknown bearer token" in caplog.text and "bad device token" in caplog.text


# -- firmware routes ---------------------------------------------------------------------------
def count(client: Any, sql: str) -> int:
    return int(scalar(client.app[keys.CONFIG].storage.db_path, sql))


async def test_device_routes_open_by_default(make_client: Callable[..., Any]) -> None:
    client = await make_client()
    resp = await client.post("/chat/text", json={"text": "hello there"})
    assert resp.status == 200
    assert (await client.post("/context/sensors", json={"battery": 50})).status == 200


async def test_device_token_guards_firmware_routes_and_refusals_store_nothing(
    make_client: Callable[..., Any], ollama: Any
) -> None:
    state, _ = ollama
    client = await make_client(**{"api.device_token": DEVICE_TOKEN})
    challenge = 'DeviceToken realm="lobug"'
    # A token presented but wrong is refused; none at all is a stranger (see the next test).
    for headers in ({"X-Device-Token": "wrong-device-token-0000"}, {"X-Device-Token": ""}):
        resp = await client.post("/chat/text", json={"text": "my name is Alex"}, headers=headers)
        await assert_unauthorized(resp, challenge)
        resp = await client.post(
            "/chat/audio", data=raw_pcm(1.0), headers={**headers, "Content-Type": AUDIO}
        )
        await assert_unauthorized(resp, challenge)
        resp = await client.post("/context/sensors", json={"battery": 50}, headers=headers)
        await assert_unauthorized(resp, challenge)
    assert count(client, "SELECT COUNT(*) FROM turns") == 0
    assert count(client, "SELECT COUNT(*) FROM sensor_state") == 0
    assert count(client, "SELECT COUNT(*) FROM jobs") == 0
    assert state.chat_calls() == []
    health = await client.get("/health")  # never guarded: the device tells "down" from "locked"
    assert health.status == 200
    ok = {"X-Device-Token": DEVICE_TOKEN}
    resp = await client.post("/chat/text", json={"text": "my name is Alex"}, headers=ok)
    assert resp.status == 200
    assert_valid("chat_text.response", await resp.json())
    assert (await client.post("/context/sensors", json={"battery": 5}, headers=ok)).status == 200
    resp = await client.post(
        "/chat/audio", data=raw_pcm(1.0), headers={**ok, "Content-Type": AUDIO}
    )
    assert resp.status == 200
    assert count(client, "SELECT COUNT(*) FROM turns WHERE role = 'user'") == 2


async def test_a_stranger_on_the_lan_is_answered_without_the_owners_memories(
    make_client: Callable[..., Any], ollama: Any
) -> None:
    """Issue 16, item 4: firmware without a token still gets answers (the contract is frozen),
    but a caller that is neither the owner's device (X-Device-Token) nor this machine gets
    no stored memory in its prompt; the owner's device gets it all."""
    state, _ = ollama
    client = await make_client(**{"api.device_token": DEVICE_TOKEN, "api.allow_loopback": False})
    memory = client.app[keys.MEMORY]
    await memory.remember(content="The user's bank PIN is 4417.", actor="test")
    await drain(client.app[keys.CONFIG].storage.db_path, memory.clock)

    async def prompt_for(headers: dict[str, str]) -> str:
        before = len(state.chat_calls())
        resp = await client.post(
            "/chat/text", json={"text": "what is my bank PIN?"}, headers=headers
        )
        assert resp.status == 200
        assert_valid("chat_text.response", await resp.json())
        (call,) = state.chat_calls()[before:]
        return json.dumps(call["body"]["messages"])

    assert "4417" not in await prompt_for({})
    assert "4417" in await prompt_for({"X-Device-Token": DEVICE_TOKEN})
    resp = await client.post(
        "/chat/text", json={"text": "hi"}, headers={"X-Device-Token": "wrong-device-token-0000"}
    )
    assert resp.status == 401


async def test_device_allowlist(make_client: Callable[..., Any], ollama: Any) -> None:
    state, _ = ollama
    client = await make_client(**{"api.device_allowlist": "desk, kitchen"})
    refused = [
        client.post("/chat/text", json={"text": "hi", "device_id": "garage"}),
        client.post("/chat/text", json={"text": "hi"}),  # the "default" device is not listed
        client.post("/context/sensors", json={"battery": 1, "device_id": "garage"}),
        client.post(
            "/chat/audio?device_id=garage",
            data=raw_pcm(1.0),
            headers={"Content-Type": AUDIO},
        ),
    ]
    for request in refused:
        resp = await request
        assert resp.status == 403
        body = await resp.json()
        assert_error(body, "forbidden")
        assert body["error"]["details"]["device_id"] in ("garage", "default")
    assert count(client, "SELECT COUNT(*) FROM turns") == 0
    assert count(client, "SELECT COUNT(*) FROM sensor_state") == 0
    assert state.chat_calls() == []
    resp = await client.post("/chat/text", json={"text": "hi", "device_id": " desk "})
    assert resp.status == 200
    resp = await client.post("/context/sensors", json={"battery": 1, "device_id": "kitchen"})
    assert resp.status == 200
    resp = await client.post(
        "/chat/audio?device_id=kitchen", data=raw_pcm(1.0), headers={"Content-Type": AUDIO}
    )
    assert resp.status == 200
    assert count(client, "SELECT COUNT(*) FROM turns WHERE device_id = 'desk'") >= 1
