"""The firmware contract schemas are valid, complete, and agree with their example payloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from contract import (
    CONTRACT_DIR,
    EXAMPLES_DIR,
    SCHEMA_SUFFIX,
    assert_error,
    assert_valid,
    load_schemas,
    validation_errors,
)
from jsonschema import Draft202012Validator

SCHEMA_PATHS = sorted(CONTRACT_DIR.glob(f"*{SCHEMA_SUFFIX}"))
VALID_EXAMPLES = sorted(EXAMPLES_DIR.glob("*.json"))
INVALID_EXAMPLES = sorted((EXAMPLES_DIR / "invalid").glob("*.json"))

# The device endpoints of CONTRACT.md: one request and one response schema each, plus errors.
EXPECTED_STEMS = {
    "chat_text.request",
    "chat_text.response",
    "chat_audio.request",
    "chat_audio.response",
    "context_sensors.request",
    "context_sensors.response",
    "health.response",
    "error",
}


def example_stem(path: Path) -> str:
    """`chat_text.response.degraded.json` -> `chat_text.response` (the schema it is checked by)."""
    name = path.name.removesuffix(".json")
    matches = [stem for stem in load_schemas() if name.startswith(f"{stem}.")]
    assert len(matches) == 1, f"{path.name}: name selects {matches or 'no'} schema"
    return matches[0]


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def ids(paths: list[Path]) -> list[str]:
    return [path.name for path in paths]


def test_every_endpoint_has_its_schemas() -> None:
    assert set(load_schemas()) == EXPECTED_STEMS


@pytest.mark.parametrize("path", SCHEMA_PATHS, ids=ids(SCHEMA_PATHS))
def test_schema_is_valid_draft_2020_12(path: Path) -> None:
    schema = load(path)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://lobug.local/firmware_contract/{path.name}"
    assert schema["title"] and schema["description"]


@pytest.mark.parametrize("path", VALID_EXAMPLES, ids=ids(VALID_EXAMPLES))
def test_example_validates(path: Path) -> None:
    assert_valid(example_stem(path), load(path))


@pytest.mark.parametrize("path", INVALID_EXAMPLES, ids=ids(INVALID_EXAMPLES))
def test_invalid_example_fails(path: Path) -> None:
    assert validation_errors(example_stem(path), load(path)), f"{path.name} should not validate"


def test_every_schema_has_valid_and_invalid_examples() -> None:
    valid = {example_stem(path) for path in VALID_EXAMPLES}
    invalid = {example_stem(path) for path in INVALID_EXAMPLES}
    assert set(load_schemas()) - valid == set(), "schemas without a valid example"
    assert set(load_schemas()) - invalid == set(), "schemas without an invalid example"


def test_assert_valid_lists_every_violation() -> None:
    body = {"response": 7, "action": "SPEAK", "session_id": "s-1", "turn_id": 0}
    with pytest.raises(AssertionError) as caught:
        assert_valid("chat_text.response", body)
    message = str(caught.value)
    assert "$.response" in message and "$.action" in message and "$.turn_id" in message


def test_assert_valid_rejects_unknown_schema() -> None:
    with pytest.raises(KeyError):
        assert_valid("chat_video.response", {})


def test_assert_error_accepts_contract_body_and_matching_code() -> None:
    body = load(EXAMPLES_DIR / "error.payload_too_large.json")
    assert_error(body)
    assert_error(body, "payload_too_large")
    with pytest.raises(AssertionError, match="expected error code 'not_found'"):
        assert_error(body, "not_found")


def test_assert_error_rejects_unknown_code() -> None:
    with pytest.raises(AssertionError, match="teapot"):
        assert_error({"error": {"code": "teapot", "message": "short and stout"}})


def test_assert_error_rejects_non_error_body() -> None:
    with pytest.raises(AssertionError):
        assert_error({"status": "ok"})


def test_error_codes_match_the_api_error_helpers() -> None:
    """Every code lobug.errors can raise is one the firmware knows."""
    errors = pytest.importorskip("lobug.errors")
    codes = set(load_schemas()["error"]["properties"]["error"]["properties"]["code"]["enum"])
    raised = set()
    for name in dir(errors):
        helper = getattr(errors, name)
        if callable(helper) and name.islower() and not name.startswith("_"):
            try:
                result = helper("x")
            except TypeError:
                continue
            if isinstance(result, errors.ApiError):
                raised.add(result.code)
    assert raised, "no ApiError helpers found in lobug.errors"
    assert raised <= codes
