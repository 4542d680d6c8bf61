"""The /v1 answers about turns, the delta and retrieval (/v1/turns, /v1/query, /v1/context),
for the OpenAPI document (and MCP); descriptions, not builders (see memories.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from lobug.memory.query import QueryResult
from lobug.memory.query.scalars import (
    Id,
    Role,
    SessionId,
    absent,
    enum,
)
from lobug.memory.table import delta


class Turn(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "id": 42,
                    "session_id": "s-1a2b3c4d5e6f7a8b",
                    "device_id": "default",
                    "role": "user",
                    "text": "My name is Alex",
                    "ts": 1750000000.0,
                    "ref": None,
                    "action": "RESPOND",
                }
            ]
        },
    )
    id: Id
    session_id: SessionId
    device_id: str = absent()
    role: Role
    text: str
    ts: float = Field(description="Unix time in seconds (UTC).")
    ref: str | None = absent()
    action: Literal["RESPOND", "IGNORE"] | None = absent()


class ExtractedMemory(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: Id
    content: str
    action: str = Field(
        description="What reconciliation did: added, updated, merged, duplicate, superseded, …"
    )


class TurnCreated(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "turn_id": 42,
                    "extracted": [
                        {"id": 7, "content": "The user's name is Alex.", "action": "added"}
                    ],
                    "session_id": "chat-1",
                    "extraction": "done",
                }
            ]
        },
    )
    turn_id: Id
    extracted: list[ExtractedMemory] = Field(
        description=(
            "Memories the turn's extraction wrote or confirmed (`action`: added, "
            "merged, repeated, superseded, updated), when it finished within the wait; "
            "else empty."
        )
    )
    session_id: SessionId = absent()
    extraction: Literal["done", "pending", "failed", "off"] = absent(
        description=(
            "`done`: extraction finished within the wait (≤ 10 s) and `extracted` holds"
            " its result; `pending`: it needs longer (Ollama down, a backlog) and runs "
            "in the background — query later; `failed`: the job gave up (see `lobug "
            "jobs list`); `off`: nothing to extract (an assistant turn, `auto_extract: "
            "false`, or long-term memory off)."
        ),
    )


class DeltaItem(BaseModel):
    """One memory change the session has not seen yet (seed 001 §1); each is reported once per
    session."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "rev": 12,
                    "event": "created",
                    "memory_id": 7,
                    "category": "personal",
                    "text": "The user's name is Alex",
                    "importance": 0.8,
                    "summary": "+created: [personal] The user's name is Alex (imp=0.8)",
                    "ts": 1750000000.0,
                }
            ]
        },
    )
    rev: Annotated[int, Field(ge=1)]
    event: Annotated[str, enum(delta.EVENTS)]
    memory_id: Id | None
    category: str | None = absent()
    text: str
    importance: float | None = absent()
    summary: str = Field(
        description=(
            "The header bullet, e.g. `+created: [personal] The user's name is Alex (imp=0.8)`."
        )
    )
    ts: float = Field(description="Unix time in seconds (UTC).")


class QueryResponse(BaseModel):
    model_config = ConfigDict(
        extra="allow", json_schema_extra={"examples": [{"results": [], "delta": []}]}
    )
    results: Annotated[list[QueryResult], Field(max_length=100)]
    delta: list[DeltaItem]


class AlwaysKnown(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: Id
    kind: str = absent()
    category: str | None = absent()
    text: str
    store: str = absent()


class PromptSections(BaseModel):
    stable: list[str] = Field(description="Long-term memory, what is always known, notes.")
    turn: list[str] = Field(
        description="This turn's: the delta header, [Relevant memories], procedures, proposals."
    )


class Context(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "session_id": "chat-1",
                    "short_term": [],
                    "memories": [],
                    "base_memory": "",
                    "delta": [],
                    "delta_header": None,
                }
            ]
        },
    )
    session_id: SessionId = absent()
    short_term: list[Turn] = Field(description="The session's working memory, oldest first.")
    memories: Annotated[list[QueryResult], Field(max_length=100)]
    base_memory: str = Field(description="The user's living profile document.")
    delta: list[DeltaItem]
    always: Annotated[list[AlwaysKnown], Field(max_length=100)] = absent(
        description=(
            "Memories of categories with context `all` (seed 001 §5), as in the "
            "prompt's always-known section."
        ),
    )
    delta_header: str | None = absent(
        description="The rendered header (≤ 3 bullets), as put in the prompt."
    )
    sections: PromptSections | None = absent(
        description=(
            "The prompt's memory sections for `q` (default: the session's last user turn), "
            "computed by the chat's own function: `stable` goes in the system message, "
            "`turn` right before the user's words. Null without a text or without memory."
        ),
    )
