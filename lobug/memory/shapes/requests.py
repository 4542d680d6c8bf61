"""The /v1 request bodies (POST /v1/turns, /v1/memories, /v1/query; PATCH a memory).

Unknown top-level fields are ignored (CONTRACT.md: old and new clients must both work);
unknown keys inside `filters` are refused, because a filter silently ignored widens a read.
Each model's `fields()` is the keyword dict the service layer takes.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from lobug.config import ChatConfig
from lobug.memory.query import scalars as s
from lobug.memory.query.scalars import (
    Category,
    Flag,
    Importance,
    Kind,
    Request,
    Role,
    SessionId,
    Store,
    Tags,
    WriterId,
    absent,
    bad,
)

MAX_TEXT_CHARS = ChatConfig().max_text_chars  # the document's bound; the config's is enforced

Content = Annotated[
    str,
    Field(min_length=1, max_length=s.MAX_CONTENT_CHARS),
    BeforeValidator(s.text(s.MAX_CONTENT_CHARS)),
]
PatchStatus = Annotated[str, s.enum(s.PATCH_STATUSES), BeforeValidator(s.choice(s.PATCH_STATUSES))]
Seconds = Annotated[
    float, Field(ge=0, le=s.MAX_TIMESTAMP), BeforeValidator(s.number(0, s.MAX_TIMESTAMP))
]
Ref = Annotated[str, Field(max_length=s.MAX_REF_CHARS), BeforeValidator(s.ident(s.MAX_REF_CHARS))]
Speaker = Annotated[str, Field(max_length=s.MAX_ID_CHARS), BeforeValidator(s.ident())]
# Seed 002: a memory kept until a time, then hidden and soft-deleted by the GC pass. A time
# already past is refused by the service (it knows the clock): 400 `invalid_request`.
ExpiresAt = Annotated[
    float,
    BeforeValidator(s.timestamp),
    WithJsonSchema(
        {
            "description": "Keep the memory until then (Unix seconds, or an ISO 8601 date or "
            "date-time, UTC when no offset); past it the memory is hidden from every read and "
            "the GC pass soft-deletes it. Must be in the future.",
            "anyOf": [
                {"type": "number", "minimum": 0, "maximum": s.MAX_TIMESTAMP},
                {"type": "string", "minLength": 1, "maxLength": 40},
            ],
        }
    ),
]
ExpiresAtMs = Annotated[
    float,
    Field(
        ge=0,
        le=s.MAX_TIMESTAMP * 1000,
        description="Seed 002's name for `expires_at`: Unix time in milliseconds. Give one of "
        "the two.",
    ),
    BeforeValidator(s.number(0, s.MAX_TIMESTAMP * 1000)),
]
EXPIRY_KEYS = ("expires_at", "expires_at_ms")


def expiry_of(model: BaseModel) -> dict[str, float | None]:
    """`expires_at` (seconds) from whichever of `expires_at`/`expires_at_ms` was given (both:
    400); {} when neither was. In a patch, null clears the expiry."""
    given = [key for key in EXPIRY_KEYS if key in model.model_fields_set]
    if len(given) == 2:
        raise bad("must not be given with expires_at: give one of the two", field="expires_at_ms")
    if not given:
        return {}
    value = getattr(model, given[0])
    if value is not None and given[0] == "expires_at_ms":
        value = value / 1000.0
    return {"expires_at": value}


class Writers(Request):
    """Who wrote it (seed 001 §6.1): `agent_id`, `run_id`, `actor_id`, declared here so that
    they come first in both bodies' schemas (each body describes them in its own words)."""

    agent_id: WriterId | None = None
    run_id: WriterId | None = None
    actor_id: WriterId | None = None


