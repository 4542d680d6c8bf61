"""The memory query every door and the chat prompt use: one request (POST /v1/query's body,
validated by pydantic, which also makes its OpenAPI schema), its filters, how far the search
may reach (the door's, never the caller's), and one result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from lobug.access import STORES, UNCATEGORIZED
from lobug.memory.query import scalars as s
from lobug.memory.query.scalars import (
    Category,
    Flag,
    Id,
    Importance,
    QueryKind,
    Request,
    Role,
    SessionId,
    Store,
    absent,
    bad,
    named,
)

EPISODE = "episode"  # a raw turn, searched in `turns` rather than `memories`
CHARS_PER_TOKEN = 4
MAX_QUERY_CHARS = 2000  # what any door accepts as a query, and what is embedded of it
# The keys of a result as /v1 has always written them, in order.
FULL_KEYS = ("id", "kind", "category", "text", "score", "store", "status", "valid_until",
             "sources", "explain", "memory")  # fmt: skip
BULLET_KEYS = {"id", "kind", "category", "score", "status", "valid_until", "sources"}


class InvalidMemory(ValueError):
    """A memory text the writing constraints reject (seed 001 §9); `reason` names the rule."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or f"memory rejected: {reason}")
        self.reason = reason


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


def _stores(value: Any) -> Any:
    if not isinstance(value, list) or not 1 <= len(value) <= len(STORES):
        raise bad(f"must be a list of 1-{len(STORES)} stores")
    return value


def _kinds(value: Any) -> Any:
    if not isinstance(value, list) or not 1 <= len(value) <= len(s.QUERY_KINDS):
        raise bad(f"must be a list of 1-{len(s.QUERY_KINDS)} kinds")
    return value


class QueryFilters(Request):
    """Applied server-side; they narrow, never widen, what the caller may see. Unknown filters
    are refused (400) rather than silently ignored."""

    model_config = ConfigDict(extra="forbid")
    agent_id: s.WriterId | None = Field(
        default=None,
        description="Only memories written by this agent (episodes have no writer: they drop out).",
    )
    run_id: s.WriterId | None = Field(
        default=None, description="Only memories written in this run of an agent."
    )
    actor_id: s.WriterId | None = Field(
        default=None, description="Only memories written for or from this person."
    )
    user_id: UserId | None = None
    session_id: SessionId | None = None
    role: Role | None = None
    pinned: Flag | None = None
    importance_min: Importance | None = None
    importance_max: Importance | None = None
    updated_after: Timestamp | None = None
    updated_before: Timestamp | None = None
    person: s.WriterId | None = Field(
        default=None,
        description="Only memories and conversation turns about this person: linked to a person"
        " entity of this name or alias, any case (the people index).",
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


@dataclass(frozen=True)
class Reach:
    """What a search may see and how it narrows itself: set by the door (the trust-checked
    `stores`, the allowlisted `categories`, the door's user) or by the search, never by a /v1
    caller. `filters` are the caller's own (the runner puts the request's in)."""

    user_id: str = "default"
    filters: QueryFilters = field(default_factory=QueryFilters)
    stores: tuple[str, ...] = STORES  # memories only: the trust-checked stores
    categories: tuple[str, ...] | None = None  # memories only; None: no category filter
    kinds: tuple[str, ...] | None = None  # memories only
    # Archived memories stay findable (they only leave the prompt's default set); a
    # soft-deleted one never is by a query (search.runner.HIDDEN_STATUSES).
    statuses: tuple[str, ...] = ("active", "archived")  # memories only
    # Memories only: False leaves out facts a newer one replaced (seed 003). True here, the
    # whole table, for the searches that must see history (the judge, `why`); /v1/query sets
    # it from the request's `include_superseded` (`records.recall.reach_of`).
    superseded: bool = True
    layer: str | None = None  # memories only: mid | long
    exclude_session: str | None = None
    # With exclude_session: rows of that session created before this time still count (the
    # conversation that taught them has left the working memory). None: exclude them all.
    exclude_session_since: float | None = None
    # [start, end): said in this period — turns by ts, memories by the turns they came from
    # (their creation time when they have none): what "last spring" in a question selects.
    said_in: tuple[float, float] | None = None
    speaker: str | None = None  # turns only: said by this person (turns.speaker)
    live_at: float | None = None  # memories only: those expired at this time are left out
    # Turns only: of the owner's sessions (full trust): the owner's prompt shows their words as
    # "the user said"; a stranger's must not speak there as the owner (issue 25, issue 39).
    owner_turns: bool = False


def _reach(value: Any) -> Reach:
    """Only code sets a request's reach: whatever a body says under that name is ignored, as
    any unknown top-level field is."""
    return value if isinstance(value, Reach) else Reach()


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
        default=None,
        description="Act as this agent; allowed only when it narrows what the token may read.",
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
    stores: (
        Annotated[
            list[Store],
            Field(min_length=1, max_length=len(STORES), json_schema_extra={"uniqueItems": True}),
            BeforeValidator(_stores),
        ]
        | None
    ) = Field(
        default=None,
        description="Search only these stores (seed 002: intersected with those your trust "
        "reads). Naming a store your trust may not read is 403 `forbidden`, as a write to it "
        "is. Default: every store your trust reads.",
    )
    include_superseded: Flag = Field(
        default=False,
        description="Also return facts a newer statement replaced (their `valid_until` set; "
        "they rank after the current value). Default: current facts only (seed 003).",
    )
    filters: QueryFilters | None = None
    top_k: Annotated[
        int, Field(ge=1, le=s.MAX_TOP_K), BeforeValidator(s.integer(1, s.MAX_TOP_K))
    ] = 5
    threshold: Annotated[float, Field(ge=0, le=1), BeforeValidator(s.number(0, 1))] | None = Field(
        default=None,
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
        default=None,
        description="Drop results whose final fused score (`score`) is below it; works without "
        "vectors.",
    )
    return_: Annotated[str, s.enum(s.RETURNS), BeforeValidator(s.choice(s.RETURNS))] = Field(
        default="bullets", alias="return"
    )
    budget_tokens: (
        Annotated[
            int,
            Field(ge=1, le=s.MAX_BUDGET_TOKENS),
            BeforeValidator(s.integer(1, s.MAX_BUDGET_TOKENS)),
        ]
        | None
    ) = Field(
        default=None,
        description="Stop adding results once their text would exceed about this many tokens.",
    )
    session_id: SessionId | None = Field(
        default=None,
        description="Whose `delta` to report (default: filters.session_id; none without either).",
    )
    reach: SkipJsonSchema[Annotated[Reach, BeforeValidator(_reach)]] = Field(
        default_factory=Reach, exclude=True
    )

    @property
    def wanted(self) -> tuple[str, ...]:
        """The kinds to search, each once (default: facts)."""
        return ("fact",) if self.kinds is None else tuple(dict.fromkeys(self.kinds))


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)  # the document lists it as optional, not as defaulted


