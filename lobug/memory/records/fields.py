"""The old function-per-field checks, now thin calls into `lobug.memory.shapes` (the one
definition of every /v1 limit). Kept for lobug/ui until it calls the shapes' models directly;
then this module goes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator

from lobug.memory.query import QueryRequest
from lobug.memory.query import scalars as s
from lobug.memory.query.scalars import (  # noqa: F401  (the constants lobug/ui reads)
    KINDS,
    LAYERS,
    MAX_CONTENT_CHARS,
    MAX_LIST_QUERY_CHARS,
    MAX_TOP_K,
    QUERY_KINDS,
    STATUSES,
    STORES,
    WRITER_KEYS,
    CategoryValue,
)
from lobug.memory.shapes import MemoryPatch, parse, parse_value
from lobug.memory.shapes.params import WriterParams


def text(value: Any, field: str, limit: int) -> str:
    return str(parse_value(Annotated[str, BeforeValidator(s.text(limit))], value, field))


def ident(value: Any, field: str) -> str:
    return str(parse_value(s.SessionIdValue, value, field))


def category(value: Any, field: str = "category") -> str:
    return str(parse_value(CategoryValue, value, field))


def choice(value: Any, field: str, allowed: tuple[str, ...]) -> str:
    return str(parse_value(Annotated[str, BeforeValidator(s.choice(allowed))], value, field))


def integer(value: Any, field: str, lo: int, hi: int) -> int:
    return int(parse_value(Annotated[int, BeforeValidator(s.integer(lo, hi))], value, field))


def writers(body: Mapping[str, Any]) -> dict[str, str | None]:
    given = {key: body[key] for key in WRITER_KEYS if body.get(key) is not None}
    return parse(WriterParams, given).writers()


def memory_patch(body: Mapping[str, Any]) -> dict[str, Any]:
    return parse(MemoryPatch, body).fields()


def query_fields(body: Mapping[str, Any]) -> QueryRequest:
    return parse(QueryRequest, body)
