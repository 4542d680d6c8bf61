"""The MCP tools: one per /v1 memory operation, parsed by the same shapes, run by the same services.

Each tool takes the arguments an agent sends, validates them with the /v1 route's pydantic model
(`lobug.memory.shapes`), and calls `Records`/`Recall` with the caller's `Principal`, exactly as
`lobug/api/memory_routes.py` does; access rules live in the services, not here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from lobug import errors
from lobug.access import Principal
from lobug.mcp_server.schemas import ID_FIELD, tool_schema
from lobug.memory import Recall, Records
from lobug.memory.query import QueryRequest
from lobug.memory.query.scalars import MAX_ID, IdValue, integer
from lobug.memory.shapes import MemoryCreate, MemoryPatch, parse, parse_value
from lobug.memory.shapes import params as q

MAX_ETAG_CHARS = 256
MAX_IDS = 100  # memories one `get` reads
# A JSON integer in SQLite's range ("7" too, as lenient as before); not `true`, not 2**63.
MemoryId = Annotated[IdValue, BeforeValidator(integer(1, MAX_ID, from_text=True))]
MemoryIds = Annotated[list[MemoryId], Field(min_length=1, max_length=MAX_IDS)]


@dataclass(frozen=True)
class Services:
    """The service layer a tool calls: the daemon's (HTTP) or the CLI's own (stdio)."""

    records: Records
    recall: Recall


Call = Callable[[Services, Principal, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    call: Call
    read_only: bool = True
    destructive: bool = False
    writes_text: bool = False  # a new or changed text: its vector is made after the call


def memory_id(args: dict[str, Any]) -> int:
    """The `id` argument (a /v1 path id), or 400 naming it."""
    if args.get(ID_FIELD) is None:
        raise errors.invalid_request(f"'{ID_FIELD}' is required", field=ID_FIELD)
    return int(parse_value(MemoryId, args[ID_FIELD], ID_FIELD))


def without_id(args: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k not in (ID_FIELD, *names)}


def if_match(args: dict[str, Any]) -> str | None:
    value = args.get("if_match")
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value.strip()) <= MAX_ETAG_CHARS:
        raise errors.invalid_request(
            f"'if_match' must be a memory's etag of 1-{MAX_ETAG_CHARS} characters", field="if_match"
        )
    return value.strip().removeprefix("W/").strip().strip('"')


# -- the calls (memory_routes.py's handlers, with arguments instead of a request) ---------------
async def query(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return await s.recall.query(who, parse(QueryRequest, args))


async def remember(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return await s.records.create(who, parse(MemoryCreate, args).fields())


async def update(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    target, etag = memory_id(args), if_match(args)
    changes = parse(MemoryPatch, without_id(args, "if_match")).fields()
    return await s.records.update(who, target, changes, if_match=etag)


async def forget(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    target = memory_id(args)
    purge = parse(q.DeleteParams, without_id(args)).purge
    return await s.records.delete(who, target, purge=purge)


async def restore(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return await s.records.restore(who, memory_id(args))


async def confirm(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return await s.records.confirm(who, memory_id(args))


async def get(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    """One memory by `id` (as GET /v1/memories/{id}), or several by `ids` (seed 002): those the
    caller may read, and the ids it may not or that do not exist under `missing`."""
    if args.get("ids") is None:
        return await s.records.get(who, memory_id(args))
    if args.get(ID_FIELD) is not None:
        raise errors.invalid_request(f"give '{ID_FIELD}' or 'ids', not both", field="ids")
    wanted = parse_value(MemoryIds, args["ids"], "ids")
    found, missing = [], []
    for target in dict.fromkeys(wanted):
        try:
            found.append(await s.records.get(who, target))
        except errors.ApiError as exc:
            if exc.code != "not_found":
                raise
            missing.append(target)
    return {"memories": found, "missing": missing}


async def listing(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    given = parse(q.MemoryListParams, args)
    return await s.records.list_memories(
        who, **given.model_dump(exclude=set(given.writers())), writers=given.writers()
    )


async def history(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    target = memory_id(args)
    limit = parse(q.HistoryParams, without_id(args)).limit
    return await s.records.history(who, target, limit=limit)


async def entities(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    given = parse(q.EntityListParams, args)
    return await s.records.entities(who, q=given.q, type=given.type, limit=given.limit)


async def entity(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    return await s.records.entity(who, memory_id(args))


async def timeline(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    given = parse(q.TimelineParams, args)
    return await s.records.timeline(who, given.anchor, before=given.before, after=given.after)


async def context(s: Services, who: Principal, args: dict[str, Any]) -> dict[str, Any]:
    given = parse(q.ContextParams, args)
    return await s.recall.context(who, given.session_id, q=given.q, k=given.k)


IF_MATCH = {
    "if_match": {
        "type": "string",
        "maxLength": MAX_ETAG_CHARS,
        "description": "The memory's `etag` as you read it: refuse (409 conflict) instead of "
        "overwriting a change made since.",
    }
}
IDS = {
    ID_FIELD: {"type": "integer", "minimum": 1, "description": "Memory id."},
    "ids": {
        "type": "array",
        "items": {"type": "integer", "minimum": 1},
        "minItems": 1,
        "maxItems": MAX_IDS,
        "description": "Several memory ids instead of `id`.",
    },
}
TOOLS: tuple[Tool, ...] = (
    Tool(
        "query",
        "Search long-term memory (POST /v1/query): the memories most relevant to `query`, "
        "ranked, within your token's stores and categories. Use it before answering anything "
        "about the user.",
        tool_schema(QueryRequest),
        query,
    ),
    Tool(
        "remember",
        "Store a memory (POST /v1/memories): a short self-contained statement about the user. "
        "A near-duplicate of an existing memory updates that one instead (see `action`).",
        tool_schema(MemoryCreate),
        remember,
        read_only=False,
        writes_text=True,
    ),
    Tool(
        "update",
        "Change a memory (PATCH /v1/memories/{id}): only the fields given change.",
        tool_schema(MemoryPatch, memory_id=True, extra=IF_MATCH),
        update,
        read_only=False,
        writes_text=True,
    ),
    Tool(
        "forget",
        "Soft-delete a memory (DELETE /v1/memories/{id}); `restore` undoes it until `purge_at`. "
        "`purge: true` removes it and everything derived from it for good.",
        tool_schema(q.DeleteParams, memory_id=True),
        forget,
        read_only=False,
        destructive=True,
    ),
    Tool(
        "restore",
        "Undo a soft delete or an archive (POST /v1/memories/{id}/restore).",
        tool_schema(memory_id=True),
        restore,
        read_only=False,
        writes_text=True,
    ),
    Tool(
        "confirm",
        "The user vouches for a memory (POST /v1/memories/{id}/confirm): full confidence, "
        "protected from decay.",
        tool_schema(memory_id=True),
        confirm,
        read_only=False,
    ),
    Tool(
        "get",
        "One memory by `id` (GET /v1/memories/{id}), or several by `ids`: those you may read, "
        "and under `missing` the ids that are not there for you.",
        tool_schema(extra=IDS),
        get,
    ),
    Tool(
        "list",
        "List memories newest first, or full-text search them with `q` (GET /v1/memories).",
        tool_schema(q.MemoryListParams),
        listing,
    ),
    Tool(
        "history",
        "A memory's audit events, newest first (GET /v1/memories/{id}/history).",
        tool_schema(q.HistoryParams, memory_id=True),
        history,
    ),
    Tool(
        "entities",
        "The people, places and things the memory knows, most mentioned first (GET "
        "/v1/entities); `type: person` is the people index, `q` matches a name or alias.",
        tool_schema(q.EntityListParams),
        entities,
    ),
    Tool(
        "entity",
        "One entity by `id` with the memories that name it, newest first (GET /v1/entities/{id}).",
        tool_schema(memory_id=True, id_of="Entity"),
        entity,
    ),
    Tool(
        "timeline",
        "The memories made just before and after one (GET /v1/timeline): what else was going "
        "on around `anchor`, oldest first.",
        tool_schema(q.TimelineParams),
        timeline,
    ),
    Tool(
        "context",
        "What a prompt for a conversation would get (GET /v1/context): recent turns, the base "
        "memory, the memories relevant to `q` (default: the session's last user turn) and what "
        "changed in memory since the session last looked.",
        tool_schema(q.ContextParams),
        context,
    ),
)
BY_NAME = {tool.name: tool for tool in TOOLS}
