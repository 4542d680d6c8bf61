"""Issue 25 (6, 7): what a web page can make the owner's browser send is refused on every door
but the frozen firmware routes: a Host that is not one of the daemon's names (DNS rebinding),
an Origin that is not the daemon's own, and a /v1 POST that is not application/json."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from api_kit import TOKENS, App, make_app
from contract import assert_error, assert_valid
from memory_kit import drain

from lobug import keys

JSON = {"Content-Type": "application/json"}
REBOUND = "evil.example"


def authority(app: App) -> str:
    return f"127.0.0.1:{app.client.port}"


async def status_of(app: App, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    async with app.client.request(method, path, **kw) as resp:
        raw = await resp.read()
        body = json.loads(raw) if resp.content_type == "application/json" else raw
        return resp.status, body


async def test_a_rebound_name_is_refused_on_every_browser_door(
    make_client: Callable[..., Any],
) -> None:
    """`Host: evil.example` got a full /v1/export and a UI page with its CSRF token."""
    app = await make_app(make_client)
    await app.remember("The user's garage door code is 8642.")
    host = {"Host": f"{REBOUND}:{app.client.port}"}
    for method, path, extra in (
        ("GET", "/v1/export", {}),
        ("GET", "/v1/memories", {}),
        ("GET", "/ui/", {}),
        ("GET", "/ui/facts", {}),
        ("GET", "/ui/login", {}),
        ("GET", "/mcp", {}),
        ("GET", "/metrics", {}),
        ("GET", "/v1/models", {}),
        ("POST", "/v1/gc", {"json": {}}),
        ("POST", "/v1/chat/completions", {"json": {"model": "lobug", "messages": []}}),
    ):
        status, body = await status_of(app, method, path, headers=host, **extra)
        assert status == 403, (path, body)
        assert body["error"]["code"] == "forbidden" and "api.allowed_hosts" in str(body), path
        assert "8642" not in str(body)


async def test_addresses_loopback_names_and_configured_names_pass(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client, **{"api.allowed_hosts": "lobug.home, Proxy.Example:8443"})
    port = app.client.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}",
                 "192.168.1.20:8321", "10.0.0.7", "[fe80::1]:80", f"lobug.home:{port}",
                 "LOBUG.HOME.", "proxy.example"):  # fmt: skip
        status, body = await status_of(app, "GET", "/v1/stats", headers={"Host": host})
        assert status == 200, (host, body)
        status, _ = await status_of(app, "GET", "/ui/", headers={"Host": host})
        assert status == 200, host
    for host in (REBOUND, f"{REBOUND}.:{port}", "lobug.home.evil.example", "127.0.0.1.nip.io",
                 "localhost.evil.example", "a@127.0.0.1", "[::1"):  # fmt: skip
        status, _ = await status_of(app, "GET", "/v1/stats", headers={"Host": host})
        assert status == 403, host


async def test_state_changes_from_another_origin_are_refused(
    make_client: Callable[..., Any],
) -> None:
    """A page on another site, or on another port of this machine, posts as the loopback
    owner: refused, token or not; the daemon's own origin and a configured name pass."""
    app = await make_app(make_client, **{"api.allowed_hosts": "lobug.home"})
    memory = await app.remember("The user's sister Ana lives in Lisbon.")
    confirm = f"/v1/memories/{memory['id']}/confirm"
    port = app.client.port
    foreign = ("http://evil.example", f"http://{REBOUND}:{port}", "http://localhost:1",
               f"http://127.0.0.1:{port + 1}", "null", "file://", "http://[::1]:1")  # fmt: skip
    for origin in foreign:
        for auth in ({}, {"Authorization": f"Bearer {TOKENS['full']}"}):
            headers = {**JSON, **auth, "Origin": origin}
            for path in (confirm, "/v1/gc"):
                status, body = await status_of(app, "POST", path, headers=headers)
                assert status == 403 and body["error"]["code"] == "forbidden", (origin, path)
            status, _ = await status_of(app, "GET", "/v1/export", headers=headers)
            assert status == 403, origin
    assert app.value("SELECT decay_rate FROM memories WHERE id = ?", memory["id"]) > 0
    for origin in (f"http://{authority(app)}", "https://lobug.home", "http://lobug.home:8080"):
        status, body = await status_of(app, "POST", confirm, headers={**JSON, "Origin": origin})
        assert status == 200, (origin, body)
    assert app.value("SELECT decay_rate FROM memories WHERE id = ?", memory["id"]) == 0


async def test_v1_posts_must_be_json_even_without_a_body(
    make_client: Callable[..., Any],
) -> None:
    """What a form or a `fetch(…, {mode: "no-cors"})` can send cross-origin without a
    preflight: no type, text/plain, a form. confirm, restore, gc, accept and reject took it."""
    app = await make_app(make_client)
    memory = await app.remember("The user's bike is red.")
    base = f"/v1/memories/{memory['id']}"
    await app.local.delete(base)
    paths = (f"{base}/restore", f"{base}/confirm", "/v1/gc", "/v1/proposals/1/accept",
             "/v1/proposals/1/reject", "/v1/memories", "/v1/query")  # fmt: skip
    for path in paths:
        for kw in ({}, {"data": "{}", "headers": {"Content-Type": "text/plain"}},
                   {"data": {"content": "x"}}):  # fmt: skip
            status, body = await status_of(app, "POST", path, **kw)
            assert status == 415, (path, kw, body)
            assert_error(body, "unsupported_media_type")
    assert app.value("SELECT status FROM memories WHERE id = ?", memory["id"]) == "soft_deleted"
    # An empty body with the JSON type is what a client sends to these (and is fine).
    status, body = await status_of(app, "POST", f"{base}/restore", headers=JSON)
    assert status == 200 and body["status"] == "active"
    status, _ = await status_of(app, "POST", "/v1/gc", headers={"Content-Type": "app/x+json"})
    assert status == 200


async def test_firmware_routes_answer_any_host_but_a_rebound_page_is_a_stranger(
    make_client: Callable[..., Any], ollama: Any
) -> None:
    """The firmware contract is frozen: any Host and Origin still get answers. But a page on a
    rebound name reaching /chat/text from this machine no longer borrows the loopback trust:
    its prompt holds none of the owner's memories."""
    state, _ = ollama
    client = await make_client()
    memory = client.app[keys.MEMORY]
    await memory.remember(content="The user's bank PIN is 4417.", actor="test")
    await drain(client.app[keys.CONFIG].storage.db_path, memory.clock)
    rebound = {"Host": f"{REBOUND}:{client.port}"}

    async def prompt_for(headers: dict[str, str]) -> str:
        before = len(state.chat_calls())
        resp = await client.post("/chat/text", json={"text": "my PIN?"}, headers=headers)
        assert resp.status == 200
        assert_valid("chat_text.response", await resp.json())
        (call,) = state.chat_calls()[before:]
        return json.dumps(call["body"]["messages"])

    assert "4417" not in await prompt_for(rebound)
    assert "4417" not in await prompt_for({"Origin": "http://localhost:1"})
    assert "4417" in await prompt_for({"Host": "192.168.1.20:8321"})  # the Pi's LAN address
    assert "4417" in await prompt_for({})
    resp = await client.get("/health", headers={**rebound, "Origin": "http://evil.example"})
    assert resp.status == 200
    resp = await client.post("/context/sensors", json={"battery": 5}, headers=rebound)
    assert resp.status == 200
