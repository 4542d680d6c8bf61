"""/mcp in the daemon, its SDK loaded on the first request (issue 13).

The MCP SDK (starlette, anyio streams, pydantic models for every protocol era) adds ~30 MiB to
the daemon and a second to its start; a household that never points an agent at /mcp should
not pay for it. The route is mounted at start; the first authenticated request imports the
SDK in a thread (the event loop keeps serving every other request meanwhile; issue 25) and
starts the session manager (`http.start`); shutdown ends the sessions, if any.

Callers are /v1's: its tokens and loopback rule (`AccessControl.principal_for`), and the
daemon's auth middleware applies /v1's browser rule (`lobug.api.browser`) to /mcp first, as the
MCP transport requires (a rebound Host or a foreign `Origin` is 403, token or not).
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

from aiohttp import web

from lobug import errors, keys
from lobug.access import Unauthorized


class Lazy:
    """The session manager, started once on first use, stopped at shutdown."""

    def __init__(self) -> None:
        self.sessions: Any = None  # http.Sessions once started
        self.closed = False
        self._lock = asyncio.Lock()

    async def started(self, app: web.Application) -> Any:
        async with self._lock:
            if self.closed:
                raise errors.unavailable("the daemon is shutting down")
            if self.sessions is None:
                http = await asyncio.to_thread(_load_sdk)
                self.sessions = await http.start(app)
            return self.sessions

    async def stop(self) -> None:
        """End every session (their open streams close); safe to call twice."""
        self.closed = True
        if self.sessions is not None:
            await self.sessions.stop()


MCP: web.AppKey[Lazy] = web.AppKey("mcp")
# What the first request needs: the SDK (with lobug.mcp_server.http), and the anyio backend
# it would otherwise import on the loop when the session manager starts.
SDK_MODULES = ("anyio._backends._asyncio", "lobug.mcp_server.http")


def _load_sdk() -> Any:
    """In a thread: imports take ~0.5 s that the loop must not stall for."""
    return [importlib.import_module(name) for name in SDK_MODULES][-1]


def setup(app: web.Application, path: str) -> None:
    """Mount `path` (POST, GET, DELETE). aiohttp waits for in-flight handlers before cleanup:
    the sessions (and their open GET streams) end on shutdown first, or shutdown would wait
    out server.shutdown_timeout_s."""
    app[MCP] = Lazy()
    app.router.add_route("*", path, handle)
    app.on_shutdown.append(_stop)
    app.on_cleanup.append(_stop)


async def handle(request: web.Request) -> web.StreamResponse:
    try:
        access = request.app[keys.ACCESS]
        principal = access.principal_for(request.headers.get("Authorization"), request.remote)
    except Unauthorized as exc:
        response = web.json_response(exc.body(), status=exc.status)
        response.headers["WWW-Authenticate"] = exc.challenge
        return response
    sessions = await request.app[MCP].started(request.app)
    from lobug.mcp_server import http

    return await http.serve(request, sessions, principal)


async def _stop(app: web.Application) -> None:
    await app[MCP].stop()
