"""OpenAI's error shape on the OpenAI door: Lo-Bug's one error body plus `type` and `param`.

Every error body is still built by lobug.api.middleware (and auth's 401s); this only adds the
two fields OpenAI's clients read, so the body is both shapes at once:
`{"error": {"message", "type", "param", "code"}}` (plus Lo-Bug's `details` when there are any).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from lobug.api.middleware import Handler

OPENAI_ROUTES = frozenset({"/v1/chat/completions", "/v1/models", "/v1/models/{model}"})

# Any other status is an `invalid_request_error`, or a `server_error` from 500 on.
_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"}


def openai_error(error: dict[str, Any], status: int) -> dict[str, Any]:
    """Lo-Bug's `error` object with OpenAI's `type` and `param` added."""
    details = error.get("details") or {}
    param = details.get("param", details.get("field")) if isinstance(details, dict) else None
    kind = _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {**error, "type": kind, "param": param}}


@web.middleware
async def openai_error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else request.path
    if (
        route not in OPENAI_ROUTES
        or response.status < 400
        or not isinstance(response, web.Response)
        or response.content_type != "application/json"
        or not isinstance(response.body, bytes)
    ):
        return response
    try:
        body = json.loads(response.body)
    except ValueError:
        return response
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return response
    reshaped = web.json_response(
        openai_error(body["error"], response.status), status=response.status
    )
    for name in ("WWW-Authenticate", "Allow"):
        if name in response.headers:
            reshaped.headers[name] = response.headers[name]
    return reshaped
