"""Seed 002's `expires_at_ms` through MCP `remember` and `update` (the SDK's client, the real app
over HTTP): the tools take the seed's argument, refuse a past time with the /v1 error body, and
an expired memory is gone from `get`, `list` and `query`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from api_kit import TOKENS, make_app

sys.path.insert(0, str(Path(__file__).parent))

from mcp_kit import call, http_session, refused  # noqa: E402

LUNCH = "The user is having lunch with Priya at the Thai place on Tuesday."


async def test_remember_and_update_take_expires_at_ms(make_client: Any, clock: Any) -> None:
    app = await make_app(make_client)
    url = str(app.client.make_url("/mcp"))
    async with http_session(url, TOKENS["full"]) as mcp:
        schemas = {t.name: t.input_schema for t in (await mcp.list_tools()).tools}
        for tool in ("remember", "update"):
            assert {"expires_at", "expires_at_ms"} <= set(schemas[tool]["properties"]), tool
        ends_ms = int((clock() + 3600) * 1000)
        made = await call(mcp, "remember", content=LUNCH, expires_at_ms=ends_ms)
        mid = made["id"]
        assert made["expires_at"] == ends_ms / 1000
        error = await refused(mcp, "update", id=mid, expires_at_ms=int(clock() * 1000) - 1)
        assert error["code"] == "invalid_request" and error["details"] == {"field": "expires_at"}
        assert app.value("SELECT expires_at FROM memories WHERE id = ?", mid) == ends_ms / 1000
        moved = await call(mcp, "update", id=mid, expires_at_ms=ends_ms + 60_000)
        assert moved["expires_at"] == ends_ms / 1000 + 60
        error = await refused(mcp, "remember", content="The user owns a kayak.", expires_at=1.0)
        assert error["code"] == "invalid_request" and error["details"] == {"field": "expires_at"}

        clock.advance(3600 + 61)
        assert (await refused(mcp, "get", id=mid))["code"] == "not_found"
        assert (await call(mcp, "list"))["memories"] == []
        found = await call(mcp, "query", query="lunch with Priya")
        assert mid not in [r["id"] for r in found["results"]]
    assert app.value("SELECT COUNT(*) FROM memories") == 1  # the refused write stored nothing
