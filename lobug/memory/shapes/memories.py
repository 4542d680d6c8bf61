"""The /v1 answers about memories (one, a list, a deletion), for the OpenAPI document (and MCP).

The service layer builds these answers as dicts; the models describe them (each allows more
keys than it names: new keys are additive), they do not build them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from lobug.memory.query.scalars import (
    Category,
    Id,
    Importance,
    Kind,
    Layer,
    SessionId,
    Status,
    Store,
    Tags,
    WriterId,
    absent,
)

Count = Annotated[int, Field(ge=0)]  # a number of things


class Memory(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "id": 7,
                    "kind": "fact",
                    "content": "The user's name is Alex.",
                    "category": "personal",
                    "layer": "mid",
                    "store": "private",
                    "status": "active",
                    "importance": 0.8,
                    "confidence": 1.0,
                    "hits": 3,
                    "mention_count": 1,
                    "pinned": False,
                    "tags": [],
                    "pii": [],
                    "created_at": 1750000000.0,
                    "updated_at": 1750000000.0,
                    "last_accessed": None,
                    "valid_from": 1750000000.0,
                    "valid_until": None,
                    "purge_at": None,
                    "supersedes": None,
                    "session_id": "s-1a2b3c4d5e6f7a8b",
                    "etag": "54aa1a8902a4c62d",
                }
            ]
        },
    )
    id: Id
    kind: Kind
    content: Annotated[str, Field(min_length=1)]
    category: Category | None
    layer: Layer
    store: Store
    status: Status
    importance: Importance
    confidence: Annotated[float, Field(ge=0, le=1)] = absent()
    decay_rate: Annotated[float, Field(ge=0)] = absent(
        description=(
            "How fast retrievability fades per day; 0 for a confirmed memory (never fades)."
        ),
    )
    hits: Count = absent()
    mention_count: Count = absent()
    pinned: bool
    tags: Tags
    pii: list[str] = absent(description="PII kinds detected in the content (email, phone, …).")
    created_at: float = Field(description="Unix time in seconds (UTC).")
    updated_at: float = Field(description="Unix time in seconds (UTC).")
    last_accessed: float | None = absent(description="Unix time in seconds (UTC).")
    valid_from: float | None = absent(description="Unix time in seconds (UTC).")
    valid_until: float | None = absent(description="Unix time in seconds (UTC).")
    purge_at: float | None = absent(description="When a soft-deleted memory is purged for good.")
    expires_at: float | None = absent(
        description=(
            "Unix time in seconds (UTC) the memory is kept until (seed 002); null: for good."
            " Past it the memory is hidden from every read, and the GC pass soft-deletes it."
        ),
    )
    supersedes: Id | None = absent()
    session_id: SessionId | None = absent()
    agent_id: WriterId | None = absent(
        description=(
            "The agent that wrote it (null: written before writers were recorded, or by"
            " the extractor)."
        ),
    )
    run_id: WriterId | None = absent(description="The agent's run that wrote it.")
    actor_id: WriterId | None = absent(description="The person it was written for or from.")
    etag: str = absent(
        description=(
            "The memory's version (same as the ETag header, without quotes). It changes"
            " when a person or the lifecycle changes the memory (content, category, "
            "importance, tags, pinned, store, status, layer), not when a retrieval "
            "counts a hit."
        ),
    )
    action: Literal["added", "merged", "superseded"] = absent(
        description=(
            "Only in the answer to POST /v1/memories: what reconciliation did "
            "(`merged`: the text was already known, the answer is the memory it merged "
            "into)."
        ),
    )


class MemoryList(BaseModel):
    model_config = ConfigDict(
        extra="allow", json_schema_extra={"examples": [{"memories": [], "count": 0}]}
    )
    memories: Annotated[list[Memory], Field(max_length=500)]
    count: Count = absent(description="Number of items in `memories`.")


class Deleted(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {"id": 7, "status": "soft_deleted", "purge_at": 1752592000.0},
                {"id": 7, "status": "purged", "purge_at": None},
            ]
        },
    )
    id: Id
    status: Literal["soft_deleted", "purged"]
    purge_at: float | None = absent(description="Unix time in seconds (UTC).")
