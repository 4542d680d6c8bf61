"""Counts chat turns by endpoint and outcome, and times them, where the outcome is known."""

from __future__ import annotations

import json
import time

from aiohttp import web

from lobug import keys
from lobug.api.middleware import Handler
from lobug.metrics.registry import METRICS

TURN_ROUTES = frozenset({"/chat/text", "/chat/audio", "/v1/chat/completions"})


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Outside the error middleware, so refusals and errors are seen with their status."""
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else None
    if route not in TURN_ROUTES or request.method != "POST":
        return await handler(request)
    metrics = request.app[METRICS]
    started = time.perf_counter()
    outcome = "error"
    try:
        response = await handler(request)
        outcome = _outcome(request, response)
        return response
    finally:
        metrics.turns.labels(route, outcome).inc()
        metrics.turn_seconds.labels(route).observe(time.perf_counter() - started)


def _outcome(request: web.Request, response: web.StreamResponse) -> str:
    known = request.get(keys.TURN_OUTCOME)
    if response.status >= 500:
        return known or "error"  # the OpenAI door's 503 for an unreachable LLM is "degraded"
    if response.status >= 400:
        return "rejected"  # the request's own fault (or auth): nothing for the model to do
    if known is not None:
        return known
    # A device route answers its frozen JSON body: what the device was told is the outcome.
    body = response.body if isinstance(response, web.Response) else None
    if isinstance(body, bytes):
        try:
            reply = json.loads(body)
        except ValueError:
            return "ok"
        if isinstance(reply, dict) and reply.get("degraded"):
            return "degraded"
        if isinstance(reply, dict) and reply.get("action") == "IGNORE":
            return "ignored"
    return "ok"
