"""Reading /v1 query strings, path ids and ETags: bounded, typed, 400 naming the parameter."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from lobug import errors, keys
from lobug.api.bodies import read_json_object
from lobug.memory.records import fields

MAX_ID = 2**63 - 1
MAX_ETAG_CHARS = 256


def path_id(request: web.Request, what: str = "memory") -> int:
    """The `{id}` of the route; anything but a positive 64-bit integer names nothing (404)."""
    raw = request.match_info["id"]
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_ID:
        raise errors.not_found(f"no {what} {raw[:40]!r}")
    return int(raw)


def text(request: web.Request, name: str, limit: int) -> str | None:
    raw = request.query.get(name)
    if raw is None:
        return None
    return fields.text(raw, name, limit)


def ident(request: web.Request, name: str, *, required: bool = False) -> str | None:
    raw = request.query.get(name)
    if raw is None:
        if required:
            raise errors.invalid_request(f"query parameter '{name}' is required", field=name)
        return None
    return fields.ident(raw, name)


def writers(request: web.Request) -> dict[str, str | None]:
    """`agent_id`, `run_id`, `actor_id` (who wrote a memory), each None when not given."""
    return fields.writers(request.query)


def integer(request: web.Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise errors.invalid_request(
            f"query parameter '{name}' must be an integer, got {raw[:40]!r}", field=name
        ) from None
    return fields.integer(value, name, lo, hi)


def required_integer(request: web.Request, name: str, lo: int, hi: int) -> int:
    if request.query.get(name) is None:
        raise errors.invalid_request(f"query parameter '{name}' is required", field=name)
    return integer(request, name, 0, lo, hi)


def boolean(request: web.Request, name: str, default: bool = False) -> bool:
    raw = request.query.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no"):
        return False
    raise errors.invalid_request(
        f"query parameter '{name}' must be true or false, got {raw[:40]!r}", field=name
    )


def choice(request: web.Request, name: str, allowed: tuple[str, ...]) -> str | None:
    raw = request.query.get(name)
    return None if raw is None else fields.choice(raw, name, allowed)


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


async def body(request: web.Request) -> dict[str, Any]:
    return await read_json_object(request, request.app[keys.CONFIG].server.max_json_bytes)


def etag_headers(memory: dict[str, Any]) -> dict[str, str]:
    return {"ETag": f'"{memory["etag"]}"'}
