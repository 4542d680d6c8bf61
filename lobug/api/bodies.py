"""Reading request bodies safely: size checked before reading, JSON parsed strictly."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from lobug import errors

JSON_TYPES = ("application/json",)


async def read_limited(request: web.Request, limit: int, what: str = "request body") -> bytes:
    """The body; 413 from Content-Length before reading, or as soon as it overflows."""
    if request.content_length is not None and request.content_length > limit:
        raise errors.payload_too_large(
            f"{what} is {_size(request.content_length)}; the limit is {_size(limit)}"
        )
    chunks, total = [], 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        total += len(chunk)
        if total > limit:
            raise errors.payload_too_large(f"{what} is larger than the limit of {_size(limit)}")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json_object(request: web.Request, limit: int) -> dict[str, Any]:
    content_type = request.content_type
    if content_type not in JSON_TYPES and not content_type.endswith("+json"):
        raise errors.unsupported_media_type(
            f"expected Content-Type application/json, got {content_type or 'none'}"
        )
    body = await read_limited(request, limit)
    if not body.strip():
        raise errors.invalid_json("request body is empty; expected a JSON object")
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise errors.invalid_json("request body is not valid UTF-8") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise errors.invalid_json(
            f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise errors.invalid_json("request body is nested too deeply") from None
    if not isinstance(value, dict):
        raise errors.invalid_request(f"expected a JSON object, got {type(value).__name__}")
    return value


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} bytes"
