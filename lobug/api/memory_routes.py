"""The /v1 memory API (CONTRACT.md, lobug/api/openapi.json): parse, call the service, JSON.

No logic lives here: access control, limits and every rule are in `lobug.memory.records.service*`,
which the CLI (`lobug memory …`) calls the same way.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from aiohttp import web

from lobug import keys
from lobug.api import v1_params as p
from lobug.api.auth import principal_of
from lobug.memory.records import fields as f

routes = web.RouteTableDef()
NDJSON = "application/x-ndjson"


@cache
def openapi_document() -> bytes:
    """lobug/api/openapi.json as shipped in the package (read once)."""
    return resources.files("lobug.api").joinpath("openapi.json").read_bytes()


@routes.get("/v1/openapi.json")
async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=openapi_document(), content_type="application/json")


# -- conversation ------------------------------------------------------------------------------
@routes.post("/v1/turns")
async def create_turn(request: web.Request) -> web.Response:
    recall = request.app[keys.RECALL]
    fields = f.turn_create(await p.body(request), max_text_chars=recall.max_text_chars)
    created = await recall.add_turn(principal_of(request), fields)
    return web.json_response(created, status=201)


@routes.get("/v1/context")
async def get_context(request: web.Request) -> web.Response:
    session_id = p.ident(request, "session_id", required=True)
    assert session_id is not None
    q = p.text(request, "q", f.MAX_QUERY_CHARS)
    k = p.integer(request, "k", 5, 1, f.MAX_TOP_K)
    context = await request.app[keys.RECALL].context(principal_of(request), session_id, q=q, k=k)
    return web.json_response(context)


# -- memories ----------------------------------------------------------------------------------
@routes.post("/v1/memories")
async def create_memory(request: web.Request) -> web.Response:
    fields = f.memory_create(await p.body(request))
    memory = await request.app[keys.RECORDS].create(principal_of(request), fields)
    headers = {**p.etag_headers(memory), "Location": f"/v1/memories/{memory['id']}"}
    return web.json_response(memory, status=201, headers=headers)


@routes.get("/v1/memories")
async def list_memories(request: web.Request) -> web.Response:
    category = request.query.get("category")
    listing = await request.app[keys.RECORDS].list_memories(
        principal_of(request),
        q=p.text(request, "q", f.MAX_LIST_QUERY_CHARS),
        kind=p.choice(request, "kind", f.KINDS),
        layer=p.choice(request, "layer", f.LAYERS),
        status=p.choice(request, "status", f.STATUSES) or "active",
        category=None if category is None else f.category(category),
        store=p.choice(request, "store", f.STORES),
        writers=p.writers(request),
        limit=p.integer(request, "limit", 50, 1, 500),
        offset=p.integer(request, "offset", 0, 0, 100_000),
    )
    return web.json_response(listing)


@routes.get("/v1/memories/{id}")
async def get_memory(request: web.Request) -> web.Response:
    memory = await request.app[keys.RECORDS].get(principal_of(request), p.path_id(request))
    return web.json_response(memory, headers=p.etag_headers(memory))


@routes.patch("/v1/memories/{id}")
async def update_memory(request: web.Request) -> web.Response:
    memory_id, if_match = p.path_id(request), p.if_match(request)
    changes = f.memory_patch(await p.body(request))
    memory = await request.app[keys.RECORDS].update(
        principal_of(request), memory_id, changes, if_match=if_match
    )
    return web.json_response(memory, headers=p.etag_headers(memory))


@routes.delete("/v1/memories/{id}")
async def delete_memory(request: web.Request) -> web.Response:
    memory_id, purge = p.path_id(request), p.boolean(request, "purge")
    deleted = await request.app[keys.RECORDS].delete(principal_of(request), memory_id, purge=purge)
    return web.json_response(deleted)


@routes.post("/v1/memories/{id}/restore")
async def restore_memory(request: web.Request) -> web.Response:
    memory = await request.app[keys.RECORDS].restore(principal_of(request), p.path_id(request))
    return web.json_response(memory, headers=p.etag_headers(memory))


@routes.post("/v1/memories/{id}/confirm")
async def confirm_memory(request: web.Request) -> web.Response:
    memory = await request.app[keys.RECORDS].confirm(principal_of(request), p.path_id(request))
    return web.json_response(memory, headers=p.etag_headers(memory))


@routes.get("/v1/memories/{id}/why")
async def explain_memory(request: web.Request) -> web.Response:
    memory_id, q = p.path_id(request), p.text(request, "q", f.MAX_QUERY_CHARS)
    why = await request.app[keys.RECORDS].why(principal_of(request), memory_id, q=q)
    return web.json_response(why)


@routes.get("/v1/memories/{id}/history")
async def memory_history(request: web.Request) -> web.Response:
    memory_id, limit = p.path_id(request), p.integer(request, "limit", 100, 1, 500)
    history = await request.app[keys.RECORDS].history(principal_of(request), memory_id, limit=limit)
    return web.json_response(history)


# -- retrieval ---------------------------------------------------------------------------------
@routes.post("/v1/query")
async def query(request: web.Request) -> web.Response:
    fields = f.query_fields(await p.body(request))
    return web.json_response(await request.app[keys.RECALL].query(principal_of(request), fields))


@routes.get("/v1/entities")
async def list_entities(request: web.Request) -> web.Response:
    q, limit = p.text(request, "q", 200), p.integer(request, "limit", 50, 1, 500)
    found = await request.app[keys.RECORDS].entities(principal_of(request), q=q, limit=limit)
    return web.json_response(found)


@routes.get("/v1/entities/{id}")
async def get_entity(request: web.Request) -> web.Response:
    entity_id = p.path_id(request, "entity")
    return web.json_response(
        await request.app[keys.RECORDS].entity(principal_of(request), entity_id)
    )


@routes.get("/v1/timeline")
async def timeline(request: web.Request) -> web.Response:
    anchor = p.required_integer(request, "anchor", 1, p.MAX_ID)
    before = p.integer(request, "before", 5, 0, 100)
    after = p.integer(request, "after", 5, 0, 100)
    found = await request.app[keys.RECORDS].timeline(
        principal_of(request), anchor, before=before, after=after
    )
    return web.json_response(found)


# -- maintenance -------------------------------------------------------------------------------
@routes.post("/v1/gc")
async def collect_garbage(request: web.Request) -> web.Response:
    return web.json_response(await request.app[keys.RECORDS].gc(principal_of(request)))


@routes.get("/v1/export")
async def export(request: web.Request) -> web.StreamResponse:
    chunks = request.app[keys.RECORDS].export_chunks(principal_of(request))
    first = await anext(chunks)  # access is checked before the 200 goes out
    response = web.StreamResponse(headers={"Content-Type": NDJSON})
    response.headers["Content-Disposition"] = 'attachment; filename="lobug-export.jsonl"'
    try:
        await response.prepare(request)
        await response.write(first)
        async for chunk in chunks:
            await response.write(chunk)
    finally:
        await chunks.aclose()  # a client gone mid-stream must not leave the reader blocked
    await response.write_eof()
    return response


@routes.get("/v1/stats")
async def stats(request: web.Request) -> web.Response:
    return web.json_response(await request.app[keys.RECORDS].stats(principal_of(request)))
