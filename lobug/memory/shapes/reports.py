"""The /v1 answers about one memory's story, proposals, entities and upkeep, and the error
body, for the OpenAPI document (and MCP)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lobug.memory.query.scalars import Id, absent
from lobug.memory.shapes.memories import Count

# Every event the history table accepts (its CHECK constraint: storage.migrations, m004).
HistoryEventName = Literal[
    "ADD",
    "UPDATE",
    "MERGE",
    "DELETE",
    "SOFT_DELETE",
    "RESTORE",
    "PURGE",
    "LINK",
    "TTL",
    "ARCHIVE",
    "PROMOTE",
    "DEMOTE",
    "DECAY",
    "HIT",
    "SUPERSEDE",
    "PROPOSE",
    "ACCEPT",
    "REJECT",
    "EXPIRE",
]


class Decision(BaseModel):
    model_config = ConfigDict(extra="allow")
    event: HistoryEventName
    old_value: str | None = absent()
    new_value: str | None = absent()
    actor: str
    meta: dict[str, Any] = absent()
    ts: float = Field(description="Unix time in seconds (UTC).")


class WhyResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "id": 7,
                    "score": 0.71,
                    "terms": {
                        "importance": 0.32,
                        "recency": 0.2,
                        "frequency": 0.09,
                        "confidence": 0.1,
                    },
                    "hits": 3,
                    "age_days": 2.5,
                    "matched_rules": ["identity"],
                    "decisions": [],
                }
            ]
        },
    )
    id: Id
    score: float
    terms: dict[str, float] = Field(
        description=(
            "Each numeric term of the score breakdown: relevance (`rrf_norm`, list "
            "`ranks.*`), the memory's own score (`memory.importance`, `memory.recency`,"
            " `memory.freq`), confidence, relation boost, …"
        )
    )
    weights: dict[str, float] = absent()
    hits: Count = absent()
    age_days: Annotated[float, Field(ge=0)] = absent()
    matched_rules: list[str] = absent()
    decisions: list[Decision] = absent(
        description="The latest history events (retrieval HITs left out), newest first.",
    )
    breakdown: dict[str, Any] = absent(
        description="The score breakdown as computed (same shape as a query result's `explain`).",
    )
    similarity: float | None = absent(
        description=(
            "With `q`: the memory's cosine similarity to the query, what a query's "
            "`threshold` compares (null without a vector for either)."
        ),
    )
    rank: Annotated[int, Field(ge=1)] | None = absent(
        description="With `q`: the memory's rank among the query's candidates."
    )
    query: str | None = absent()
    derived_from: list[Id] = absent(
        description=(
            "The memories it was written from (a weekly reflection's facts and summaries, seed"
            " 003's `source_ids`), those the caller may see; a purged one is gone from it."
        ),
    )


class HistoryEvent(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: Id
    memory_id: Id | None = absent()
    event: HistoryEventName
    old_value: str | None = absent()
    new_value: str | None = absent()
    actor: str
    meta: dict[str, Any] = absent()
    ts: float = Field(description="Unix time in seconds (UTC).")


class History(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "memory_id": 7,
                    "events": [
                        {
                            "id": 1,
                            "memory_id": 7,
                            "event": "ADD",
                            "old_value": None,
                            "new_value": "The user's name is Alex.",
                            "actor": "extract",
                            "meta": {},
                            "ts": 1750000000.0,
                        }
                    ],
                }
            ]
        },
    )
    memory_id: Id
    events: list[HistoryEvent] = Field(description="Newest first.")


class Proposal(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "id": 3,
                    "field": "preferred_name",
                    "value": "Sam",
                    "content": "The user's name is Sam.",
                    "category": "profile",
                    "sensitive": True,
                    "signals": 1,
                    "status": "pending",
                    "turn_ids": [41, 42],
                    "session_id": "s-1",
                    "memory_id": None,
                    "created_at": 1750000000.0,
                    "updated_at": 1750000000.0,
                    "expires_at": 1750604800.0,
                    "decided_at": None,
                    "decided_by": None,
                }
            ]
        },
    )
    id: Id
    field: Literal["preferred_name", "pronouns", "city", "language", "tone", "goals"]
    value: str
    content: str = Field(description="The fact written on acceptance.")
    category: str | None = absent()
    sensitive: bool = Field(description="Needs an explicit yes (else: applied when corroborated).")
    signals: Annotated[int, Field(ge=1)] = Field(description="Separate turns that said it.")
    status: Literal["pending", "accepted", "rejected", "expired"]
    turn_ids: list[Id]
    session_id: str | None = absent()
    memory_id: Id | None = absent()
    created_at: float
    updated_at: float = absent()
    expires_at: float
    decided_at: float | None = absent()
    decided_by: str | None = absent()
    action: Literal["added", "superseded", "merged", "repeated"] = absent(
        description="On acceptance: what reconciliation did with the fact."
    )


class ProposalList(BaseModel):
    model_config = ConfigDict(
        extra="allow", json_schema_extra={"examples": [{"proposals": [], "count": 0}]}
    )
    proposals: Annotated[list[Proposal], Field(max_length=500)]
    count: Count
