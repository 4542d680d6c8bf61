"""Event-loop lag monitor: how late a short sleep wakes up is how long the loop was blocked."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)


class LoopLagMonitor:
    """Samples every `interval_s`; keeps the worst lag since start and since the last read.

    A blocked loop starves every request and, under systemd, stops the watchdog pings; this
    makes such stalls visible on /health and in the log before they become restarts.
    """

    def __init__(self, interval_s: float = 0.05, warn_ms: float = 250.0) -> None:
        self.interval_s = interval_s
        self.warn_ms = warn_ms
        self.max_ms = 0.0
        self.window_max_ms = 0.0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(self.interval_s)
            lag_ms = max(0.0, (loop.time() - started - self.interval_s) * 1000)
            self.max_ms = max(self.max_ms, lag_ms)
            self.window_max_ms = max(self.window_max_ms, lag_ms)
            if lag_ms > self.warn_ms:
                log.warning("event loop was blocked for %.0f ms", lag_ms)

    def snapshot(self) -> dict[str, float]:
        """The worst lags since start and since the last snapshot, which starts a new window."""
        result = {
            "lag_max_ms": round(self.max_ms, 2),
            "lag_recent_max_ms": round(self.window_max_ms, 2),
        }
        self.window_max_ms = 0.0
        return result
