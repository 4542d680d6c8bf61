"""Issue 38, finding 13: a body whose `Content-Encoding: gzip` is not gzip answered 500 with a
traceback on every route. Now a route that reads the body answers 400 `invalid_request` saying
so, one that does not answers as usual, and nothing is logged as an error."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

BROKEN = {"Content-Encoding": "gzip", "Content-Type": "application/json", "Connection": "close"}
READ_THE_BODY = [
    ("POST", "/chat/text"),
    ("POST", "/context/sensors"),
    ("POST", "/v1/turns"),
    ("POST", "/v1/query"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/mcp"),
]
TAKE_NONE = [("GET", "/health"), ("GET", "/v1/memories"), ("POST", "/nowhere"), ("GET", "/ui/")]


async def test_a_body_that_is_not_its_encoding_is_a_clear_400(
    make_client: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    client = await make_client()
    caplog.set_level(logging.WARNING)
    for method, path in READ_THE_BODY:
        resp = await client.request(method, path, data=b"not gzip at all", headers=BROKEN)
        body = await resp.json()
        assert resp.status == 400, (path, body)
        assert body["error"]["code"] == "invalid_request", (path, body)
        assert "content-encoding: gzip" in body["error"]["message"], (path, body)
    for method, path in TAKE_NONE:
        resp = await client.request(method, path, data=b"not gzip at all", headers=BROKEN)
        assert resp.status < 500, (path, await resp.text())
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
    assert "Traceback" not in caplog.text
    # The daemon answers the next caller normally.
    resp = await client.post("/chat/text", json={"text": "hello"})
    assert resp.status == 200
