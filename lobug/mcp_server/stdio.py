"""`lobug mcp`: the MCP server over stdin/stdout for one desktop agent, as one principal."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from lobug.access import Principal
from lobug.mcp_server.server import AfterWrite, build_server
from lobug.mcp_server.tools import Services


async def serve_stdio(
    services: Services, principal: Principal, *, after_write: AfterWrite | None = None
) -> None:
    """Until the client closes stdin. While serving, stray prints go to stderr (the SDK points
    fd 1 there), so nothing but protocol messages reaches the agent."""
    server = build_server(lambda: services, lambda ctx: principal, after_write=after_write)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
