"""WyomingServer: the listener's lifetime inside the daemon, and what /health says about it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from wyoming.server import AsyncServer

from lobug.wyoming_server.handler import Services, WyomingHandler

log = logging.getLogger(__name__)

STOP_GRACE_S = 5.0  # a turn still streaming at shutdown: its commit is shielded, then it ends


class WyomingServer:
    def __init__(self, uri: str, services: Services) -> None:
        self.uri = uri
        self._services = services
        self._server: AsyncServer | None = None
        self._handlers: set[WyomingHandler] = set()
        self.error: str | None = None

    @property
    def listening(self) -> bool:
        return self._server is not None

    async def start(self) -> bool:
        """Listen; a port that is taken (or an address this host lacks) is logged and reported
        on /health, and the rest of the daemon carries on without Wyoming."""
        server = AsyncServer.from_uri(self.uri)
        try:
            await server.start(self._new_handler)
        except OSError as exc:
            self.error = f"cannot listen on {self.uri}: {exc.strerror or exc}"
            log.warning(
                "Wyoming is off: %s; set wyoming.uri to a free port, or wyoming.enabled = false",
                self.error,
            )
            return False
        self._server = server
        log.info("Wyoming (asr, handle) listening on %s", self.uri)
        return True

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        await server.stop()  # closes the listener and every connection's socket
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
            "listening": self.listening,
            "connections": len(self._handlers),
        }
        if self.error is not None:
            report["error"] = self.error
        return report

    def _new_handler(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> WyomingHandler:
        handler = WyomingHandler(reader, writer, self._services, on_close=self._handlers.discard)
        self._handlers.add(handler)
        return handler