class TurnCreate(Writers):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"session_id": "chat-1", "role": "user",
                 "text": "My name is Alex and I work at NASA", "ref": "msg-981"}
            ]
        }
    )  # fmt: skip
    session_id: SessionId
    role: Role
    text: str = Field(
        description="1..chat.max_text_chars (default 4000) characters after trimming.",
        # The bound is the config's (chat.max_text_chars, in the validation context): the
        # document gives the default.
        json_schema_extra={"minLength": 1, "maxLength": MAX_TEXT_CHARS},
    )
    ts: Seconds | None = Field(None, description="When it was said (default: now).")
    ref: Ref | None = Field(
        None, description="Opaque caller id kept with the turn and returned in `sources`."
    )
    speaker: Speaker | None = Field(
        None,
        description="Who said it, by name (a conversation between two people): a question that "
        "names the speaker prefers their turns.",
    )
    auto_extract: Flag = Field(True, description="Extract memories from this turn (user turns).")
    agent_id: WriterId | None = Field(
        None,
        description="The agent posting the turn (default: the bearer token's agent). Validated; "
        "not yet recorded: turns have no writer columns, and memories extracted from the turn "
        "carry no writer.",
    )
    run_id: WriterId | None = Field(
        None, description="The agent's run. Validated; not yet recorded (see `agent_id`)."
    )
    actor_id: WriterId | None = Field(
        None, description="The person speaking. Validated; not yet recorded (see `agent_id`)."
    )

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, value: Any, info: ValidationInfo) -> str:
        limit = (info.context or {}).get("max_text_chars", MAX_TEXT_CHARS)
        return str(s.text(limit)(value))

    def fields(self) -> dict[str, Any]:
        return self.model_dump()


class MemoryCreate(Writers):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"content": "The user prefers tea over coffee.", "category": "preference",
                 "importance": 0.6}
            ]
        }
    )  # fmt: skip
    content: Content
    kind: Kind = "fact"
    category: Category | None = None
    importance: Importance = 0.5
    tags: Tags = []
    store: Store | None = Field(
        None,
        description="Default: the caller's trust's default store. A store the caller cannot "
        "see is 403.",
    )
    pinned: Flag = False
    session_id: SessionId | None = Field(
        None, description="The session the delta header credits the change to."
    )
    expires_at: ExpiresAt | None = Field(
        None,
        description="Keep the memory until then (Unix seconds, or an ISO 8601 date or "
        "date-time, UTC when no offset); past it the memory is hidden from every read and the "
        "GC pass soft-deletes it. Must be in the future. Default: kept for good. A text "
        "already known merges into the memory kept, whose own expiry stays unless it had one.",
    )
    expires_at_ms: ExpiresAtMs | None = None
    agent_id: WriterId | None = Field(
        None,
        description="Who wrote it (seed 001 §6.1): the agent. Default: the bearer token's agent "
        "(`local` for loopback). Below full trust only that agent (another is 403).",
    )
    run_id: WriterId | None = Field(
        None, description="The agent's run (a task, a job) that wrote it."
    )
    actor_id: WriterId | None = Field(
        None,
        description="The person on whose behalf, or from whose words, it was written. Below "
        "full trust not the owner's names (`local`, `cli`, `mcp`, `owner`: 403).",
    )

    @model_validator(mode="after")
    def _one_expiry(self) -> MemoryCreate:
        expiry_of(self)
        return self

    def fields(self) -> dict[str, Any]:
        """Keyword arguments of Records.create (store None: the trust's default)."""
        return {
            **self.model_dump(exclude={"expires_at_ms"}),
            "expires_at": expiry_of(self).get("expires_at"),
        }


class MemoryPatch(BaseModel):
    """Only the fields given change. Send `If-Match` with the memory's ETag to fail with 409
    instead of overwriting a concurrent change."""

    model_config = ConfigDict(
        json_schema_extra={"minProperties": 1, "examples": [{"importance": 0.9, "pinned": True}]}
    )
    # absent() without `| None`: only `category` may be null (it clears the category).
    content: Content = absent()
    category: Category | None = None
    importance: Importance = absent()
    tags: Tags = absent()
    pinned: Flag = absent()
    store: Store = absent()
    status: PatchStatus = absent(description="Use DELETE to soft-delete and /restore to undo it.")
    expires_at: ExpiresAt | None = Field(
        None,
        description="Keep the memory until then (Unix seconds, or an ISO 8601 date or "
        "date-time, UTC when no offset); must be in the future. null: keep it for good.",
    )
    expires_at_ms: ExpiresAtMs | None = None

    @model_validator(mode="after")
    def _something(self) -> MemoryPatch:
        if not self.model_fields_set:
            known = ", ".join(type(self).model_fields)
            raise bad(f"nothing to change; give at least one of {known}")
        expiry_of(self)
        return self

    def fields(self) -> dict[str, Any]:
        """Only the fields given; `category: null` clears the category, `expires_at: null`
        the expiry."""
        given = self.model_dump(include=self.model_fields_set - set(EXPIRY_KEYS))
        return {**given, **expiry_of(self)}
