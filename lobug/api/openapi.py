"""lobug/api/openapi.json, generated: the shapes' models plus each route's prose (openapi_paths).

`python -m lobug.api.openapi` writes the file; tests/api/test_openapi_generated.py fails when the
checked-in copy differs from what this builds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from lobug.api.openapi_paths import OPERATIONS, ROUTES, Operation
from lobug.memory.shapes.catalog import Error
from lobug.memory.shapes.schema import REF, component_schemas

DOC_PATH = Path(__file__).with_name("openapi.json")
INFO = {
    "title": "Lo-Bug memory API",
    "version": "0.1.0",
    "description": "The /v1 memory API of the Lo-Bug daemon, for apps, agents and tests "
    "(CONTRACT.md). Every route except this document needs a bearer token from the config "
    "(`[[api.tokens]]`: token, trust, agent) or, when `api.allow_loopback` is on (the "
    "default), a loopback client without an Authorization header, who acts as agent `local` "
    "with full trust. A wrong token is 401 even from loopback. Trust gates stores (full: "
    "private+shared+social, inner: shared+social, familiar: social, public: none); the agent's "
    "category allowlist gates categories. All JSON is UTF-8; unknown request fields are ignored "
    'except inside `filters`. Every error has the body `{"error": {"code", "message", '
    '"details"?}}`.',
    "license": {"name": "MIT", "identifier": "MIT"},
}
BEARER = {
    "type": "http",
    "scheme": "bearer",
    "description": "A token from `[[api.tokens]]` (at least 16 characters). Loopback clients may "
    "omit it when `api.allow_loopback` is on.",
}
# status: (component name, description) of each documented error answer
ERRORS = {
    400: ("BadRequest", "`invalid_json` or `invalid_request` (a field out of its limits names "
          "the field in `details`)."),
    401: ("Unauthorized", "`unauthorized`: no valid bearer token (and not a loopback client "
          "with `api.allow_loopback` on)."),
    403: ("Forbidden", "`forbidden`: a store beyond the token's trust, or a category outside "
          "the agent's allowlist."),
    404: ("NotFound", "`not_found`: no such item, or one the caller may not see."),
    409: ("Conflict", "`conflict`: `If-Match` does not match the current ETag (the memory "
          "changed meanwhile)."),
    413: ("PayloadTooLarge", "`payload_too_large`: body or a text field over its limit."),
    415: ("UnsupportedMediaType", "`unsupported_media_type`: the body must be application/json."),
    503: ("Unavailable", "`unavailable` (database busy, memory disabled) or `storage_full`."),
    500: ("Internal", "`internal`: generic message; the traceback is in the daemon log."),
}  # fmt: skip
WWW_AUTHENTICATE = {
    "description": '`Bearer realm="lobug"` (RFC 6750), with `error="invalid_token"` for a '
    "wrong token.",
    "schema": {"type": "string"},
}
HEADERS = {
    "ETag": {
        "description": "Opaque version of the memory; send it back in `If-Match`.",
        "schema": {"type": "string"},
    },
    "Location": {"schema": {"type": "string"}, "description": "/v1/memories/{id}"},
}
IF_MATCH = {
    "name": "If-Match",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "maxLength": 256},
    "description": "The ETag from a previous read; when the memory changed since, 409 "
    "`conflict` and nothing is written.",
}
# The `{id}` of a path, by the path's first segment after /v1.
PATH_IDS = {
    "memories": ("MemoryId", None),
    "proposals": ("ProposalId", "A proposal id."),
    "entities": ("EntityId", None),
    "sessions": ("SessionPathId", "A session id (`session_id` of its turns)."),
    "devices": ("DeviceId", "A row of the device list (`id`)."),
}
PATH_SCHEMAS = {"SessionPathId": "SessionId"}  # the rest are integer ids


def build() -> dict[str, Any]:
    models: list[type[BaseModel]] = [Error]
    for op in OPERATIONS:
        models += [m for m in (op.body, op.ok[2]) if m is not None]
    paths: dict[str, dict[str, Any]] = {}
    for op in OPERATIONS:
        method, path = ROUTES[op.operation_id]
        item = paths.setdefault(path, {})
        if "{id}" in path:
            name = PATH_IDS[path.split("/")[2]][0]
            item["parameters"] = [{"$ref": f"#/components/parameters/{name}"}]
        item[method] = operation(op)
    return {
        "openapi": "3.1.0",
        "info": INFO,
        "servers": [{"url": "http://localhost:8321", "description": "The daemon's default "
                     "listen port."}],
        "security": [{"bearerAuth": []}],
        "tags": [{"name": tag} for tag in dict.fromkeys(op.tag for op in OPERATIONS)],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearerAuth": BEARER},
            "schemas": component_schemas(list(dict.fromkeys(models))),
            "responses": {name: error_response(status) for status, (name, _) in ERRORS.items()},
            "parameters": {
                name: {"name": "id", "in": "path", "required": True,
                       "schema": ref(PATH_SCHEMAS.get(name, "Id"))}
                | ({"description": text} if text else {})
                for name, text in PATH_IDS.values()
            },
        },
    }  # fmt: skip


def operation(op: Operation) -> dict[str, Any]:
    status, description, model = op.ok
    ok: dict[str, Any] = {
        "description": description,
        "content": {op.media: {"schema": ref(model.__name__) if model else {"type": "object"}}},
    }
    if op.headers:
        ok["headers"] = {name: HEADERS[name] for name in op.headers}
    out: dict[str, Any] = {"operationId": op.operation_id, "summary": op.summary, "tags": [op.tag]}
    parameters = query_parameters(op.params) if op.params else []
    if op.if_match:
        parameters.append(IF_MATCH)
    if parameters:
        out["parameters"] = parameters
    if op.body:
        schema = {"schema": ref(op.body.__name__)}
        out["requestBody"] = {"required": True, "content": {"application/json": schema}}
    out["responses"] = {str(status): ok} | {
        code: {"$ref": f"#/components/responses/{ERRORS[int(code)][0]}"}
        for code in op.errors.split()
    }
    if op.description:
        out["description"] = op.description
    if not op.errors:
        out["security"] = []  # the document itself is public
    return out


def query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """One `in: query` parameter a field of the route's parameter model."""
    schema = component_schemas([model])[model.__name__]
    required = set(schema.get("required", []))
    out = []
    for name, prop in schema["properties"].items():
        prop = dict(prop)
        description = prop.pop("description", None)
        nullable = [s for s in prop.pop("anyOf", []) if s.get("type") != "null"]
        if nullable:
            prop = {**nullable[0], **prop}
        parameter = {"name": name, "in": "query", "required": name in required, "schema": prop}
        if description:
            parameter["description"] = description
        out.append(parameter)
    return out


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def error_response(status: int) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": ERRORS[status][1],
        "content": {"application/json": {"schema": ref("Error")}},
    }
    if status == 401:
        response["headers"] = {"WWW-Authenticate": WWW_AUTHENTICATE}
    return response


def render() -> str:
    return json.dumps(build(), indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    """Write lobug/api/openapi.json (`--check`: exit 1 when it is out of date instead)."""
    text = render()
    if "--check" in sys.argv[1:]:
        current = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else ""
        return 0 if current == text else 1
    DOC_PATH.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
