"""The MCP server over the memory service layer: tools, resources, and our errors as MCP errors.

Built on the SDK's low-level `Server` rather than its decorator API: the tools' input schemas
are the /v1 shapes' own (`schemas.tool_schema`) and the arguments are validated by those models
(`shapes.parse`), so a bad argument fails with the same `invalid_request` body as over HTTP.
The same server serves stdio (`lobug mcp`) and streamable HTTP (`/mcp`); only how the caller's
`Principal` and the services are found differs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from lobug import __version__, errors
from lobug.access import Principal
from lobug.mcp_server import resources
from lobug.mcp_server.tools import BY_NAME, TOOLS, Services, Tool
from lobug.storage.sqlite import StorageBusy, StorageFull

log = logging.getLogger(__name__)

Context = ServerRequestContext[Any, Any]
PrincipalOf = Callable[[Context], Principal]
ServicesOf = Callable[[], Services]
AfterWrite = Callable[[], Awaitable[None]]
INSTRUCTIONS = (
    "Lo-Bug is the user's long-term memory. Call `query` before answering about the user, "
    "`remember` for a durable fact they tell you, `update`/`forget` when they correct or retract "
    "one. Every call is limited to your token's trust level and categories; a refusal comes "
    "back as an error with a `code` (forbidden, not_found, invalid_request, conflict, …)."
)


def build_server(
    services: ServicesOf, principal_of: PrincipalOf, *, after_write: AfterWrite | None = None
) -> Server[Any]:
    """`after_write`: run after a tool stored new text (stdio: make its vector now, as the CLI
    does; the daemon's workers do it themselves)."""

    async def list_tools(ctx: Context, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListToolsResult(tools=[_listed(tool) for tool in TOOLS])

    async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> Any:
        tool = BY_NAME.get(params.name)
        if tool is None:
            known = ", ".join(BY_NAME)
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name[:100]!r} (known: {known})")
        try:
            data = await tool.call(services(), principal_of(ctx), dict(params.arguments or {}))
            if tool.writes_text and after_write is not None:
                await after_write()
        except Exception as exc:  # noqa: BLE001 - every failure becomes our error body
            error = as_api_error(exc, f"tool {tool.name}")
            return types.CallToolResult(
                content=[types.TextContent(text=json.dumps(error.body(), ensure_ascii=False))],
                structured_content=error.body(),
                is_error=True,
            )
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(data, ensure_ascii=False))],
            structured_content=data,
        )

    async def list_resources(ctx: Context, params: types.PaginatedRequestParams | None) -> Any:
        found = await _guarded(resources.listing(services(), principal_of(ctx)), "resources")
        return types.ListResourcesResult(resources=found)

    async def list_templates(ctx: Context, params: types.PaginatedRequestParams | None) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=resources.TEMPLATES)

    async def read_resource(ctx: Context, params: types.ReadResourceRequestParams) -> Any:
        read = resources.read(services(), principal_of(ctx), params.uri)
        return types.ReadResourceResult(contents=[await _guarded(read, params.uri)])

    return Server(
        "lobug",
        version=__version__,
        title="Lo-Bug memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


async def serve_stdio(
    services: Services, principal: Principal, *, after_write: AfterWrite | None = None
) -> None:
    """`lobug mcp`: one desktop agent over stdin/stdout, as one principal, until it closes
    stdin. While serving, stray prints go to stderr (the SDK points fd 1 there), so nothing but
    protocol messages reaches the agent."""
    server = build_server(lambda: services, lambda ctx: principal, after_write=after_write)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def as_api_error(exc: BaseException, what: str) -> errors.ApiError:
    """What the error middleware would answer over HTTP (lobug/api/middleware.py)."""
    if isinstance(exc, errors.ApiError):
        return exc
    if isinstance(exc, StorageFull):
        log.error("storage full in MCP %s: %s", what, exc)
        return errors.storage_full("the disk holding the database is full; free space and retry")
    if isinstance(exc, StorageBusy):
        log.warning("database busy in MCP %s: %s", what, exc)
        return errors.unavailable("the database is busy; retry in a few seconds")
    log.error("unhandled error in MCP %s", what, exc_info=exc)
    return errors.ApiError(500, "internal", "internal error; see the daemon log")


async def _guarded(call: Awaitable[Any], what: str) -> Any:
    """A resource read's ApiError as a JSON-RPC error carrying our body in `data`."""
    try:
        return await call
    except Exception as exc:  # noqa: BLE001 - every failure becomes our error body
        error = as_api_error(exc, f"resource {what[:200]}")
        code = INTERNAL_ERROR if error.status >= 500 else INVALID_PARAMS
        raise MCPError(code, f"{error.code}: {error.message}", data=error.body()) from None


def _listed(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=tool.read_only,
            destructive_hint=tool.destructive if not tool.read_only else None,
            open_world_hint=False,
        ),
    )
