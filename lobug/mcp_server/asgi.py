"""One ASGI application served from an aiohttp handler: the request in, the response streamed out.

Just enough of ASGI 3 (HTTP only) for the MCP SDK's streamable-HTTP session manager: the body
is passed on in the chunks aiohttp reads, each `http.response.body` is written as it comes (an
SSE stream stays open while the app sends events), and a vanished client is reported as
`http.disconnect` so the app can end the stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any

from aiohttp import web

from lobug import errors

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[MutableMapping[str, Any], Receive, Send], Coroutine[Any, Any, None]]
# aiohttp does not cancel a handler whose client went away (handler_cancellation is off), so
# the wait for `http.disconnect` looks at the connection this often.
DISCONNECT_POLL_S = 0.5


def scope_of(request: web.Request, extra: dict[str, Any]) -> dict[str, Any]:
    host, port = request.url.host or "", request.url.port or 0
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode("latin-1", "replace"),
        "root_path": "",
        "query_string": request.query_string.encode("latin-1", "replace"),
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": (request.remote, 0) if request.remote else None,
        "server": (host, port),
        "state": {},
        **extra,
    }


async def call_asgi(app: App, request: web.Request, extra: dict[str, Any]) -> web.StreamResponse:
    """Run `app` for `request` (`extra` goes into its scope) and return the response it sent.

    A client that leaves does not stop the app (as under an ASGI server): the SDK still
    finishes what the request started (a session's opening, a tool call under way), sees
    `http.disconnect`, and what it still sends is dropped. So the app runs in a task of its own,
    which aiohttp's cancelling of the handler (`handler_cancellation`) does not reach.
    """
    response: web.StreamResponse | None = None
    body_done = gone = False
    # The whole body (one JSON-RPC message, within client_max_size) before the app starts: one
    # that cannot be read (a broken gzip) is the caller's 400 (api.middleware), not an SDK error.
    body = await request.read()

    async def receive() -> Message:
        nonlocal body_done
        if not body_done and not gone:
            body_done = True
            return {"type": "http.request", "body": body, "more_body": False}
        while not gone and not _gone(request):  # after the body only a disconnect can come
            await asyncio.sleep(DISCONNECT_POLL_S)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response, gone
        if gone:
            return
        try:
            if message["type"] == "http.response.start":
                response = web.StreamResponse(status=message["status"])
                for name, value in message.get("headers", []):
                    response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
                await response.prepare(request)  # an SSE stream's headers go out at once
            elif message["type"] == "http.response.body" and response is not None:
                if message.get("body"):
                    await response.write(message["body"])
                if not message.get("more_body", False):
                    await response.write_eof()
        except ConnectionResetError:
            gone = True
            log.debug("MCP client went away during %s %s", request.method, request.path)

    task: asyncio.Task[None] = asyncio.create_task(app(scope_of(request, extra), receive, send))
    task.add_done_callback(_log_failure)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        gone = True  # the client left (or shutdown): the task ends on its own, see above
        raise
    if response is None:  # the app ended without answering
        raise errors.ApiError(500, "internal", "internal error; see the daemon log")
    return response


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("MCP request failed", exc_info=task.exception())


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()
