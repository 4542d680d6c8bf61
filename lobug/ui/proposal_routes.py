"""Consent proposals (seed 001 §10): profile facts heard by voice, waiting for a yes or no."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from lobug import errors, keys
from lobug.memory.write.proposals import Proposals
from lobug.ui import pages
from lobug.ui.browse_routes import path_id

routes = web.RouteTableDef()


def desk(request: web.Request) -> Proposals:
    """The same `Proposals` service /v1/proposals builds, from the same app services."""
    memory = request.config_dict[keys.MEMORY]
    if memory is None:
        raise errors.unavailable("proposals need long-term memory, which is off (memory.enabled)")
    return memory.proposals()


@routes.get("/proposals", name="proposals")
@pages.template("proposals.html")
async def proposals(request: web.Request) -> dict[str, Any]:
    found = await desk(request).listing(request[keys.PRINCIPAL], status="pending", limit=200)
    return {"proposals": found["proposals"]}


@routes.post("/proposals/{id}/accept", name="proposal-accept")
async def accept(request: web.Request) -> web.Response:
    await desk(request).accept(request[keys.PRINCIPAL], path_id(request, "proposal"))
    raise web.HTTPSeeOther("/ui/proposals?done=accepted")


@routes.post("/proposals/{id}/reject", name="proposal-reject")
async def reject(request: web.Request) -> web.Response:
    await desk(request).reject(request[keys.PRINCIPAL], path_id(request, "proposal"))
    raise web.HTTPSeeOther("/ui/proposals?done=rejected")
