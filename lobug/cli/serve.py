"""`lobug serve`: run the daemon with graceful shutdown and systemd notify/watchdog."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from aiohttp import web

from lobug import keys
from lobug.app import Overrides, create_app
from lobug.config import Config
from lobug.host.connections import GuardedSite, Limits, default_max_connections
from lobug.host.notify import Notifier, watchdog_loop
from lobug.ops.lock import DataDirLock

log = logging.getLogger("lobug")
KEEPALIVE_TIMEOUT_S = 15.0  # an idle keep-alive connection is kept this long


async def serve(config: Config, overrides: Overrides | None = None) -> None:
    """Run until SIGTERM/SIGINT. Raises DataDirLocked when another daemon owns the data dir."""
    # Held for the whole lifetime, before the DB is opened or migrated: a second daemon on the
    # same data dir (or `lobug restore` swapping the file) must not touch it meanwhile.
    with DataDirLock(config.storage.data_dir):
        await _serve_locked(config, overrides)


async def _serve_locked(config: Config, overrides: Overrides | None) -> None:
    notifier = Notifier.from_env()
    app = create_app(config, overrides)
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,  # our own middleware logs requests with latency
        shutdown_timeout=config.server.shutdown_timeout_s,
        keepalive_timeout=KEEPALIVE_TIMEOUT_S,
    )
    await runner.setup()  # opens and migrates the DB, starts workers (cleanup_ctx)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    watchdog: asyncio.Task[None] | None = None
    try:
        limits = Limits(config.server.max_connections or default_max_connections())
        site = GuardedSite(
            runner,
            config.server.host,
            config.server.port,
            limits,
            reuse_address=True,
            shutdown_timeout=config.server.shutdown_timeout_s,
        )
        await site.start()
        for address in _addresses(runner):
            log.info("lobug listening on http://%s:%d", *address[:2])
        health = app[keys.HEALTH]
        notifier.ready(await health.status_line())
        watchdog = asyncio.create_task(watchdog_loop(notifier, health.status_line))
        await stop.wait()
        log.info("shutting down: no new connections, finishing in-flight requests")
        notifier.stopping()
    finally:
        if watchdog is not None:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog
        # Stops accepting, waits for in-flight requests, then runs every cleanup_ctx (workers
        # stop, the DB closes).
        await runner.cleanup()
        log.info("lobug stopped")


def _addresses(runner: web.AppRunner) -> list[tuple[str, int]]:
    result = []
    for site in runner.sites:
        server = getattr(site, "_server", None)
        for sock in getattr(server, "sockets", None) or []:
            result.append(sock.getsockname())
    return result
