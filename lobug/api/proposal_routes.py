"""/v1/proposals: profile fields heard by voice waiting for the user's yes (seed 001 §10).

GET lists them (pending by default), POST …/accept writes the proposed fact, POST …/reject
drops it. The rules (who sees which proposal, what a decision writes) are in
`lobug.memory.write.proposals` and `consent`; the CLI (`lobug memory proposals|accept|reject`)
calls the same code.
"""

from __future__ import annotations

from aiohttp import web

from lobug import errors, keys
from lobug.api import v1_params as p
from lobug.api.auth import principal_of
from lobug.memory.shapes.params import EVERY, ProposalListParams
from lobug.memory.write.proposals import Proposals

routes = web.RouteTableDef()


def desk(request: web.Request) -> Proposals:
    memory = request.app[keys.MEMORY]
    if memory is None:
        raise errors.unavailable("proposals need long-term memory, which is off (memory.enabled)")
    return memory.proposals()


@routes.get("/v1/proposals")
async def list_proposals(request: web.Request) -> web.Response:
    args = p.query(request, ProposalListParams)
    status = None if args.status == EVERY else args.status
    found = await desk(request).listing(principal_of(request), status=status, limit=args.limit)
    return web.json_response(found)


@routes.post("/v1/proposals/{id}/accept")
async def accept_proposal(request: web.Request) -> web.Response:
    proposal_id = p.path_id(request, "proposal")
    return web.json_response(await desk(request).accept(principal_of(request), proposal_id))


@routes.post("/v1/proposals/{id}/reject")
async def reject_proposal(request: web.Request) -> web.Response:
    proposal_id = p.path_id(request, "proposal")
    return web.json_response(await desk(request).reject(principal_of(request), proposal_id))
