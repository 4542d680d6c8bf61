"""/mcp in the real daemon process (`lobug serve`): the SDK's client, then a SIGTERM while an
MCP client holds its server-to-client GET stream open."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import aiohttp
from faultkit import DaemonPool, db_value

sys.path.insert(0, str(Path(__file__).parent))

from mcp_kit import TOOL_NAMES, call, http_session  # noqa: E402

VERSION = "2025-06-18"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {},
               "clientInfo": {"name": "raw", "version": "0"}},
}  # fmt: skip


async def test_sdk_client_against_the_daemon(daemons: DaemonPool) -> None:
    daemon = await daemons.start()
    async with http_session(daemon.url + "/mcp") as mcp:
        assert {t.name for t in (await mcp.list_tools()).tools} == TOOL_NAMES
        made = await call(mcp, "remember", content="The user's bike is a blue Brompton.")
        # Words it shares, not only meaning: its vector comes from a job that may not have
        # run yet when the query arrives a few milliseconds later.
        found = await call(mcp, "query", query="is the blue Brompton bike mine")
        assert made["id"] in [r["id"] for r in found["results"]]
    assert db_value(daemon.data_dir, "SELECT content FROM memories WHERE id = ?", made["id"]) == (
        "The user's bike is a blue Brompton."
    )
    assert await daemon.terminate() == 0


async def test_sigterm_ends_open_mcp_streams_promptly(daemons: DaemonPool) -> None:
    # A shutdown grace far above the bound below: an open stream must not use it up.
    daemon = await daemons.start(env={"LOBUG_SERVER_SHUTDOWN_TIMEOUT_S": "30"})
    url = daemon.url + "/mcp"
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json=INITIALIZE, headers=HEADERS) as resp:
            assert resp.status == 200
            session = resp.headers["Mcp-Session-Id"]
            await resp.read()
        headers = {**HEADERS, "Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with http.post(url, json=note, headers=headers) as resp:
            assert resp.status == 202
        stream = await http.get(url, headers={**headers, "Accept": "text/event-stream"})
        assert stream.status == 200
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        started = time.monotonic()
        code = await daemon.terminate(timeout=25)
        elapsed = time.monotonic() - started
        ended = await asyncio.wait_for(stream.content.read(), 5)  # the stream was closed
        stream.release()
    assert code == 0, daemon.log()
    assert elapsed < 8, f"shutdown took {elapsed:.1f}s with an MCP stream open"
    assert b"event" not in ended or ended  # whatever was pending, then EOF
