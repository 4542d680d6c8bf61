"""The /v1 answers about entities, the timeline, session summaries, upkeep (gc, stats,
export) and the error body, for the OpenAPI document (and MCP)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from lobug.memory.query.scalars import Id, SessionId, Store, absent, enum
from lobug.memory.shapes.memories import Count, Memory
from lobug.memory.shapes.schema import inline_schema


class GcResult(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"rescored": 120, "promoted": 2, "archived": 1, "soft_deleted": 0, "purged": 0}
            ]
        }
    )
    rescored: Count
    promoted: Count
    archived: Count
    soft_deleted: Count = Field(
        description="Soft-deleted by this pass: unused (TTL) and expired (`expired`) memories."
    )
    expired: Count = absent(
        description="Memories past their `expires_at` (seed 002), soft-deleted by this pass."
    )
    purged: Count
    stranger_turns_pruned: Count = absent(
        description="Strangers' (public-trust) turns past `lifecycle.stranger_turn_days`, deleted."
    )


class Entity(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "id": 3,
                    "canonical_name": "NASA",
                    "type": "organization",
                    "aliases": [],
                    "summary": None,
                    "mention_count": 2,
                    "store": "private",
                    "created_at": 1750000000.0,
                    "last_mentioned": 1750000000.0,
                }
            ]
        },
    )
    id: Id
    canonical_name: str
    type: str
    aliases: list[str]
    summary: str | None = absent()
    mention_count: Count
    store: Store = absent()
    created_at: float = absent(description="Unix time in seconds (UTC).")
    last_mentioned: float = absent(description="Unix time in seconds (UTC).")


class EntityList(BaseModel):
    model_config = ConfigDict(extra="allow", json_schema_extra={"examples": [{"entities": []}]})
    entities: Annotated[list[Entity], Field(max_length=500)]


class EntityDetail(Entity):
    model_config = ConfigDict(json_schema_extra=None)  # Entity's example lacks `memories`

    memories: list[Memory] = Field(description="Linked memories the caller may see.")


class Timeline(BaseModel):
    model_config = ConfigDict(
        extra="allow", json_schema_extra={"examples": [{"anchor": 7, "items": []}]}
    )
    anchor: Id
    items: Annotated[list[Memory], Field(max_length=201)] = Field(
        description=(
            "Chronological: up to `before` older memories, the anchor, up to `after` newer ones."
        )
    )


class SessionSummary(BaseModel):
    """Seed 002's record of an ended session, written once it ends (one LLM call)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "session_id": "s-1a2b3c4d5e6f7a8b",
                    "request": "The user asked for help planning Saturday's hike.",
                    "outcome": "Lo-Bug suggested the ridge trail and a 7 am start.",
                    "decisions": ["The user will take the ridge trail."],
                    "open_items": ["The user still has to check the weather."],
                    "observation_count": 2,
                    "turn_count": 6,
                    "last_turn_id": 42,
                    "created_at": 1750000000.0,
                    "updated_at": 1750000000.0,
                }
            ]
        },
    )
    session_id: SessionId
    request: str = Field(description="What the user wanted in the session.")
    outcome: str = Field(description="What came of it.")
    decisions: list[str] = Field(description="What the user decided or agreed to.")
    open_items: list[str] = Field(description="What was left to do or follow up.")
    observation_count: Count = Field(
        description="Active memories learned in the session (after its consolidation)."
    )
    turn_count: Count = Field(
        description="Conversation turns the summary covers (noise and apologies aside)."
    )
    last_turn_id: Id | None = absent(description="The last turn it covers.")
    created_at: float = Field(description="Unix time in seconds (UTC).")
    updated_at: float = Field(
        description="Unix time in seconds (UTC): a session the user came back to is summarised "
        "again when it ends again."
    )


class MemoryCounts(BaseModel):
    model_config = ConfigDict(extra="allow")
    total: Count = absent()
    by_kind: dict[str, Count] = absent()
    by_status: dict[str, Count] = absent()
    by_layer: dict[str, Count] = absent()
    by_store: dict[str, Count] = absent()
    created_last_day: Count = absent(description="Memories made in the last 24 hours.")
    mean_score: float | None = Field(
        None,
        description="The active memories' mean score as the daily upkeep last stored it (null "
        "before its first pass).",
    )
    mean_age_days: float | None = Field(
        None, description="The active memories' mean age in days (null: none)."
    )
    latest_at: float | None = Field(
        None,
        description="When the newest of these memories was made, Unix time in seconds (UTC;"
        " null: none): whether Lo-Bug is still learning.",
    )


class Stats(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "memories": {"total": 3, "by_kind": {"fact": 3}},
                    "turns": 10,
                    "sessions": 1,
                    "entities": 1,
                    "relations": 0,
                    "jobs": {"pending": 0, "running": 0, "failed": 0},
                }
            ]
        },
    )
    memories: MemoryCounts
    turns: Count
    sessions: Count = absent()
    entities: Count = absent()
    relations: Count = absent()
    jobs: dict[str, Count] = absent()
    delta_rev: Count = absent(description="The user's memory revision (seed 001 §1 delta header).")


class ExportRecord(BaseModel):
    """One line of the export (newline-delimited JSON): `data` holds the row's columns as stored
    (JSON columns stay JSON text), without `user_id`. The first line is `meta` (format, version,
    user_id, exported_at, schema migrations); then sessions, turns, memories, memory_sources,
    base_memory, entities, memory_entities, relations, history — parents first. Vectors, FTS,
    the delta log and jobs are derived and not exported. `lobug memory import FILE` restores it:
    ids are kept in a fresh database, remapped (references rewritten) when taken."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {"type": "memory", "data": {"id": 7, "content": "The user's name is Alex."}}
            ]
        },
    )
    type: Literal[
        "meta",
        "session",
        "turn",
        "memory",
        "memory_source",
        "base_memory",
        "entity",
        "memory_entity",
        "turn_entity",
        "relation",
        "history",
    ]
    data: dict[str, Any]


ERROR_CODES = ("invalid_json", "invalid_request", "unauthorized", "forbidden", "not_found",
               "conflict", "payload_too_large", "unsupported_media_type", "unprocessable",
               "unavailable", "storage_full", "internal")  # fmt: skip


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="allow")
    code: Annotated[str, enum(ERROR_CODES)] = Field(description="Stable machine-readable reason.")
    message: str = Field(min_length=1, description="Human-readable explanation.")
    details: dict[str, Any] = absent(
        description="Optional structured context, e.g. which field or categories were refused.",
    )


class Error(BaseModel):
    """Body of every failed request (the same body as the device endpoints; see
    firmware_contract/error.schema.json). Branch on `error.code`, never on `message`."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {"error": {"code": "forbidden",
                           "message": "agent 'planner' (trust inner, token 'planner') may not "
                           "read category profile (allowed: goals, procedural, projects, tasks)",
                           "details": {"agent": "planner", "categories": ["profile"]}}}
            ]
        },
    )  # fmt: skip
    # Written out in place, as in firmware_contract/error.schema.json.
    error: Annotated[ErrorDetail, WithJsonSchema(inline_schema(ErrorDetail))]
