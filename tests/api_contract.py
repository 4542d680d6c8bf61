"""Validate /v1 responses against lobug/api/openapi.json (JSON Schema 2020-12, $refs resolved).

`V1(client)` makes requests through the aiohttp test client and checks every response: the
status must be documented for the operation, and the body (each line, for NDJSON) must match
the documented schema. Tests then assert on what the body says and on rows in the database.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

DOC_PATH = Path(__file__).resolve().parents[1] / "lobug" / "api" / "openapi.json"


@cache
def document() -> dict[str, Any]:
    return json.loads(DOC_PATH.read_text(encoding="utf-8"))


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node and len(node) == 1:
        target: Any = document()
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


@cache
def _templates() -> list[tuple[re.Pattern[str], str]]:
    found = []
    for template in document()["paths"]:
        pattern = re.sub(r"\\{(\w+)\\}", r"[^/]+", re.escape(template))
        found.append((re.compile(f"^{pattern}$"), template))
    return found


def template_of(path: str) -> str:
    path = path.split("?", 1)[0]
    for pattern, template in _templates():
        if pattern.match(path):
            return template
    raise AssertionError(f"{path} is not in the OpenAPI document")


def response_spec(method: str, path: str, status: int) -> dict[str, Any]:
    template = template_of(path)
    operation = document()["paths"][template][method.lower()]
    responses = operation["responses"]
    if str(status) not in responses:
        raise AssertionError(
            f"{method} {template} answered {status}, which the OpenAPI document does not list "
            f"(documented: {', '.join(responses)})"
        )
    return resolve(responses[str(status)])


@cache
def _validator(method: str, template: str, status: int, media: str) -> Draft202012Validator:
    spec = response_spec(method, template, status)
    schema = spec["content"][media]["schema"]
    return Draft202012Validator({**schema, "components": document()["components"]})


def assert_response(method: str, path: str, status: int, media: str, body: Any) -> None:
    """Fail with every violation when body does not match the operation's response schema."""
    spec = response_spec(method, path, status)
    if media not in spec["content"]:
        raise AssertionError(f"{method} {path} {status}: undocumented media type {media}")
    validator = _validator(method, template_of(path), status, media)
    payloads = body if media == "application/x-ndjson" else [body]
    for payload in payloads:
        errors = sorted(validator.iter_errors(payload), key=lambda e: e.json_path)
        if errors:
            listing = "\n  ".join(f"{e.json_path}: {e.message}" for e in errors[:10])
            shown = json.dumps(payload, ensure_ascii=False, default=repr)[:1500]
            raise AssertionError(
                f"{method} {path} {status} breaks the OpenAPI schema:\n  {listing}\n{shown}"
            )


class V1:
    """The test client plus schema validation of every /v1 response."""

    def __init__(self, client: Any, headers: dict[str, str] | None = None) -> None:
        self.client = client
        self.headers = headers or {}

    def as_token(self, token: str) -> V1:
        return V1(self.client, {"Authorization": f"Bearer {token}"})

    async def call(
        self, method: str, path: str, expect: int | None = None, **kwargs: Any
    ) -> tuple[int, Any, Any]:
        headers = {**self.headers, **kwargs.pop("headers", {})}
        resp = await self.client.request(method, path, headers=headers, **kwargs)
        media = resp.content_type
        raw = await resp.read()
        if media == "application/x-ndjson":
            body: Any = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
        else:
            body = json.loads(raw) if raw else None
        assert_response(method, path, resp.status, media, body)
        if expect is not None and resp.status != expect:
            raise AssertionError(f"{method} {path}: expected {expect}, got {resp.status}: {body}")
        return resp.status, body, resp.headers

    async def get(self, path: str, expect: int | None = 200, **kwargs: Any) -> Any:
        return (await self.call("GET", path, expect, **kwargs))[1]

    async def post(self, path: str, body: Any = None, expect: int | None = 200, **kw: Any) -> Any:
        return (await self.call("POST", path, expect, json=body, **kw))[1]

    async def patch(self, path: str, body: Any, expect: int | None = 200, **kw: Any) -> Any:
        return (await self.call("PATCH", path, expect, json=body, **kw))[1]

    async def delete(self, path: str, expect: int | None = 200, **kw: Any) -> Any:
        return (await self.call("DELETE", path, expect, **kw))[1]
