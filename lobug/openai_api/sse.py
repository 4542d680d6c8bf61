"""Server-sent events as OpenAI streams them: `data: {json}` blocks, ended by `data: [DONE]`.

A stream is bounded on the daemon's side (issue 25): a write that cannot drain within
`WRITE_TIMEOUT_S` means the client stopped reading, and a client that hangs up is a normal
end; either way the stream ends as `Gone` (what was said is kept by the caller). At shutdown
every open stream is stopped at once (`Streams.stop`), so a stalled or slow one cannot hold the
daemon past the unit's stop timeout.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

DONE = b"data: [DONE]\n\n"
# A reply is a few KB and the socket buffers hold megabytes: a write that waits this long is
# a client that stopped reading, not a slow one.
WRITE_TIMEOUT_S = 10.0


class Gone(Exception):
    """The client hung up or stopped reading."""


class Stopped(Exception):
    """The daemon is shutting down (`Streams.stop`)."""


class Streams:
    """The open streams' tasks, so shutdown can stop them (`setup`)."""

    def __init__(self) -> None:
        self.tasks: set[asyncio.Task[Any]] = set()
        self.stopping = False

    async def stop(self, app: web.Application) -> None:
        self.stopping = True
        for task in self.tasks:
            task.cancel()


STREAMS: web.AppKey[Streams] = web.AppKey("openai_streams")


class Stream:
    """One SSE response: opened, written with a time bound, registered for shutdown."""

    def __init__(self, request: web.Request, headers: dict[str, str]) -> None:
        self.request = request
        self.response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",  # a reverse proxy must not hold the first sentence back
                **headers,
            }
        )
        self._streams = request.app.get(STREAMS)
        self._task = asyncio.current_task()

    async def __aenter__(self) -> Stream:
        if self._streams is not None and self._task is not None:
            self._streams.tasks.add(self._task)
            if self._streams.stopping:  # began while the daemon was stopping
                self._task.cancel()
        try:
            await self.response.prepare(self.request)
        except ConnectionError:
            raise Gone("the client closed the connection") from None
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """A cancellation that is shutdown (`Streams.stop`) or the client leaving (aiohttp's
        `handler_cancellation`) ends the stream like any other end: `Stopped` or `Gone`."""
        if self._streams is not None and self._task is not None:
            self._streams.tasks.discard(self._task)
        if kind is not asyncio.CancelledError or self._task is None:
            return
        transport = self.request.transport
        if self._streams is not None and self._streams.stopping:
            self._task.uncancel()
            raise Stopped from None
        if transport is None or transport.is_closing():
            self._task.uncancel()
            raise Gone("the client closed the connection") from None

    async def send(
        self, data: dict[str, Any], *, done: bool = False, timeout: float | None = None
    ) -> None:
        """One event (and `[DONE]`), or `Gone`."""
        timeout = WRITE_TIMEOUT_S if timeout is None else timeout
        try:
            async with asyncio.timeout(timeout):
                await self.response.write(event(data) + (DONE if done else b""))
        except TimeoutError:
            raise Gone(f"the client read nothing for {timeout:g} s") from None
        except ConnectionError:
            raise Gone("the client closed the connection") from None

    async def end(self, timeout: float | None = None) -> None:
        try:
            async with asyncio.timeout(WRITE_TIMEOUT_S if timeout is None else timeout):
                await self.response.write_eof()
        except (TimeoutError, ConnectionError):
            self.drop()

    def drop(self) -> None:
        """Close the connection (a stalled client: nothing more is written to it)."""
        if self.request.transport is not None:
            self.request.transport.abort()


def setup(app: web.Application) -> None:
    """Track open streams and stop them when the daemon shuts down."""
    app[STREAMS] = Streams()
    app.on_shutdown.append(app[STREAMS].stop)


def event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"
