"""POST /v1/query (seed 001 §6): the body and its `filters`; access checks come after, in the
service."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from lobug.memory.query import MAX_QUERY_CHARS
from lobug.memory.shapes import scalars as s
from lobug.memory.shapes.requests import Flag, Request, Writers
from lobug.memory.shapes.scalars import Category, Importance, QueryKind, Role, SessionId, bad

MAX_CATEGORIES = 64
Timestamp = Annotated[
    float,  # a date-time string is read as Unix seconds
    BeforeValidator(s.timestamp),
    WithJsonSchema(
        {
            "description": "Unix time in seconds, or an ISO 8601 date or date-time (UTC when "
            "no offset).",
            "anyOf": [
                {"type": "number", "minimum": 0, "maximum": s.MAX_TIMESTAMP},
                {"type": "string", "minLength": 1, "maxLength": 40},
            ],
        }
    ),
]
UserId = Annotated[str, Field(min_length=1, max_length=s.MAX_ID_CHARS), BeforeValidator(s.ident())]


def _categories(value: Any) -> Any:
    if not isinstance(value, list) or len(value) > MAX_CATEGORIES:
        raise bad(f"must be a list of at most {MAX_CATEGORIES} category names")
    return value


def _kinds(value: Any) -> Any:
    if not isinstance(value, list) or not 1 <= len(value) <= len(s.QUERY_KINDS):
        raise bad(f"must be a list of 1-{len(s.QUERY_KINDS)} kinds")
    return value


class QueryFilters(Writers):
    """Applied server-side; they narrow, never widen, what the caller may see. Unknown filters
    are refused (400) rather than silently ignored."""

    model_config = ConfigDict(extra="forbid")
    user_id: UserId | None = None
    session_id: SessionId | None = None
    role: Role | None = None
    pinned: Flag | None = None
    importance_min: Importance | None = None
    importance_max: Importance | None = None
    updated_after: Timestamp | None = None
    updated_before: Timestamp | None = None
    agent_id: s.WriterId | None = Field(
        None,
        description="Only memories written by this agent (episodes have no writer: they drop out).",
    )
    run_id: s.WriterId | None = Field(
        None, description="Only memories written in this run of an agent."
    )
    actor_id: s.WriterId | None = Field(
        None, description="Only memories written for or from this person."
    )
    person: s.WriterId | None = Field(
        None,
        description="Only memories about this person: linked to a person entity of this name"
        " or alias, any case (the people index; episodes drop out).",
        examples=["Maria"],
    )

    @model_validator(mode="after")
    def _ranges(self) -> QueryFilters:
        if (self.importance_min or 0) > (1 if self.importance_max is None else self.importance_max):
            raise bad("is above filters.importance_max", field="importance_min")
        after, before = self.updated_after, self.updated_before
        if (after or 0) > (s.MAX_TIMESTAMP if before is None else before):
            raise bad("is after filters.updated_before", field="updated_after")
        return self


class QueryRequest(Request):
    """The single retrieval tool (seed 001 §6). `categories` must lie within the agent's
    allowlist (403 otherwise); without it the agent's whole allowlist applies."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"agent": "planner", "query": "deployment plan context",
                 "categories": ["tasks", "projects"], "top_k": 3, "return": "bullets",
                 "budget_tokens": 512}
            ]
        }
    )  # fmt: skip
    agent: (
        Annotated[str, Field(min_length=1, max_length=64), BeforeValidator(s.ident(64))] | None
    ) = Field(
        None, description="Act as this agent; allowed only when it narrows what the token may read."
    )
    query: Annotated[
        str,
        Field(min_length=1, max_length=MAX_QUERY_CHARS),
        BeforeValidator(s.text(MAX_QUERY_CHARS)),
    ]
    categories: (
        Annotated[list[Category], Field(max_length=MAX_CATEGORIES), BeforeValidator(_categories)]
        | None
    ) = None
    kinds: (
        Annotated[
            list[QueryKind],
            Field(
                min_length=1, max_length=len(s.QUERY_KINDS), json_schema_extra={"uniqueItems": True}
            ),
            BeforeValidator(_kinds),
        ]
        | None
    ) = None
    filters: QueryFilters | None = None
    top_k: Annotated[
        int, Field(ge=1, le=s.MAX_TOP_K), BeforeValidator(s.integer(1, s.MAX_TOP_K))
    ] = 5
    threshold: Annotated[float, Field(ge=0, le=1), BeforeValidator(s.number(0, 1))] | None = Field(
        None,
        description="Seed 001 §6 similarity floor: drop results whose cosine similarity (1 − "
        "cosine distance) between the query's embedding and the result's stored vector is below "
        "it. A result without a stored vector (summaries, archived facts, turns not yet "
        "embedded) has no similarity and is dropped. Needs the embedder: 503 `unavailable` when "
        "it is down (never silently ignored). `explain.similarity` shows the value compared.",
    )
    min_score: (
        Annotated[
            float, Field(ge=0, le=s.MAX_MIN_SCORE), BeforeValidator(s.number(0, s.MAX_MIN_SCORE))
        ]
        | None
    ) = Field(
        None,
        description="Drop results whose final fused score (`score`) is below it; works without "
        "vectors.",
    )
    return_: Annotated[str, s.enum(s.RETURNS), BeforeValidator(s.choice(s.RETURNS))] = Field(
        "bullets", alias="return"
    )
    budget_tokens: (
        Annotated[
            int,
            Field(ge=1, le=s.MAX_BUDGET_TOKENS),
            BeforeValidator(s.integer(1, s.MAX_BUDGET_TOKENS)),
        ]
        | None
    ) = Field(
        None,
        description="Stop adding results once their text would exceed about this many tokens.",
    )
    session_id: SessionId | None = Field(
        None,
        description="Whose `delta` to report (default: filters.session_id; none without either).",
    )

    def fields(self) -> dict[str, Any]:
        """Keyword arguments of Recall.query."""
        out = self.model_dump(by_alias=True)
        out["kinds"] = ("fact",) if self.kinds is None else tuple(dict.fromkeys(self.kinds))
        out["filters"] = {} if self.filters is None else self.filters.model_dump(exclude_none=True)
        return out
