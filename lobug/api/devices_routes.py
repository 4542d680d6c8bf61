"""/v1/devices: the devices heard on the firmware routes, and pairing (issue 40; the rules:
lobug/devices/). Full trust and every category only, like /v1/gc (403 otherwise)."""

from __future__ import annotations

from aiohttp import web

from lobug import keys
from lobug.access import Principal
from lobug.api import v1_params as p
from lobug.api.auth import principal_of
from lobug.devices.shapes import PairRequest, TrustRequest

routes = web.RouteTableDef()


def _owner(request: web.Request) -> Principal:
    principal = principal_of(request)
    request.app[keys.RECORDS].scope(principal).require_unrestricted("managing devices")
    return principal


@routes.get("/v1/devices")
async def list_devices(request: web.Request) -> web.Response:
    _owner(request)
    devices = request.app[keys.DEVICES]
    listed = [d.to_dict() for d in await devices.list()]
    return web.json_response({"devices": listed, "pairing_until": await devices.window()})


@routes.post("/v1/devices/pair")
async def open_pairing(request: web.Request) -> web.Response:
    principal = _owner(request)
    wanted = await p.body(request, PairRequest) if request.body_exists else PairRequest()
    until = await request.app[keys.DEVICES].open_window(principal, wanted.seconds)
    return web.json_response({"pairing_until": until, "seconds": wanted.seconds})


@routes.post("/v1/devices/{id}/trust")
async def trust_device(request: web.Request) -> web.Response:
    principal = _owner(request)
    row = p.path_id(request, "device")
    wanted = await p.body(request, TrustRequest) if request.body_exists else TrustRequest()
    device = await request.app[keys.DEVICES].trust(principal, row, wanted.trust)
    return web.json_response(device.to_dict())


@routes.delete("/v1/devices/{id}")
async def forget_device(request: web.Request) -> web.Response:
    principal = _owner(request)
    device = await request.app[keys.DEVICES].forget(principal, p.path_id(request, "device"))
    return web.json_response(device.to_dict())
