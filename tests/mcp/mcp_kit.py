"""Helpers for the MCP tests: the SDK's client over stdio (`lobug mcp`) and streamable HTTP."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SCRIPT = Path(sys.executable).parent / "lobug"
TOOL_NAMES = {"query", "remember", "update", "forget", "restore", "confirm", "get", "list",
              "history", "entities", "entity", "timeline", "context"}  # fmt: skip


@contextlib.asynccontextmanager
async def stdio_session(config: Path, *args: str, errlog: Path) -> AsyncIterator[ClientSession]:
    """`lobug --config CONFIG mcp ARGS…` as a subprocess (the installed console script)."""
    command, argv = (str(SCRIPT), []) if SCRIPT.exists() else (sys.executable, ["-m", "lobug"])
    params = StdioServerParameters(
        command=command,
        args=[*argv, "--config", str(config), "mcp", *args],
        env={"HF_HUB_OFFLINE": "1"},
    )
    with errlog.open("a", encoding="utf-8") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """A tool's result (its structured content), asserting it succeeded and that the text
    content says the same."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, (tool, arguments, result.content)
    assert isinstance(result.content[0], types.TextContent)
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


async def refused(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's error body {code, message, …}, asserting the call failed as a tool error."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, result.structured_content)
    assert isinstance(result.content[0], types.TextContent)
    body = json.loads(result.content[0].text)
    assert body == result.structured_content
    return dict(body["error"])
