"""The shapes' validation: our messages and the field's name, never pydantic's words."""

from __future__ import annotations

import pytest

from lobug import errors
from lobug.memory.query import QueryRequest, Reach
from lobug.memory.shapes import QUERY, MemoryCreate, MemoryPatch, TurnCreate, parse
from lobug.memory.shapes.params import MemoryListParams, TimelineParams
from lobug.memory.shapes.schema import component_schemas

CASES = [
    (MemoryCreate, {}, "", "'content' is required", "content"),
    (MemoryCreate, {"content": "x" * 2001}, "", "'content' is 2001 characters; the limit is 2000",
     "content"),
    (MemoryCreate, {"content": "x", "tags": ["ok", "t" * 65]}, "",
     "'tags' is 65 characters; the limit is 64", "tags"),
    (QueryRequest, {"query": "q", "filters": {"colour": 1}}, "", "unknown filter 'colour'",
     "filters.colour"),
    (QueryRequest, {"query": "q", "filters": {"importance_min": 0.9, "importance_max": 0.1}}, "",
     "'filters.importance_min' is above filters.importance_max", "filters.importance_min"),
    (QueryRequest, {"query": "q", "filters": []}, "", "'filters' must be an object", "filters"),
    (MemoryPatch, {"colour": "red"}, "", "nothing to change", None),
    (MemoryPatch, {"content": None}, "", "'content' must be a string", "content"),
    (MemoryListParams, {"limit": "ten"}, QUERY,
     "query parameter 'limit' must be an integer, got 'ten'", "limit"),
    (TimelineParams, {}, QUERY, "query parameter 'anchor' is required", "anchor"),
]  # fmt: skip


@pytest.mark.parametrize("model, data, where, message, field", CASES)
def test_a_bad_value_is_400_in_our_words(
    model: type, data: dict, where: str, message: str, field: str | None
) -> None:
    with pytest.raises(errors.ApiError) as caught:
        parse(model, data, where=where)
    assert (caught.value.status, caught.value.code) == (400, "invalid_request")
    assert caught.value.message.startswith(message), caught.value.message
    assert (caught.value.details or {}).get("field") == field


def test_values_are_cleaned_and_null_means_absent() -> None:
    body = {"content": "  The user likes tea. ", "category": "Food", "tags": ["a", "a"],
            "store": None}  # fmt: skip
    fields = parse(MemoryCreate, body).fields()
    assert (fields["content"], fields["category"], fields["tags"]) == (
        "The user likes tea.", "food", ["a"]
    )  # fmt: skip
    assert fields["store"] is None and fields["kind"] == "fact"
    query = parse(
        QueryRequest,
        {
            "query": "tea",
            "kinds": ["fact", "fact"],
            "return": "full",
            "filters": {"updated_after": "2024-01-01", "role": None},
        },
    )
    assert query.wanted == ("fact",) and query.return_ == "full"
    assert query.filters is not None
    assert query.filters.model_dump(exclude_none=True) == {"updated_after": 1704067200.0}
    assert parse(MemoryPatch, {"category": None}).fields() == {"category": None}


def test_the_text_limit_comes_from_the_config() -> None:
    turn = {"session_id": "s", "role": "user", "text": "x" * 4001}
    with pytest.raises(errors.ApiError):
        parse(TurnCreate, turn)
    assert len(parse(TurnCreate, turn, max_text_chars=5000).text) == 4001


def test_a_body_cannot_set_the_reach() -> None:
    """What a search may see is the door's to set: a body's `reach` is ignored, as any unknown
    top-level field, and never part of the schema or a dump."""
    body = {"query": "q", "reach": {"user_id": "someone", "categories": None}}
    query = parse(QueryRequest, body)
    assert query.reach == Reach()
    assert "reach" not in component_schemas([QueryRequest])["QueryRequest"]["properties"]
    assert "reach" not in query.model_dump(by_alias=True)
