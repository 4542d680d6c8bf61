"""Server-sent events as OpenAI streams them: `data: {json}` blocks, ended by `data: [DONE]`."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

DONE = b"data: [DONE]\n\n"


async def open_stream(request: web.Request, headers: dict[str, str]) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            "X-Accel-Buffering": "no",  # a reverse proxy must not hold the first sentence back
            **headers,
        }
    )
    await response.prepare(request)
    return response


def event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"
