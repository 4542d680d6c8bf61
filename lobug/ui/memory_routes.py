"""One memory: its page (text, sources, history, related, entities) and what a person can do
to it (edit with its revision, pin, confirm, forget, restore, purge after a confirmation)."""

from __future__ import annotations

from functools import partial
from typing import Any

from aiohttp import web

from lobug import errors, keys
from lobug.memory import Records
from lobug.memory.query.scalars import MAX_CONTENT_CHARS
from lobug.memory.records.service import USER
from lobug.ui import forms, pages, reads, views
from lobug.ui.browse_routes import path_id

routes = web.RouteTableDef()
PURGE_WORD = "purge"


def _records(request: web.Request) -> Records:
    return request.config_dict[keys.RECORDS]


def _back(memory_id: int, done: str) -> web.HTTPSeeOther:
    return web.HTTPSeeOther(f"/ui/memories/{memory_id}?done={done}")


@routes.get("/memories/{id}", name="memory")
@pages.template("memory.html")
async def memory_page(request: web.Request) -> dict[str, Any]:
    records, principal = _records(request), request[keys.PRINCIPAL]
    memory_id = path_id(request, "memory")
    memory = await records.get(principal, memory_id)
    history = await records.history(principal, memory_id, limit=50)
    scope = records.scope(principal)
    links = await records.db.read(partial(reads.memory_links, scope=scope, memory_id=memory_id))
    why: dict[str, Any] | None = None
    if records.memory is not None:
        why = await records.why(principal, memory_id)
    related = (why or {}).get("relations") or []
    texts = await records.db.read(
        partial(reads.contents, scope=scope, user_id=USER, ids=[r["id"] for r in related])
    )
    return {
        "memory": memory,
        "strength": views.strength(memory, records.clock()),
        "history": history["events"],
        "sources": links["sources"],
        "entities": links["entities"],
        "related": [{**r, "content": texts[r["id"]]} for r in related if r["id"] in texts],
        "superseded_by": (why or {}).get("superseded_by"),
        "terms": views.terms((why or {}).get("breakdown")),
        "reads_turns": scope.reads_turns,
        "max_chars": MAX_CONTENT_CHARS,
    }


@routes.post("/memories/{id}/edit", name="memory-edit")
async def edit(request: web.Request) -> web.Response:
    memory_id, form = path_id(request, "memory"), await request.post()
    changes = forms.memory_changes(form)
    await _records(request).update(
        request[keys.PRINCIPAL], memory_id, changes, if_match=forms.revision(form)
    )
    raise _back(memory_id, "saved")


@routes.post("/memories/{id}/pin", name="memory-pin")
async def pin(request: web.Request) -> web.Response:
    memory_id, form = path_id(request, "memory"), await request.post()
    pinned = forms.given(form, "pinned") == "true"
    await _records(request).update(
        request[keys.PRINCIPAL], memory_id, {"pinned": pinned}, if_match=forms.revision(form)
    )
    raise _back(memory_id, "pinned" if pinned else "unpinned")


@routes.post("/memories/{id}/confirm", name="memory-confirm")
async def confirm(request: web.Request) -> web.Response:
    memory_id = path_id(request, "memory")
    await _records(request).confirm(request[keys.PRINCIPAL], memory_id)
    raise _back(memory_id, "confirmed")


@routes.post("/memories/{id}/forget", name="memory-forget")
async def forget(request: web.Request) -> web.Response:
    memory_id = path_id(request, "memory")
    await _records(request).delete(request[keys.PRINCIPAL], memory_id, purge=False)
    raise _back(memory_id, "forgotten")


@routes.post("/memories/{id}/restore", name="memory-restore")
async def restore(request: web.Request) -> web.Response:
    memory_id = path_id(request, "memory")
    await _records(request).restore(request[keys.PRINCIPAL], memory_id)
    raise _back(memory_id, "restored")


@routes.get("/memories/{id}/purge", name="memory-purge-ask")
@pages.template("purge.html")
async def purge_ask(request: web.Request) -> dict[str, Any]:
    memory = await _records(request).get(request[keys.PRINCIPAL], path_id(request, "memory"))
    return {"memory": memory, "word": PURGE_WORD}


@routes.post("/memories/{id}/purge", name="memory-purge")
async def purge(request: web.Request) -> web.Response:
    memory_id, form = path_id(request, "memory"), await request.post()
    if (forms.given(form, "confirm") or "").lower() != PURGE_WORD:
        raise errors.invalid_request(
            f"to purge, type the word '{PURGE_WORD}' to confirm; nothing was removed",
            field="confirm",
        )
    await _records(request).delete(request[keys.PRINCIPAL], memory_id, purge=True)
    raise web.HTTPSeeOther("/ui/facts?done=purged")
