"""What each /v1 operation is, in words: the prose of lobug/api/openapi.json next to its models.

One row a route (operationId, tag, summary); the method and path are its handler's, whose name
is the operationId in snake_case; the shapes are the models'.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp.web import RouteDef
from pydantic import BaseModel

from lobug.api import devices_routes, memory_routes, proposal_routes
from lobug.devices.shapes import Device, DeviceList, PairingWindow, PairRequest, TrustRequest
from lobug.memory.query import QueryRequest
from lobug.memory.shapes import MemoryCreate, MemoryPatch, TurnCreate
from lobug.memory.shapes.catalog import (
    EntityDetail,
    EntityList,
    ExportRecord,
    GcResult,
    SessionSummary,
    Stats,
    Timeline,
)
from lobug.memory.shapes.memories import Deleted, Memory, MemoryList
from lobug.memory.shapes.params import (
    ContextParams,
    DeleteParams,
    EntityListParams,
    HistoryParams,
    MemoryListParams,
    ProposalListParams,
    TimelineParams,
    WhyParams,
)
from lobug.memory.shapes.reports import History, Proposal, ProposalList, WhyResponse
from lobug.memory.shapes.retrieval import Context, QueryResponse, TurnCreated


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.title() for word in rest)


# (method, path) by operationId, from the route tables.
ROUTES = {
    _camel(route.handler.__name__): (route.method.lower(), route.path)
    for table in (memory_routes.routes, proposal_routes.routes, devices_routes.routes)
    for route in table
    if isinstance(route, RouteDef)
}


@dataclass(frozen=True)
class Operation:
    operation_id: str
    tag: str
    summary: str
    ok: tuple[int, str, type[BaseModel] | None]  # status, description, body (None: any object)
    errors: str  # the documented error statuses, e.g. "400 401 403 500 503"
    description: str | None = None
    body: type[BaseModel] | None = None
    params: type[BaseModel] | None = None
    media: str = "application/json"
    headers: tuple[str, ...] = ()  # of the answer: ETag, Location
    if_match: bool = False  # takes an If-Match header


OPERATIONS = (
    Operation(
        "createTurn",
        "conversation",
        "Log a conversation turn (and extract memories from it)",
        description=(
            "Stores the turn (conversation turns belong to the `private` store: a "
            "caller who cannot read it gets 403). With `auto_extract` (default) a user "
            "turn gets the daemon's durable extraction job; the call waits for it up to"
            " 10 s and returns what it extracted. Assistant turns are stored and "
            "embedded; nothing is extracted from them on their own."
        ),
        body=TurnCreate,
        ok=(201, "The stored turn.", TurnCreated),
        errors="400 401 403 413 415 500 503",
    ),
    Operation(
        "getContext",
        "conversation",
        "Everything a prompt needs for a session",
        description=(
            "Short-term turns and the base memory only for callers who may read the "
            "`private` store (else empty); memories within the caller's stores and "
            "categories. The delta is what changed since the session last looked, "
            "filtered the same way, and is then marked seen."
        ),
        params=ContextParams,
        ok=(
            200,
            "Working memory, relevant memories, base memory and the delta since the session "
            "last looked (which is then marked seen).",
            Context,
        ),
        errors="400 401 403 500 503",
    ),
    Operation(
        "getSessionSummary",
        "conversation",
        "What a session was about: request, outcome, decisions, open items",
        description=(
            "Seed 002's session summary, written in the background once the session ends (the "
            "device moves to another session, or it stays idle): one LLM call per ended "
            "session, for the owner's sessions. Made of the conversation, so only callers who "
            "may read the `private` store get it (403). 404 when there is none: the session "
            "is still going, unknown, or its summary still waits for the LLM."
        ),
        ok=(200, "The session's summary.", SessionSummary),
        errors="401 403 404 500 503",
    ),
    Operation(
        "createMemory",
        "memories",
        "Store a memory directly",
        description=(
            "The memory goes through the same validation (writing constraints, 400 with"
            " `details.reason`) and reconciliation as extracted facts: an exact or near"
            " duplicate merges into the known memory (`action: merged`). `store` must "
            "be one the caller's trust reads and `category` one its agent may read "
            "(403). Its vector is made by a background job."
        ),
        body=MemoryCreate,
        ok=(201, "The new memory.", Memory),
        headers=("ETag", "Location"),
        errors="400 401 403 413 415 500 503",
    ),
    Operation(
        "listMemories",
        "memories",
        "List or full-text search memories",
        description=(
            "`category` outside the agent's allowlist is 403; a `store` the trust "
            "cannot read yields an empty list (seed 002 intersects stores). Unknown "
            "parameters are ignored."
        ),
        params=MemoryListParams,
        ok=(
            200,
            "Newest first, or by FTS5 rank with `q`. Only stores and categories the caller may "
            "see.",
            MemoryList,
        ),
        errors="400 401 403 500 503",
    ),
    Operation(
        "getMemory",
        "memories",
        "One memory",
        description=(
            "A memory the caller may not see (store by trust, category by allowlist) is"
            " 404, like one that does not exist."
        ),
        ok=(200, "The memory.", Memory),
        headers=("ETag",),
        errors="400 401 403 404 500 503",
    ),
    Operation(
        "updateMemory",
        "memories",
        "Change a memory",
        description=(
            "New `content` must meet the writing constraints POST /v1/memories applies "
            "for the memory's kind (seed 001 §9: e.g. a fact is one third-person line "
            "of at most 280 characters); it is stored normalised as POST stores it. A "
            'violation is 400 `invalid_request` with `details.field` "content" and '
            "`details.reason` (empty, too_long, multiline, first_person, "
            "addresses_assistant)."
        ),
        body=MemoryPatch,
        if_match=True,
        ok=(200, "The updated memory.", Memory),
        headers=("ETag",),
        errors="400 401 403 404 409 413 415 500 503",
    ),
    Operation(
        "deleteMemory",
        "memories",
        "Soft-delete a memory, or purge it for good",
        params=DeleteParams,
        ok=(200, "Soft-deleted (restorable until `purge_at`) or purged.", Deleted),
        errors="400 401 403 404 500 503",
    ),
    Operation(
        "restoreMemory",
        "memories",
        "Undo a soft delete",
        ok=(200, "The restored (active) memory.", Memory),
        headers=("ETag",),
        errors="400 401 403 404 409 415 500 503",
    ),
    Operation(
        "confirmMemory",
        "memories",
        "Protect a memory for good",
        description=(
            "The user vouches for the memory: confidence 1 and decay_rate 0 from now "
            "on, so forgetting never lowers its rank nor takes it away (seed 003 "
            "confirm_fact). Write access like DELETE and /restore: a memory the caller "
            "may not see is 404. Recorded in the history (UPDATE, `meta.confirmed`) and"
            " in the delta (`updated`). A soft-deleted memory is 409: restore it first."
        ),
        ok=(200, "The confirmed memory (`confidence` 1, `decay_rate` 0).", Memory),
        headers=("ETag",),
        errors="400 401 403 404 409 415 500 503",
    ),
    Operation(
        "explainMemory",
        "memories",
        "Why a memory ranks where it does",
        params=WhyParams,
        ok=(
            200,
            "Score breakdown, hits, age, matched rules and the latest decisions.",
            WhyResponse,
        ),
        errors="400 401 403 404 500 503",
    ),
    Operation(
        "memoryHistory",
        "memories",
        "Audit events of a memory",
        params=HistoryParams,
        ok=(200, "Every write to the memory, newest first.", History),
        errors="400 401 403 404 500 503",
    ),
    Operation(
        "query",
        "retrieval",
        "The single retrieval tool (memory.query)",
        description=(
            "`threshold` is a similarity floor (seed 001 §6) and needs the query's "
            "embedding: without a working embedder it is 503 `unavailable`. `min_score`"
            " floors the final score instead."
        ),
        body=QueryRequest,
        ok=(
            200,
            "Ranked results (at most top_k) within the caller's stores and categories, plus the"
            " session's delta.",
            QueryResponse,
        ),
        errors="400 401 403 413 415 500 503",
    ),
    Operation(
        "collectGarbage",
        "maintenance",
        "Run decay, promotion, TTL soft-delete and purge now",
        description="Needs full trust and every category (403 otherwise).",
        ok=(200, "What the pass changed.", GcResult),
        errors="400 401 403 415 500 503",
    ),
    Operation(
        "listProposals",
        "memories",
        "Profile changes heard by voice, waiting for the user's yes",
        description=(
            "Seed 001 §10: a sensitive profile field (preferred_name, pronouns, city, "
            "language) heard by voice is not written but proposed, for "
            "`memory.consent_days`; a benign one (tone, goals) is applied once "
            "two separate turns said it. Every decision is in the "
            "history (PROPOSE, ACCEPT, REJECT, EXPIRE). Only callers who read the "
            "`private` store and the proposal's category see it."
        ),
        params=ProposalListParams,
        ok=(200, "Newest first.", ProposalList),
        errors="400 401 403 500 503",
    ),
    Operation(
        "acceptProposal",
        "memories",
        "Keep a proposed profile fact",
        description=(
            "Writes the fact like an extracted one: a new name supersedes the old. 404 "
            "for an unknown proposal (or one the caller may not see), 409 when it is "
            "already decided or has expired."
        ),
        ok=(
            200,
            "The accepted proposal, with `memory_id` and `action` (added, superseded, merged, "
            "repeated).",
            Proposal,
        ),
        errors="400 401 403 404 409 415 500 503",
    ),
    Operation(
        "rejectProposal",
        "memories",
        "Drop a proposed profile fact",
        description=(
            "Nothing is written. 404 for an unknown proposal (or one the caller may not"
            " see), 409 when it is already decided or has expired."
        ),
        ok=(200, "The rejected proposal.", Proposal),
        errors="400 401 403 404 409 415 500 503",
    ),
    Operation(
        "listEntities",
        "retrieval",
        "People, places and things the memory knows",
        params=EntityListParams,
        ok=(200, "Matching entities, most mentioned first.", EntityList),
        errors="400 401 403 500 503",
    ),
    Operation(
        "getEntity",
        "retrieval",
        "An entity's profile and linked memories",
        ok=(200, "The entity.", EntityDetail),
        errors="400 401 403 404 500 503",
    ),
    Operation(
        "timeline",
        "retrieval",
        "Memories around an anchor, in time order",
        params=TimelineParams,
        ok=(200, "A chronological window.", Timeline),
        errors="400 401 403 404 500 503",
    ),
    Operation(
        "export",
        "maintenance",
        "Everything for the user, as JSON lines",
        description=(
            "Needs full trust and every category (403 otherwise). Streamed from one "
            "read transaction: a consistent snapshot while the daemon keeps writing."
        ),
        ok=(200, "Newline-delimited JSON: one `ExportRecord` per line, streamed.", ExportRecord),
        media="application/x-ndjson",
        errors="400 401 403 500 503",
    ),
    Operation(
        "stats",
        "maintenance",
        "Counts and sizes",
        ok=(200, "Counters of the memory.", Stats),
        errors="400 401 403 500 503",
    ),
    Operation(
        "listDevices",
        "devices",
        "The devices heard on the firmware routes, paired or not",
        description=(
            "Issue 40: a device with no token is known by its `device_id` and address "
            "together, and is a stranger (`api.unknown_device_trust`) until the owner pairs "
            "it. Devices that send the device token, and loopback, are the owner's without "
            "pairing and are not listed. Needs full trust and every category (403 otherwise)."
        ),
        ok=(200, "The device list and the open pairing window.", DeviceList),
        errors="400 401 403 500 503",
    ),
    Operation(
        "openPairing",
        "devices",
        "Open the pairing window: the next device that talks is the owner's",
        description=(
            "For `seconds` (default 120), the next device with no token that calls a firmware "
            "route is paired at full trust and the window closes. The body may be empty. "
            "Needs full trust and every category (403 otherwise)."
        ),
        body=PairRequest,
        ok=(200, "When the window closes.", PairingWindow),
        errors="400 401 403 413 415 500 503",
    ),
    Operation(
        "trustDevice",
        "devices",
        "Pair a listed device, or confirm it at a new address",
        description=(
            "Gives the row's device id at the row's address `trust` (default full); any other "
            "address of that device id loses its trust (the device moved). The body may be "
            "empty. 404 for an unknown row. Needs full trust and every category."
        ),
        body=TrustRequest,
        ok=(200, "The device, paired.", Device),
        errors="400 401 403 404 413 415 500 503",
    ),
    Operation(
        "forgetDevice",
        "devices",
        "Forget a device: a paired one is a stranger again at once",
        description="404 for an unknown row. Needs full trust and every category.",
        ok=(200, "The device as it was.", Device),
        errors="400 401 403 404 500 503",
    ),
    Operation(
        "openapi",
        "meta",
        "This document",
        ok=(200, "The OpenAPI 3.1 document of /v1.", None),
        errors="",
    ),
)
