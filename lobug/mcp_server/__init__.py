"""Lo-Bug's memory as an MCP server: `setup(app)` mounts streamable HTTP at /mcp in the daemon,
`serve_stdio` serves one desktop agent (`lobug mcp`). Not named `mcp`: that is the SDK.

The SDK (starlette, httpx, pydantic models for every protocol era) takes about a second to
import, so this package imports it only when a server is built: every `lobug` command imports
`lobug.app`, and only the daemon and `lobug mcp` serve MCP.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from lobug.mcp_server.tools import Services

if TYPE_CHECKING:
    from lobug.access import Principal
    from lobug.mcp_server.server import AfterWrite

MCP_PATH = "/mcp"


def setup(app: web.Application) -> None:
    """Mount /mcp (POST, GET, DELETE); the SDK loads on the first request (`mount`)."""
    from lobug.mcp_server import mount

    mount.setup(app, MCP_PATH)


async def serve_stdio(
    services: Services, principal: Principal, *, after_write: AfterWrite | None = None
) -> None:
    from lobug.mcp_server import stdio

    await stdio.serve_stdio(services, principal, after_write=after_write)


__all__ = ["MCP_PATH", "Services", "serve_stdio", "setup"]
