"""The /v1 query parameters, one model per route: HTTP reads them from the query string, the
CLI from its flags, so integers and flags are also read from text."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, Field

from lobug.memory.graph.ner import ENTITY_TYPES
from lobug.memory.query import MAX_QUERY_CHARS
from lobug.memory.query import scalars as s
from lobug.memory.query.scalars import Category, Kind, Layer, SessionId, Status, Store, WriterId
from lobug.memory.write.consent import STATUSES as PROPOSAL_STATUSES
from lobug.memory.write.pii import PII_TAGS

PII_FILTERS = ("any", "none", *PII_TAGS)

EVERY = "all"  # /v1/proposals?status=all
MAX_LIMIT = 500


# An integer in [lo, hi] from JSON, a query string or a flag; the bounds once for both uses.
Limit = Annotated[
    int, Field(ge=1, le=MAX_LIMIT), BeforeValidator(s.integer(1, MAX_LIMIT, from_text=True))
]
TopK = Annotated[
    int, Field(ge=1, le=s.MAX_TOP_K), BeforeValidator(s.integer(1, s.MAX_TOP_K, from_text=True))
]
Offset = Annotated[
    int, Field(ge=0, le=100_000), BeforeValidator(s.integer(0, 100_000, from_text=True))
]
Around = Annotated[int, Field(ge=0, le=100), BeforeValidator(s.integer(0, 100, from_text=True))]
QueryText = Annotated[
    str, Field(min_length=1, max_length=MAX_QUERY_CHARS), BeforeValidator(s.text(MAX_QUERY_CHARS))
]
ListQuery = Annotated[
    str,
    Field(min_length=1, max_length=s.MAX_LIST_QUERY_CHARS),
    BeforeValidator(s.text(s.MAX_LIST_QUERY_CHARS)),
]
NameQuery = Annotated[str, Field(min_length=1, max_length=200), BeforeValidator(s.text(200))]
Anchor = Annotated[
    s.IdValue, BeforeValidator(s.integer(1, s.MAX_ID, from_text=True)), s.named("Id")
]
Purge = Annotated[bool, BeforeValidator(s.boolean_text)]
ProposalStatus = Annotated[
    str,
    s.enum((*PROPOSAL_STATUSES, EVERY)),
    BeforeValidator(s.choice((*PROPOSAL_STATUSES, EVERY))),
]


class WriterParams(BaseModel):
    agent_id: WriterId | None = Field(None, description="Only memories written by this agent.")
    run_id: WriterId | None = Field(
        None, description="Only memories written in this run of an agent."
    )
    actor_id: WriterId | None = Field(
        None, description="Only memories written on behalf of this person."
    )

    def writers(self) -> dict[str, str | None]:
        return {key: getattr(self, key) for key in s.WRITER_KEYS}


class ContextParams(BaseModel):
    session_id: SessionId
    q: QueryText | None = Field(
        None, description="Text to retrieve for (default: the session's latest user turn)."
    )
    k: TopK = Field(5, description="How many memories.")


class MemoryListParams(WriterParams):
    q: ListQuery | None = Field(
        None, description="Full-text query (FTS5; LIKE where FTS5 is missing)."
    )
    kind: Kind | None = None
    layer: Layer | None = None
    status: Status = "active"
    category: Category | None = None
    store: Store | None = None
    pii: Literal[PII_FILTERS] | None = Field(  # type: ignore[valid-type]
        None,
        description="Only memories holding personal data (`any`), or this kind of it (`email`, "
        "`phone`, `address`), or none (`none`): what to review before sharing an export.",
    )
    sort: Literal["created", "score"] = Field(
        "created",
        description="`created`: newest first (by text rank with `q`); `score`: by the score the "
        "daily upkeep keeps (importance, recency and use, seed 000), highest first, with memories "
        "made since the last upkeep after the scored ones, newest first.",
    )
    limit: Limit = 50
    offset: Offset = 0


class DeleteParams(BaseModel):
    purge: Purge = Field(
        False,
        description="Remove the memory and every derived row (FTS, vectors, entity links, "
        "relations, delta copies) for good; cannot be undone.",
    )


class WhyParams(BaseModel):
    q: QueryText | None = Field(
        None,
        description="Explain the memory's rank for this query (default: its own score, without "
        "relevance).",
    )


class HistoryParams(BaseModel):
    limit: Limit = 100


class ProposalListParams(BaseModel):
    status: ProposalStatus = Field(
        "pending", description="Which proposals (pending: not yet decided nor expired)."
    )
    limit: Limit = 100


class EntityListParams(BaseModel):
    q: NameQuery | None = Field(None, description="Name or alias.")
    type: Literal[ENTITY_TYPES] | None = Field(  # type: ignore[valid-type]
        None, description="Only entities of this type: `person` is the people index."
    )
    limit: Limit = 50


class TimelineParams(BaseModel):
    anchor: Anchor = Field(description="Memory id to center on.")
    before: Around = 5
    after: Around = 5