class Source(BaseModel):
    model_config = ConfigDict(extra="allow")
    turn_id: Id
    ref: str | None = absent()


class QueryResult(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "examples": [
                {
                    "id": 7,
                    "kind": "fact",
                    "category": "personal",
                    "text": "[personal] The user's name is Alex.",
                    "score": 0.82,
                    "sources": [{"turn_id": 42, "ref": "msg-981"}],
                }
            ]
        },
    )
    id: Id = Field(description="Memory id, or turn id for kind `episode`.")
    kind: QueryKind
    category: str | None
    text: str = Field(description="`[category] content` for bullets; the content for full.")
    score: float
    status: Literal["active", "archived"] = Field(
        default="active",
        json_schema_extra=_no_default,
        description=(
            "An archived memory is out of the prompt's default set but still found here"
            " (a turn is always active)."
        ),
    )
    valid_until: float | None = Field(
        default=None,
        description=(
            "Set when a newer statement replaced this fact: only with `include_superseded`"
            " (it then ranks after the current value)."
        ),
    )
    sources: list[Source] = Field(description="The turns this result came from.")
    memory: Annotated[dict[str, Any], named("Memory")] = absent(
        description="With `return: full` only."
    )
    store: Store = Field(
        default="private", description="With `return: full`.", json_schema_extra=_no_default
    )
    explain: dict[str, Any] = Field(
        default_factory=dict,
        json_schema_extra=_no_default,
        description=(
            "With `return: full`: the score breakdown (the same terms as /why), and "
            "`similarity`: the result's cosine similarity to the query (null without a "
            "stored vector or without the query's vector), what `threshold` is compared"
            " with."
        ),
    )

    def dump(self, mode: str) -> dict[str, Any]:
        """The /v1 answer: full, every detail (and `memory` when attached); bullets,
        `[category] text` and the essentials."""
        if mode == "full":
            data = self.model_dump()
            return {key: data[key] for key in FULL_KEYS if key != "memory" or self.memory}
        label = EPISODE if self.kind == EPISODE else self.category or UNCATEGORIZED
        return {**self.model_dump(include=BULLET_KEYS), "text": f"[{label}] {self.text}"}


def tokens_of(text: str) -> int:
    """The budget's cost of a text: ~4 characters per token, at least one."""
    return max(1, -(-len(text) // CHARS_PER_TOKEN))


def cut_to_tokens(text: str, max_tokens: int) -> str:
    """`text` as it is when it fits `max_tokens` (`tokens_of`), else cut at a word with " …"."""
    if tokens_of(text) <= max_tokens:
        return text
    words = text.split()
    while words and tokens_of(" ".join(words) + " …") > max_tokens:
        words.pop()
    return " ".join(words) + " …"
