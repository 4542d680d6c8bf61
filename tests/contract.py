"""Validate payloads against the frozen firmware contract schemas in firmware_contract/."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

CONTRACT_DIR = Path(__file__).resolve().parents[1] / "firmware_contract"
EXAMPLES_DIR = CONTRACT_DIR / "examples"
SCHEMA_SUFFIX = ".schema.json"


def schema_stem(path: Path) -> str:
    """`chat_text.response.schema.json` -> `chat_text.response`."""
    return path.name.removesuffix(SCHEMA_SUFFIX)


@cache
def load_schemas() -> dict[str, dict[str, Any]]:
    """Every schema in the folder by stem, each checked against the draft 2020-12 metaschema."""
    schemas: dict[str, dict[str, Any]] = {}
    for path in sorted(CONTRACT_DIR.glob(f"*{SCHEMA_SUFFIX}")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        Draft202012Validator.check_schema(schema)
        schemas[schema_stem(path)] = schema
    if not schemas:
        raise FileNotFoundError(f"no *{SCHEMA_SUFFIX} files in {CONTRACT_DIR}")
    return schemas


@cache
def validator(stem: str) -> Draft202012Validator:
    """The validator for one schema, e.g. `validator("chat_text.response")`."""
    schemas = load_schemas()
    if stem not in schemas:
        raise KeyError(f"no schema {stem!r} in {CONTRACT_DIR}; known: {sorted(schemas)}")
    return Draft202012Validator(schemas[stem])


def validation_errors(stem: str, payload: Any) -> list[str]:
    """One line per violation, `<json path>: <message>`, in a stable order."""
    errors = sorted(validator(stem).iter_errors(payload), key=lambda e: (e.json_path, e.message))
    return [f"{error.json_path}: {error.message}" for error in errors]


def assert_valid(schema_stem: str, payload: Any) -> None:
    """Fail with every violation listed when `payload` breaks the named schema."""
    errors = validation_errors(schema_stem, payload)
    if errors:
        listing = "\n  ".join(errors)
        raise AssertionError(
            f"payload breaks firmware_contract/{schema_stem}{SCHEMA_SUFFIX}:\n  {listing}\n"
            f"payload: {json.dumps(payload, ensure_ascii=False, default=repr)[:2000]}"
        )


def assert_error(payload: Any, code: str | None = None) -> None:
    """Fail unless `payload` is a contract error body (and, when given, carries `code`)."""
    assert_valid("error", payload)
    if code is not None:
        actual = payload["error"]["code"]
        if actual != code:
            raise AssertionError(
                f"expected error code {code!r}, got {actual!r}: {payload['error']['message']!r}"
            )
