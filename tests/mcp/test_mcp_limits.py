"""/mcp's bounds per caller (issue 25, 8 and 12): sessions capped per credential, so one token
cannot lock the others (the owner included) out; memory ids outside SQLite's range or of the
wrong JSON type are a clean refusal."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from api_kit import TOKENS, make_app

from lobug.mcp_server import http as mcp_http

sys.path.insert(0, str(Path(__file__).parent))

from mcp_kit import call, http_session, refused  # noqa: E402

pytestmark = pytest.mark.timeout(90)

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "0"}},
}  # fmt: skip
LISTING = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def mcp_url(app: Any) -> str:
    return str(app.client.make_url("/mcp"))


async def open_sessions(http: aiohttp.ClientSession, url: str, token: str, n: int) -> list[str]:
    """`n` sessions opened (initialize answered 200) by `token`, oldest first."""
    opened = []
    for _ in range(n):
        headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
        async with http.post(url, json=INITIALIZE, headers=headers) as resp:
            assert resp.status == 200, await resp.text()
            opened.append(resp.headers["Mcp-Session-Id"])
            await resp.read()
    return opened


async def answers(http: aiohttp.ClientSession, url: str, token: str, session: str) -> int:
    headers = {**ACCEPT, "Authorization": f"Bearer {token}", "Mcp-Session-Id": session,
               "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
    async with http.post(url, json=LISTING, headers=headers) as resp:
        await resp.read()
        return resp.status


async def test_one_token_cannot_take_every_session(make_client: Any) -> None:
    app = await make_app(make_client)
    url, familiar = mcp_url(app), TOKENS["familiar"]
    async with aiohttp.ClientSession() as http:
        # As many as all callers together may hold: before issue 25, everyone else's 503.
        mine = await open_sessions(http, url, familiar, mcp_http.MAX_SESSIONS)
        # Another token and the owner (loopback, no token) still open sessions and work.
        async with http_session(url, TOKENS["full"]) as other:
            made = await call(other, "remember", content="The user's boat is called Wren.")
        async with http_session(url) as owner:
            assert (await call(owner, "get", id=made["id"]))["content"] == made["content"]
        # The token keeps its newest sessions, up to its own cap; its oldest were ended.
        assert await answers(http, url, familiar, mine[-1]) in (200, 202)
        assert await answers(http, url, familiar, mine[0]) == 404
        cap = mcp_http.MAX_SESSIONS_PER_CALLER
        kept = [await answers(http, url, familiar, s) for s in mine[-cap - 1 :]]
        assert kept[0] == 404 and set(kept[1:]) <= {200, 202}


async def test_at_the_ceiling_the_caller_holding_most_gives_one_up(
    make_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_http, "MAX_SESSIONS", 4)
    monkeypatch.setattr(mcp_http, "MAX_SESSIONS_PER_CALLER", 3)
    app = await make_app(make_client)
    url = mcp_url(app)
    async with aiohttp.ClientSession() as http:
        many = await open_sessions(http, url, TOKENS["familiar"], 3)
        (one,) = await open_sessions(http, url, TOKENS["public"], 1)
        async with http_session(url) as owner:  # the fifth: the familiar token's oldest goes
            await call(owner, "list")
        assert await answers(http, url, TOKENS["familiar"], many[0]) == 404
        assert await answers(http, url, TOKENS["familiar"], many[1]) in (200, 202)
        assert await answers(http, url, TOKENS["public"], one) in (200, 202)


async def test_ids_outside_the_range_or_not_integers_are_refused_cleanly(
    make_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    app = await make_app(make_client)
    first = await app.remember("The user's locker code is 3141.")
    assert first["id"] == 1  # `true` used to read as this id
    async with http_session(mcp_url(app), TOKENS["full"]) as mcp:
        for tool in ("get", "forget", "history", "restore"):
            for bad in (2**63, True, 10**30, -1):
                error = await refused(mcp, tool, id=bad)
                assert error["code"] == "invalid_request", (tool, bad, error)
                assert error["details"] == {"field": "id"}
        assert (await refused(mcp, "get", id=2**63 - 1))["code"] == "not_found"
    assert app.value("SELECT status FROM memories WHERE id = 1") == "active"
    assert [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []
