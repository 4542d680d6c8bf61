"""lobug/api/openapi.json: valid OpenAPI 3.1, complete for CONTRACT.md, consistent with the code."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from contract import load_schemas
from jsonschema import Draft202012Validator

from lobug import access
from lobug.api.memory_routes import openapi_document
from lobug.chat.service import MAX_ID_CHARS
from lobug.config import ChatConfig
from lobug.memory.table import delta

DOC_PATH = Path(__file__).resolve().parents[2] / "lobug" / "api" / "openapi.json"
METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace")
# Every /v1 route of CONTRACT.md ("Memory API"), method by method.
CONTRACT_ROUTES = {
    ("post", "/v1/turns"),
    ("get", "/v1/context"),
    ("get", "/v1/sessions/{id}/summary"),  # seed 002: an ended session's summary (issue 27)
    ("post", "/v1/memories"),
    ("get", "/v1/memories"),
    ("get", "/v1/memories/{id}"),
    ("patch", "/v1/memories/{id}"),
    ("delete", "/v1/memories/{id}"),
    ("post", "/v1/memories/{id}/restore"),
    ("post", "/v1/memories/{id}/confirm"),  # issue 10: protect a fact (seed 003 confirm_fact)
    ("get", "/v1/memories/{id}/why"),
    ("get", "/v1/memories/{id}/history"),
    ("post", "/v1/query"),
    ("post", "/v1/gc"),
    ("get", "/v1/entities"),
    ("get", "/v1/entities/{id}"),
    ("get", "/v1/timeline"),
    ("get", "/v1/export"),
    ("get", "/v1/stats"),
    ("get", "/v1/openapi.json"),
    # Seed 001 §10: consent proposals for profile fields heard by voice.
    ("get", "/v1/proposals"),
    ("post", "/v1/proposals/{id}/accept"),
    ("post", "/v1/proposals/{id}/reject"),
    # Issue 40: the devices heard on the firmware routes, and pairing (full trust only).
    ("get", "/v1/devices"),
    ("post", "/v1/devices/pair"),
    ("post", "/v1/devices/{id}/trust"),
    ("delete", "/v1/devices/{id}"),
}


@cache
def document() -> dict[str, Any]:
    return json.loads(DOC_PATH.read_text(encoding="utf-8"))


def operations() -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    for path, item in document()["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item, item[method]


def schema_validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator whose `#/components/...` references resolve inside the document."""
    return Draft202012Validator({**schema, "components": document()["components"]})


def component(name: str) -> Draft202012Validator:
    return schema_validator({"$ref": f"#/components/schemas/{name}"})


def walk(node: Any, where: str = "#") -> Iterator[tuple[str, Any]]:
    yield where, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{where}/{index}")


def resolve(pointer: str) -> Any:
    node: Any = document()
    for part in pointer.removeprefix("#/").split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def test_valid_openapi_31() -> None:
    doc = document()
    assert doc["openapi"].startswith("3.1.")
    try:
        from openapi_spec_validator import validate  # type: ignore[import-not-found]
    except ImportError:
        validate = None
    if validate is not None:
        validate(doc)
    else:
        # The official OAS 3.1 meta-schema (structure only), as bundled by schemathesis.
        definitions = pytest.importorskip("schemathesis.specs.openapi.definitions")
        errors = list(Draft202012Validator(definitions.OPENAPI_31).iter_errors(doc))
        assert errors == [], [f"{e.json_path}: {e.message}" for e in errors[:5]]
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)  # each is valid JSON Schema 2020-12


def test_every_reference_resolves_and_every_component_is_used() -> None:
    refs = {
        node["$ref"] for _, node in walk(document()) if isinstance(node, dict) and "$ref" in node
    }
    for ref in refs:
        assert ref.startswith("#/components/"), ref
        resolve(ref)
    for kind in ("schemas", "responses", "parameters"):
        for name in document()["components"][kind]:
            assert f"#/components/{kind}/{name}" in refs, f"unused component {kind}/{name}"


def test_covers_every_contract_route_and_nothing_else() -> None:
    documented = {(method, path) for path, method, _, _ in operations()}
    assert documented == CONTRACT_ROUTES


def test_operations_are_well_formed() -> None:
    ids = [op["operationId"] for _, _, _, op in operations()]
    assert len(ids) == len(set(ids))
    for path, method, item, op in operations():
        params = [*item.get("parameters", []), *op.get("parameters", [])]
        params = [resolve(p["$ref"]) if "$ref" in p else p for p in params]
        in_path = {p["name"] for p in params if p["in"] == "path"}
        assert in_path == set(re.findall(r"{(\w+)}", path)), (method, path)
        assert all(p["required"] for p in params if p["in"] == "path")
        responses = op["responses"]
        assert any(code.startswith("2") for code in responses), (method, path)
        for code, response in responses.items():
            response = resolve(response["$ref"]) if "$ref" in response else response
            content = response.get("content", {})
            assert content, (method, path, code)
            if not code.startswith("2"):
                assert content["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/Error"
                }
        public = op.get("security") == []
        assert public == (path == "/v1/openapi.json")
        if not public:
            assert "401" in responses and "500" in responses, (method, path)
        if "requestBody" in op:
            assert {"400", "413", "415"} <= set(responses), (method, path)
            assert set(op["requestBody"]["content"]) == {"application/json"}


def test_required_fields_are_declared_and_examples_validate() -> None:
    schemas = document()["components"]["schemas"]
    for where, node in walk(document()):
        if isinstance(node, dict) and "required" in node and "properties" in node:
            missing = set(node["required"]) - set(node["properties"])
            assert not missing, (where, missing)
    with_examples = 0
    for name, schema in schemas.items():
        for example in schema.get("examples", []):
            errors = [e.message for e in component(name).iter_errors(example)]
            assert errors == [], (name, errors)
            with_examples += 1
    assert with_examples >= 20


def test_error_body_matches_the_firmware_contract() -> None:
    firmware = load_schemas()["error"]
    ours = document()["components"]["schemas"]["Error"]
    code = ["properties", "error", "properties", "code", "enum"]

    def dig(node: Any) -> Any:
        for key in code:
            node = node[key]
        return node

    assert dig(ours) == dig(firmware)
    assert ours["required"] == firmware["required"]
    body = {"error": {"code": "forbidden", "message": "no"}}
    assert not list(component("Error").iter_errors(body))
    assert list(component("Error").iter_errors({"error": {"code": "teapot", "message": "x"}}))


def test_limits_agree_with_the_code() -> None:
    schemas = document()["components"]["schemas"]
    query = schemas["QueryRequest"]["properties"]
    assert query["top_k"]["maximum"] == 100  # config memory.top_k allows at most 100 as well
    assert query["categories"]["maxItems"] == access.MAX_REQUESTED_CATEGORIES
    assert schemas["Category"]["maxLength"] == access.MAX_CATEGORY_CHARS
    assert schemas["Store"]["enum"] == list(access.STORES)
    assert schemas["SessionId"]["maxLength"] == MAX_ID_CHARS
    turn_text = schemas["TurnCreate"]["properties"]["text"]
    assert turn_text["maxLength"] == ChatConfig().max_text_chars
    assert schemas["DeltaItem"]["properties"]["event"]["enum"] == list(delta.EVENTS)
    patch = document()["paths"]["/v1/memories/{id}"]["patch"]
    assert any(p["name"] == "If-Match" and p["in"] == "header" for p in patch["parameters"])
    assert "409" in patch["responses"]
    delete = document()["paths"]["/v1/memories/{id}"]["delete"]
    assert [p["name"] for p in delete["parameters"]] == ["purge"]
    export = document()["paths"]["/v1/export"]["get"]["responses"]["200"]["content"]
    assert list(export) == ["application/x-ndjson"]
    assert document()["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"


def test_delta_items_from_the_code_fit_the_schema() -> None:
    change = delta.Change(3, 7, "created", "s", {"content": "x", "importance": 0.5}, 1.0)
    assert not list(component("DeltaItem").iter_errors(change.to_dict()))
    anonymous = delta.Change(4, None, "merged", "", {}, 2.0)
    assert not list(component("DeltaItem").iter_errors(anonymous.to_dict()))


def test_the_package_serves_this_file() -> None:
    assert json.loads(openapi_document()) == document()
