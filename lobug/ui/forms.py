"""Query strings and posted forms as the /v1 service layer's arguments, validated the same way.

A browser sends every field of a form, empty ones as "": here an empty field means "not
given", and the value of a given one goes through `lobug.memory.records.fields`, /v1's rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lobug import errors
from lobug.memory.records import fields as f

STATUS_ALL = "all"
MAX_ETAG_CHARS = 64


def given(values: Mapping[str, Any], name: str) -> str | None:
    raw = values.get(name)
    if not isinstance(raw, str) or not raw.strip():
        return None
    return raw.strip()


def integer(values: Mapping[str, Any], name: str, default: int, lo: int, hi: int) -> int:
    raw = given(values, name)
    if raw is None:
        return default
    try:
        return f.integer(int(raw), name, lo, hi)
    except ValueError:
        raise errors.invalid_request(f"'{name}' must be a whole number", field=name) from None


def list_filters(query: Mapping[str, str]) -> dict[str, Any]:
    """The facts page's filters: `lobug memory list`'s options (kind fact unless chosen)."""
    status = given(query, "status") or "active"
    category = given(query, "category")
    writers = {k: given(query, k) for k in f.WRITER_KEYS}
    return {
        "q": None if (q := given(query, "q")) is None else f.text(q, "q", f.MAX_LIST_QUERY_CHARS),
        "kind": f.choice(given(query, "kind") or "fact", "kind", f.KINDS),
        "layer": None if (v := given(query, "layer")) is None else f.choice(v, "layer", f.LAYERS),
        "status": None if status == STATUS_ALL else f.choice(status, "status", f.STATUSES),
        "category": None if category is None else f.category(category),
        "store": None if (v := given(query, "store")) is None else f.choice(v, "store", f.STORES),
        "writers": f.writers({k: v for k, v in writers.items() if v is not None}),
        "limit": integer(query, "limit", 100, 1, 500),
        "offset": integer(query, "offset", 0, 0, 100_000),
    }


def search_body(query: Mapping[str, str]) -> Any:  # a QueryRequest
    """The search page as a /v1/query body (full results: each with its score breakdown)."""
    body: dict[str, Any] = {"query": given(query, "q") or "", "return": "full",
                            "top_k": integer(query, "k", 10, 1, f.MAX_TOP_K)}  # fmt: skip
    if (category := given(query, "category")) is not None:
        body["categories"] = [category]
    kinds = [k for k in query.getall("kind", []) if k.strip()] if hasattr(query, "getall") else []
    if kinds:
        body["kinds"] = kinds
    if (min_score := given(query, "min_score")) is not None:
        try:
            body["min_score"] = float(min_score)
        except ValueError:
            raise errors.invalid_request(
                "'min_score' must be a number", field="min_score"
            ) from None
    if given(query, "pinned") is not None:
        body["filters"] = {"pinned": True}
    if (agent := given(query, "agent")) is not None:
        body["agent"] = agent
    return f.query_fields(body)


def memory_changes(form: Mapping[str, Any]) -> dict[str, Any]:
    """The edit form as a PATCH body: text, category (empty clears it) and importance."""
    body: dict[str, Any] = {}
    if (content := form.get("content")) is not None:
        body["content"] = content
    if "category" in form:
        body["category"] = given(form, "category")
    if (importance := given(form, "importance")) is not None:
        try:
            body["importance"] = float(importance)
        except ValueError:
            raise errors.invalid_request(
                "'importance' must be a number from 0 to 1", field="importance"
            ) from None
    return f.memory_patch(body)


def revision(form: Mapping[str, Any]) -> str:
    """The ETag the form was rendered with: the edit is refused (409) when it changed since."""
    etag = given(form, "etag")
    if etag is None or len(etag) > MAX_ETAG_CHARS:
        raise errors.invalid_request("the form has no revision; reload the page", field="etag")
    return etag
