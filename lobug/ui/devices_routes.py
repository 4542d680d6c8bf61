"""The Devices page (issue 40): the devices heard on the firmware routes, the pairing window,
who was paired (with the way to undo it at once), trust and forget. The owner's only: full
trust with every category, like /v1/devices (the rules: lobug/devices/)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from lobug import keys
from lobug.access import Principal
from lobug.devices import WINDOW_S, Devices
from lobug.devices.shapes import PairRequest, TrustRequest
from lobug.memory.shapes import parse
from lobug.ui import forms, pages
from lobug.ui.browse_routes import path_id

routes = web.RouteTableDef()
# How long the page names a device as "just paired", so a mistake is seen and undone at once.
RECENT_S = 600.0
REFRESH_S = 3  # while the window is open the page reloads itself to show who was paired


def owner(request: web.Request) -> tuple[Principal, Devices]:
    principal = request[keys.PRINCIPAL]
    request.config_dict[keys.RECORDS].scope(principal).require_unrestricted("managing devices")
    return principal, request.config_dict[keys.DEVICES]


@routes.get("/devices", name="devices")
@pages.template("devices.html")
async def devices_page(request: web.Request) -> dict[str, Any]:
    _, devices = owner(request)
    listed, until = await devices.list(), await devices.window()
    now = devices.clock()
    recent = [d for d in listed if d.paired_at is not None and now - d.paired_at <= RECENT_S]
    return {
        "devices": listed,
        "pairing_until": until,
        "recent": recent,
        "refresh_s": REFRESH_S if until is not None else None,
        "window_s": int(WINDOW_S),
    }


@routes.post("/devices/pair", name="devices-pair")
async def pair(request: web.Request) -> web.Response:
    principal, devices = owner(request)
    form = await request.post()
    seconds = forms.number(form, "seconds", "a number of seconds")
    wanted = parse(PairRequest, {} if seconds is None else {"seconds": seconds})
    await devices.open_window(principal, wanted.seconds)
    raise web.HTTPSeeOther("/ui/devices?done=pairing window open")


@routes.post("/devices/{id}/trust", name="device-trust")
async def trust(request: web.Request) -> web.Response:
    principal, devices = owner(request)
    form = await request.post()
    level = forms.given(form, "trust")
    wanted = parse(TrustRequest, {} if level is None else {"trust": level})
    await devices.trust(principal, path_id(request, "device"), wanted.trust)
    raise web.HTTPSeeOther("/ui/devices?done=trusted")


@routes.post("/devices/{id}/forget", name="device-forget")
async def forget(request: web.Request) -> web.Response:
    principal, devices = owner(request)
    await devices.forget(principal, path_id(request, "device"))
    raise web.HTTPSeeOther("/ui/devices?done=forgotten")
