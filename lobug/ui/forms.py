"""Query strings and posted forms as the /v1 service layer's arguments, validated the same way.

A browser sends every field of a form, empty ones as "": here an empty field means "not
given", and the given ones go through /v1's models (`lobug.memory.shapes`), so its rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lobug import errors
from lobug.memory.query import QueryRequest
from lobug.memory.query.scalars import WRITER_KEYS
from lobug.memory.shapes import MemoryPatch, parse, parse_value
from lobug.memory.shapes.params import EntityListParams, Limit, MemoryListParams, Offset, TopK

STATUS_ALL = "all"
MAX_ETAG_CHARS = 64


def given(values: Mapping[str, Any], name: str) -> str | None:
    raw = values.get(name)
    if not isinstance(raw, str) or not raw.strip():
        return None
    return raw.strip()


def integer(values: Mapping[str, Any], name: str, default: int, bounds: Any) -> int:
    """A whole number of the form within `bounds` (a /v1 type: `Limit`, `TopK`), or `default`."""
    raw = given(values, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise errors.invalid_request(f"'{name}' must be a whole number", field=name) from None
    return int(parse_value(bounds, value, name))


def number(values: Mapping[str, Any], name: str, what: str) -> float | None:
    raw = given(values, name)
    try:
        return None if raw is None else float(raw)
    except ValueError:
        raise errors.invalid_request(f"'{name}' must be {what}", field=name) from None


def list_filters(query: Mapping[str, str]) -> dict[str, Any]:
    """The facts page's filters: `lobug memory list`'s options (kind fact unless chosen)."""
    keys = ("q", "kind", "layer", "status", "category", "store", *WRITER_KEYS)
    body: dict[str, Any] = {k: v for k in keys if (v := given(query, k)) is not None}
    body.setdefault("kind", "fact")
    every = body.get("status") == STATUS_ALL
    if every:
        del body["status"]
    args = parse(MemoryListParams, body)
    chosen = args.model_dump(include={"q", "kind", "layer", "category", "store"})
    return {**chosen, "status": None if every else args.status, "writers": args.writers(),
            "limit": integer(query, "limit", 100, Limit),
            "offset": integer(query, "offset", 0, Offset)}  # fmt: skip


def entity_filters(query: Mapping[str, str]) -> dict[str, Any]:
    """The entities page: a name or alias to look for, and how many."""
    q = given(query, "q")
    args = parse(EntityListParams, {} if q is None else {"q": q})
    return {"q": args.q, "limit": integer(query, "limit", 100, Limit)}


def search_body(query: Mapping[str, str]) -> QueryRequest:
    """The search page as a /v1/query body (full results: each with its score breakdown)."""
    body: dict[str, Any] = {"query": given(query, "q") or "", "return": "full",
                            "top_k": integer(query, "k", 10, TopK)}  # fmt: skip
    if (category := given(query, "category")) is not None:
        body["categories"] = [category]
    kinds = [k for k in query.getall("kind", []) if k.strip()] if hasattr(query, "getall") else []
    if kinds:
        body["kinds"] = kinds
    if (min_score := number(query, "min_score", "a number")) is not None:
        body["min_score"] = min_score
    if given(query, "pinned") is not None:
        body["filters"] = {"pinned": True}
    if (agent := given(query, "agent")) is not None:
        body["agent"] = agent
    return parse(QueryRequest, body)


def memory_changes(form: Mapping[str, Any]) -> dict[str, Any]:
    """The edit form as a PATCH body: text, category (empty clears it) and importance."""
    body: dict[str, Any] = {}
    if (content := form.get("content")) is not None:
        body["content"] = content
    if "category" in form:
        body["category"] = given(form, "category")
    if (importance := number(form, "importance", "a number from 0 to 1")) is not None:
        body["importance"] = importance
    return parse(MemoryPatch, body).fields()


def revision(form: Mapping[str, Any]) -> str:
    """The ETag the form was rendered with: the edit is refused (409) when it changed since."""
    etag = given(form, "etag")
    if etag is None or len(etag) > MAX_ETAG_CHARS:
        raise errors.invalid_request("the form has no revision; reload the page", field="etag")
    return etag
