"""Reading request bodies safely: size checked before reading, JSON parsed strictly."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from aiohttp import web

from lobug import errors
from lobug.storage.sqlite import storable_text

# A JSON escape of a UTF-16 surrogate: only these can put a lone surrogate into a parsed string.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def is_json(content_type: str) -> bool:
    return content_type == "application/json" or content_type.endswith("+json")


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
    if not is_json(content_type):
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
        value = json.loads(text, parse_float=_finite_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise errors.invalid_json(
            f"request body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except RecursionError:
        raise errors.invalid_json("request body is nested too deeply") from None
    except ValueError as exc:
        # Python refuses integers of more than 4,300 digits (int_max_str_digits); our hooks
        # refuse NaN, Infinity and floats that overflow. None of it is a number we can use.
        short = str(exc).split(";")[0][:200]
        raise errors.invalid_json(f"request body has a number out of range: {short}") from None
    if not isinstance(value, dict):
        raise errors.invalid_request(f"expected a JSON object, got {type(value).__name__}")
    if _SURROGATE_ESCAPE.search(text):
        check_unicode(value)
    return value


def check_unicode(value: Any) -> None:
    """400 naming the field when a string (or key) holds a lone UTF-16 surrogate ("\\ud800"):
    it cannot be encoded to UTF-8, so nothing downstream (SQLite, logs, the LLM) can take it."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if not storable_text(item):
                raise _bad_text(path or "body")
        elif isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{path}.{key}" if path else str(key)
                if not storable_text(key):
                    raise _bad_text(child_path.encode("utf-8", "backslashreplace").decode())
                stack.append((child_path, child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(item))


def _bad_text(path: str) -> errors.ApiError:
    return errors.invalid_request(
        f"'{path}' contains a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape); "
        "text must be valid Unicode",
        field=path,
    )


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"{literal[:40]} does not fit in a 64-bit float")
    return value


def _no_constant(literal: str) -> Any:
    raise ValueError(f"{literal} is not a JSON number")


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} bytes"
