"""GET /metrics: the Prometheus text format, for loopback or a /v1 bearer token only."""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from lobug import keys
from lobug.access import Unauthorized
from lobug.api.middleware import error_response
from lobug.metrics.registry import METRICS

log = logging.getLogger(__name__)

routes = web.RouteTableDef()


@routes.get("/metrics")
async def metrics(request: web.Request) -> web.Response:
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    registry = request.app[METRICS].registry
    # The exposition reads the database (StateCollector): on a reader thread, off the loop.
    body = await request.app[keys.DB].read(_expose, registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def _expose(_conn: Any, registry: Any) -> bytes:
    return generate_latest(registry)


def _refusal(request: web.Request) -> web.Response | None:
    """The /v1 rule (AccessControl.principal_for): a valid bearer token of any trust, or a
    loopback peer without an Authorization header while `api.allow_loopback` is on. Counts of
    jobs and memories are no content, but they tell a stranger on the LAN how the household
    lives."""
    try:
        request.app[keys.ACCESS].principal_for(request.headers.get("Authorization"), request.remote)
    except Unauthorized as exc:
        response = error_response(exc)
        response.headers["WWW-Authenticate"] = exc.challenge
        return response
    return None
