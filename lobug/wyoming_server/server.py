"""WyomingServer: the listener's lifetime inside the daemon, its connection cap and shared audio
budget, and what /health says about it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from urllib.parse import urlsplit

from wyoming.error import Error
from wyoming.event import async_write_event

from lobug.wyoming_server.asr import AudioBudget
from lobug.wyoming_server.connection import ConnectionServices, WyomingHandler
from lobug.wyoming_server.frames import LINE_BYTES

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0  # a turn still streaming at shutdown: its commit is shielded, then it ends
REFUSAL_WRITE_S = 1.0  # the "too many connections" answer: sent if it fits, never waited for


class WyomingServer:
    def __init__(self, uri: str, services: ConnectionServices) -> None:
        self.uri = uri
        self._services = services
        self._max_connections = services.config.wyoming.max_connections
        self._budget = AudioBudget(services.config.wyoming.max_audio_bytes_total)
        self._server: asyncio.Server | None = None
        self._handlers: set[WyomingHandler] = set()
        self.refused = 0
        self.error: str | None = None

    async def start(self) -> None:
        """Listen; a port that is taken (or an address this host lacks) is logged and reported
        on /health, and the rest of the daemon carries on without Wyoming."""
        parts = urlsplit(self.uri)  # tcp://host:port, checked by the config
        try:
            self._server = await asyncio.start_server(
                self._connected, parts.hostname, parts.port, limit=LINE_BYTES
            )
        except OSError as exc:
            self.error = f"cannot listen on {self.uri}: {exc.strerror or exc}"
            log.warning(
                "Wyoming is off: %s; set wyoming.uri to a free port, or wyoming.enabled = false",
                self.error,
            )
            return
        log.info("Wyoming (asr, handle) listening on %s", self.uri)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()  # no new connections; then every open one's socket is closed
        for handler in self._handlers:
            handler.stop()
        tasks = [h.task for h in self._handlers if h.task is not None and not h.task.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    def status(self) -> dict[str, Any]:
        """For /health: {"uri", "listening", "connections"} and "error" when not listening."""
        report: dict[str, Any] = {
            "uri": self.uri,
            "listening": self._server is not None,
            "connections": len(self._handlers),
        }
        if self.error is not None:
            report["error"] = self.error
        return report

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._handlers) >= self._max_connections:
            await self._refuse(writer)
            return
        handler = WyomingHandler(reader, writer, self._services, self._budget)
        self._handlers.add(handler)
        try:
            await handler.run()
        finally:
            self._handlers.discard(handler)

    async def _refuse(self, writer: asyncio.StreamWriter) -> None:
        """Past wyoming.max_connections: one `error` event, then the socket is closed."""
        self.refused += 1
        log.warning(
            "Wyoming: %d connections open (wyoming.max_connections); refused %d so far",
            len(self._handlers),
            self.refused,
        )
        busy = Error(
            text=f"Lo-Bug has {self._max_connections} Wyoming connections open, its limit"
            " (wyoming.max_connections); try again shortly",
            code="unavailable",
        )
        with contextlib.suppress(ConnectionError, TimeoutError):
            async with asyncio.timeout(REFUSAL_WRITE_S):
                await async_write_event(busy.event(), writer)
        writer.close()
