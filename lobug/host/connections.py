"""Connection limits in front of aiohttp, which has none: a cap below the fd limit (~1,000
idle sockets reached systemd's default of 1,024 fds and took /health and /chat/text down,
issue 16), a deadline for the first request head (slowloris: a head arriving a byte at a
time held its socket as long as the client liked) and one for each request's body (a body
that stopped half-way held its socket forever; 480 of them locked the owner out, issue 38).
Past the cap a new connection is closed at once (the OS backlog absorbs a burst). Not
covered: a later head on a kept-alive connection (aiohttp's `keepalive_timeout` ends idle ones).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from lobug.errors import ApiError

log = logging.getLogger(__name__)

FD_RESERVE = 128  # descriptors kept for the database, the log, Ollama and model files
HEAD_END = b"\r\n\r\n"
HEADER_TIMEOUT_S = 10.0  # a request head must arrive this soon after the connection opens
# A request body must have arrived this soon after its head: the largest body (10 MiB of audio)
# takes ~10 s on a weak 2.4 GHz link; the device's few hundred KiB, well under one.
BODY_TIMEOUT_S = 30.0
LINGER_S = 10.0  # aiohttp's own: how long the unread rest of a body is read and dropped


def default_max_connections() -> int:
    """What the process's fd limit allows, less a reserve (at least 64)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 65536
    return max(64, int(soft) - FD_RESERVE)


class Limits:
    """The shared state of every guarded connection of one server."""

    def __init__(self, max_connections: int) -> None:
        self.max_connections = max_connections
        self.open = 0
        self.refused = 0


class Guarded(asyncio.Protocol):
    """One connection: counted, and closed if its request head is too slow."""

    def __init__(self, inner: Any, limits: Limits) -> None:
        self.inner = inner
        self.limits = limits
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.tail = b""  # the last bytes seen, to find a head's end across reads
        self.counted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.limits.open >= self.limits.max_connections:
            self.limits.refused += 1
            if self.limits.refused in (1, 10, 100) or self.limits.refused % 1000 == 0:
                log.warning(
                    "%d connections open (the limit): refused %d so far",
                    self.limits.open,
                    self.limits.refused,
                )
            transport.abort()
            return
        self.limits.open += 1
        self.counted = True
        self._arm()
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.timer is not None:  # still waiting for the first head's blank line
            seen = self.tail + data
            if HEAD_END in seen:
                self.timer.cancel()
                self.timer = None
            self.tail = seen[-3:]
        self.inner.data_received(data)

    def _arm(self) -> None:
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(HEADER_TIMEOUT_S, self._too_slow)

    def _too_slow(self) -> None:
        self.timer = None
        if self.transport is not None:
            self.transport.abort()

    def eof_received(self) -> bool | None:
        return bool(self.inner.eof_received())

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.counted:
            self.limits.open -= 1
            self.counted = False
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class GuardedSite(web.TCPSite):
    """A TCPSite whose connections are `Guarded`."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, limits: Limits, **kw: Any):
        super().__init__(runner, host, port, **kw)
        self.limits = limits

    async def start(self) -> None:
        await web.BaseSite.start(self)
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        factory: Callable[[], asyncio.Protocol] = lambda: Guarded(server(), self.limits)  # noqa: E731
        self._server = await loop.create_server(
            factory,
            self._host,
            self._port,
            backlog=self._backlog,
            reuse_address=self._reuse_address,
            reuse_port=self._reuse_port,
        )


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def body_deadline(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Bounds how long a request's body may take to arrive, whoever reads it and however.
    The rest of a body its handler did not read is dropped here, after the answer is written
    (as aiohttp's lingering would), so a body that cannot be decoded (a broken gzip) ends its
    connection quietly instead of in aiohttp's traceback (issue 38)."""
    if request.content.is_eof():  # no body, or all of it already here
        return await handler(request)
    late = BodyDeadline(request)
    try:
        response = await handler(request)
    finally:
        late.cancel()
    if request.content.is_eof() or request.protocol is None:
        return response
    # Answered before the body was all read: an early error, a route that takes none, the
    # deadline. Written now; then the rest is dropped, or the connection closed.
    await response.prepare(request)
    await response.write_eof()
    if late.fired or not await _drained(request.content):
        request.protocol.force_close()
    return response


async def _drained(content: Any) -> bool:
    """Read and drop the rest of a body for up to LINGER_S; False when it did not end well."""
    try:
        async with asyncio.timeout(LINGER_S):
            while not content.is_eof():
                await content.readany()
    except Exception:  # noqa: BLE001 - slow, undecodable or cut: the connection ends either way
        return False
    return True


class BodyDeadline:
    """Fails the body's reader with a clear error if the body is not all here in time."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.fired = False
        self.timer = asyncio.get_running_loop().call_later(BODY_TIMEOUT_S, self._expire)

    def _expire(self) -> None:
        if self.request.content.is_eof():
            return
        self.fired = True
        self.request.content.set_exception(
            ApiError(
                408,
                "invalid_request",
                f"the request body did not arrive within {BODY_TIMEOUT_S:g} s of its head",
            )
        )

    def cancel(self) -> None:
        self.timer.cancel()
