"""Lo-Bug's memory as an MCP server: `setup(app)` mounts streamable HTTP at /mcp in the daemon,
`server.serve_stdio` serves one desktop agent (`lobug mcp`). Not named `mcp`: that is the SDK.

The SDK takes about a second to import, so this package imports it only when a server is built
(`mount`): every `lobug` command imports `lobug.app`, and only the daemon and `lobug mcp` serve
MCP.
"""

from __future__ import annotations

from aiohttp import web

MCP_PATH = "/mcp"


def setup(app: web.Application) -> None:
    """Mount /mcp (POST, GET, DELETE); the SDK loads on the first request (`mount`)."""
    from lobug.mcp_server import mount

    mount.setup(app, MCP_PATH)
