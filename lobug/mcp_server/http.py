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
import time
from typing import Any

from aiohttp import web
from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, AuthorizationContext
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from lobug import keys
from lobug.access import Principal
from lobug.mcp_server.asgi import call_asgi
from lobug.mcp_server.server import Context, build_server
from lobug.mcp_server.tools import Services

log = logging.getLogger(__name__)

PRINCIPAL_SCOPE = "lobug.principal"
# A household's agents, not a public service; each session holds a task and streams. Caps are
# per caller (issue 25): one token cannot take the sessions every other caller needs.
MAX_SESSIONS = 100  # all callers together
MAX_SESSIONS_PER_CALLER = 16


class SessionManager(StreamableHTTPSessionManager):
    """The SDK's manager with its session cap per caller (the credential a session is bound to).

    A new session is always admitted: a caller at `per_caller` sessions loses its own least
    recently used one, and when all callers together hold `ceiling`, the caller holding the
    most loses its least recently used. So no caller can lock out another (the owner included),
    and what one caller opens is bounded. A session with a request in flight (an open GET
    stream) counts as used now.
    """

    def __init__(
        self, app: Server[Any], *, max_request_body_size: int, ceiling: int, per_caller: int
    ) -> None:
        super().__init__(app, max_request_body_size=max_request_body_size, max_sessions=None)
        self.ceiling, self.per_caller = ceiling, per_caller
        self._used: dict[str, float] = {}  # session id -> last request (monotonic)
        self._busy: dict[str, int] = {}  # session id -> requests in flight

    async def handle_request(self, scope: Any, receive: Any, send: Any) -> None:
        header = MCP_SESSION_ID_HEADER.lower().encode()
        sid = next((v.decode("latin-1") for k, v in scope["headers"] if k == header), None)
        if sid is None or sid not in self._server_instances:
            return await super().handle_request(scope, receive, send)
        self._busy[sid] = self._busy.get(sid, 0) + 1
        try:
            await super().handle_request(scope, receive, send)
        finally:
            self._busy[sid] -= 1
            if not self._busy[sid]:
                del self._busy[sid]
            self._used[sid] = time.monotonic()

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        for sid in self._used.keys() - self._server_instances.keys():
            del self._used[sid]  # ended (DELETE, idle expiry)
        held: dict[str, list[str]] = {}
        for sid in self._server_instances:
            held.setdefault(self._caller(self._session_owners.get(sid)), []).append(sid)
        mine = held.get(self._caller(requestor), [])
        if len(mine) >= self.per_caller:
            self._evict(mine)
        elif len(self._server_instances) >= self.ceiling:
            self._evict(max(held.values(), key=len))
        transport = super()._admit_session(requestor)
        if transport is not None and transport.mcp_session_id is not None:
            self._used[transport.mcp_session_id] = time.monotonic()
        return transport

    def _evict(self, sids: list[str]) -> None:
        """End the least recently used of `sids` (one with no request in flight, if any)."""
        sid = min(sids, key=lambda s: (s in self._busy, self._used.get(s, 0.0)))
        caller = self._caller(self._session_owners.pop(sid, None))
        transport = self._server_instances.pop(sid)
        self._used.pop(sid, None)
        log.info("MCP: ended the least recently used session of %s to open a new one", caller)
        if self._task_group is not None:
            self._task_group.start_soon(transport.terminate)

    @staticmethod
    def _caller(owner: AuthorizationContext | None) -> str:
        return owner["client_id"] if owner is not None else ""


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

    manager = SessionManager(
        build_server(services, principal_in_scope),
        max_request_body_size=app[keys.CONFIG].server.max_json_bytes,
        ceiling=MAX_SESSIONS,
        per_caller=MAX_SESSIONS_PER_CALLER,
    )
    sessions = Sessions(manager)
    await sessions.start()
    return sessions
