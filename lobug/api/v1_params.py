"""Reading /v1 requests: query strings and bodies through the shapes' models, path ids, ETags."""

from __future__ import annotations

from typing import Any, TypeVar

from aiohttp import web
from pydantic import BaseModel

from lobug import errors, keys
from lobug.api.bodies import read_json_object
from lobug.memory import shapes
from lobug.memory.query.scalars import SessionIdValue
from lobug.memory.shapes import QUERY, parse, parse_value

M = TypeVar("M", bound=BaseModel)
MAX_ETAG_CHARS = 256


def path_id(request: web.Request, what: str = "memory") -> int:
    return shapes.path_id(request.match_info["id"], what)


def path_session(request: web.Request) -> str:
    """The `{id}` of a /v1/sessions route: a session id; one no session could have is 404."""
    raw = request.match_info["id"]
    try:
        return str(parse_value(SessionIdValue, raw, "id"))
    except errors.ApiError:
        raise errors.not_found(f"no session {raw[:40]!r}") from None


def query(request: web.Request, model: type[M]) -> M:
    """The route's query parameters (the first of a repeated one), 400 naming a bad one."""
    given = {name: request.query[name] for name in model.model_fields if name in request.query}
    return parse(model, given, where=QUERY)


async def body(request: web.Request, model: type[M], **context: Any) -> M:
    raw = await read_json_object(request, request.app[keys.CONFIG].server.max_json_bytes)
    return parse(model, raw, **context)


def if_match(request: web.Request) -> str | None:
    """The ETag in If-Match (quotes and a weak `W/` prefix tolerated), or None."""
    raw = request.headers.get("If-Match")
    if raw is None:
        return None
    if len(raw) > MAX_ETAG_CHARS:
        raise errors.invalid_request("If-Match is too long", field="If-Match")
    value = raw.strip().removeprefix("W/").strip().strip('"')
    if not value:
        raise errors.invalid_request("If-Match is empty", field="If-Match")
    return value


def etag_headers(memory: dict[str, Any]) -> dict[str, str]:
    return {"ETag": f'"{memory["etag"]}"'}
