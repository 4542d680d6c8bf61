"""Streamable HTTP at /mcp in the daemon: the SDK's session manager behind /v1's tokens.

Why the SDK's own session manager behind a small ASGI bridge (`asgi.call_asgi`) rather than a
re-implementation of the transport on aiohttp: sessions, SSE framing, DELETE, the
protocol-version routing (handshake and 2026 eras) and the body limit stay the SDK's, tested
there and updated with it; what is ours is plumbing (`asgi.py`) plus the one thing the SDK
cannot know, who the caller is. Each request is authenticated here (`auth.authenticate`), its
`Principal` travels in the ASGI scope to the tool handlers, and the scope's `user` binds a
session to the credential that opened it (the manager answers 404 to any other credential).
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from lobug import keys
from lobug.access import Principal
from lobug.mcp_server.asgi import call_asgi
from lobug.mcp_server.server import Context, build_server
from lobug.mcp_server.tools import Services

log = logging.getLogger(__name__)

PRINCIPAL_SCOPE = "lobug.principal"
MAX_SESSIONS = 100  # a household's agents, not a public service; each holds a task and streams


class Sessions:
    """The session manager's `run()` in a task of its own: anyio needs it entered and exited in
    one task, and aiohttp's startup and shutdown hooks may run in different ones."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        started = asyncio.Event()

        async def run() -> None:
            async with self.manager.run():
                started.set()
                await self._stop.wait()

        self._task = asyncio.create_task(run(), name="mcp-sessions")
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait({self._task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if self._task.done():
            self._task.result()  # raises what stopped it

    async def stop(self) -> None:
        """Ends every session (their open streams close); safe to call twice."""
        self._stop.set()
        if self._task is not None:
            await self._task


async def serve(
    request: web.Request, sessions: Sessions, principal: Principal
) -> web.StreamResponse:
    """One /mcp request of an authenticated caller (mount.handle) through the SDK."""
    scope = {PRINCIPAL_SCOPE: principal, "user": AuthenticatedUser(_credential(principal))}
    return await call_asgi(sessions.manager.handle_request, request, scope)


def principal_in_scope(ctx: Context) -> Principal:
    """The caller `handle` put in the request's ASGI scope; no principal, no access."""
    scope = getattr(ctx.request, "scope", None)
    principal = scope.get(PRINCIPAL_SCOPE) if isinstance(scope, dict) else None
    if not isinstance(principal, Principal):
        raise RuntimeError("an MCP request reached a tool without passing lobug's /mcp auth")
    return principal


def _credential(principal: Principal) -> AccessToken:
    """The identity the session manager binds a session to (no secret: the token's name)."""
    who = f"{principal.agent}|{principal.trust}|{principal.token_name or ''}|{principal.via}"
    return AccessToken(token="", client_id=who, scopes=[])


async def start(app: web.Application) -> Sessions:
    """The session manager over the app's memory services, running."""

    def services() -> Services:
        return Services(app[keys.RECORDS], app[keys.RECALL])

    manager = StreamableHTTPSessionManager(
        build_server(services, principal_in_scope),
        max_request_body_size=app[keys.CONFIG].server.max_json_bytes,
        max_sessions=MAX_SESSIONS,
    )
    sessions = Sessions(manager)
    await sessions.start()
    return sessions
