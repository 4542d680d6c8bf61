"""Lo-Bug as a Wyoming service for Home Assistant Assist: `lifecycle` (a cleanup_ctx) runs an
`asr` and a `handle` service on `wyoming.uri` while the daemon runs. Not named `wyoming`: that
is the protocol library."""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from lobug import keys
from lobug.wyoming_server.connection import ConnectionServices
from lobug.wyoming_server.server import WyomingServer


async def lifecycle(app: web.Application) -> AsyncIterator[None]:
    """Started after every service it uses, stopped before them; `wyoming.enabled = false`
    opens no port at all."""
    config = app[keys.CONFIG]
    if not config.wyoming.enabled:
        yield
        return
    services = ConnectionServices(config=config, chat=app[keys.CHAT], speech=app[keys.SPEECH])
    server = WyomingServer(config.wyoming.uri, services)
    await server.start()
    app[keys.HEALTH].wyoming = server.status
    yield
    await server.stop()


__all__ = ["ConnectionServices", "WyomingServer", "lifecycle"]
