"""Pydantic's ValidationError as our 400 `invalid_request`: the field's name, then what is wrong.

The one place pydantic's words become ours (CONTRACT.md error body): a value refused by our own
checks (`scalars.bad`) keeps its message; pydantic's few own errors get ours.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from lobug import errors
from lobug.memory.query.scalars import MAX_ID

M = TypeVar("M", bound=BaseModel)
QUERY = "query parameter "  # how a route's parameters are named in a message


def parse(model: type[M], data: Mapping[str, Any], *, where: str = "", **context: Any) -> M:
    """`data` as `model`, or the first problem as a 400 naming its field (`where` + 'name')."""
    try:
        return model.model_validate(data, context=context or None)
    except ValidationError as exc:
        raise api_error(model, exc, where) from None


def parse_value(annotation: Any, value: Any, field: str) -> Any:
    """One value as `annotation` (e.g. a CLI flag), or a 400 naming `field`."""
    try:
        return TypeAdapter(annotation).validate_python(value)
    except ValidationError as exc:
        raise errors.invalid_request(f"'{field}' {_what(exc.errors()[0])}", field=field) from None


def path_id(raw: str, what: str) -> int:
    """The `{id}` of a route or resource URI; anything but a positive 64-bit integer names
    nothing (404)."""
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_ID:
        raise errors.not_found(f"no {what} {raw[:40]!r}")
    return int(raw)


def api_error(model: type[BaseModel], exc: ValidationError, where: str = "") -> errors.ApiError:
    # An unknown key is reported before the values, as the hand-written checks did.
    error = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")[0]
    path = [str(part) for part in error["loc"] if isinstance(part, str)]  # "tags", not "tags.1"
    ctx = error.get("ctx") or {}
    if ctx.get("field"):  # a model's own check (e.g. importance_min above importance_max)
        path.append(ctx["field"])
    field = ".".join(path)
    if not field:
        return errors.invalid_request(_what(error))
    if error["type"] == "extra_forbidden":
        known = ", ".join(_known(model, path[:-1]))
        what = path[-2].removesuffix("s") if len(path) > 1 else "field"  # "unknown filter"
        message = f"{where}unknown {what} '{path[-1]}' (known: {known})"
        return errors.invalid_request(message, field=field)
    return errors.invalid_request(f"{where}'{field}' {_what(error)}", field=field)


def _what(error: ErrorDetails) -> str:
    ctx = error.get("ctx") or {}
    if error["type"] == "lobug":
        return str(ctx["message"])
    if error["type"] == "missing":
        return "is required"
    if error["type"] in ("model_type", "model_attributes_type", "dict_type"):
        return "must be an object"
    return error["msg"][:1].lower() + error["msg"][1:]


def _known(model: type[BaseModel], path: list[str]) -> list[str]:
    """The field names of the model at `path` (a nested model, possibly `| None`)."""
    for name in path:
        annotation = model.model_fields[name].annotation
        nested = [t for t in (annotation, *typing.get_args(annotation)) if _is_model(t)]
        model = nested[0]
    return list(model.model_fields)


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseModel)
