"""The /v1 memory API routes (so far: the OpenAPI document that describes them)."""

from __future__ import annotations

from functools import cache
from importlib import resources

from aiohttp import web

routes = web.RouteTableDef()


@cache
def openapi_document() -> bytes:
    """lobug/api/openapi.json as shipped in the package (read once)."""
    return resources.files("lobug.api").joinpath("openapi.json").read_bytes()


@routes.get("/v1/openapi.json")
async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=openapi_document(), content_type="application/json")
