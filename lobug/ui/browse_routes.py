"""Pages to look around: home, facts, search, conversations, entities (all read-only)."""

from __future__ import annotations

from functools import partial
from typing import Any

from aiohttp import web

from lobug import errors, keys
from lobug.memory import shapes
from lobug.memory.query.scalars import KINDS, LAYERS, QUERY_KINDS, STATUSES, STORES, SessionIdValue
from lobug.memory.records.service import USER
from lobug.memory.shapes import parse_value
from lobug.ui import forms, pages, reads, views

routes = web.RouteTableDef()
Page = dict[str, Any]


@routes.get("/", name="home")
@pages.template("home.html")
async def home(request: web.Request) -> Page:
    records, principal = request.config_dict[keys.RECORDS], request[keys.PRINCIPAL]
    base = None
    if records.scope(principal).unrestricted:
        base = await records.base(principal)
    latest = await records.list_memories(principal, kind="reflection", limit=1)
    insights = await records.list_memories(principal, kind="insight", limit=5)
    return {
        "base": base,
        "reflection": (latest["memories"] or [None])[0],
        "insights": insights["memories"],
        "stats": await records.stats(principal),
        "health": await request.config_dict[keys.HEALTH].check(),
    }


@routes.get("/facts", name="facts")
@pages.template("facts.html")
async def facts(request: web.Request) -> Page:
    records, principal = request.config_dict[keys.RECORDS], request[keys.PRINCIPAL]
    chosen = forms.list_filters(request.query)
    listing = await records.list_memories(principal, **chosen)
    memories = views.with_strength(listing["memories"], records.clock())
    return {
        "groups": views.by_category(memories),
        "count": listing["count"],
        "query": {k: request.query.get(k, "") for k in request.query},
        "chosen": chosen,
        "choices": {
            "kind": KINDS,
            "layer": LAYERS,
            "status": (*STATUSES, forms.STATUS_ALL),
            "store": STORES,
        },  # fmt: skip
    }


@routes.get("/search", name="search")
@pages.template("search.html")
async def search(request: web.Request) -> Page:
    results: list[dict[str, Any]] | None = None
    if forms.given(request.query, "q") is not None:
        body = forms.search_body(request.query)
        found = await request.config_dict[keys.RECALL].query(request[keys.PRINCIPAL], body)
        results = [{**r, "terms": views.terms(r.get("explain"))} for r in found["results"]]
    return {
        "results": results,
        "query": {k: request.query.get(k, "") for k in request.query},
        "kinds": QUERY_KINDS,
        "chosen_kinds": request.query.getall("kind", []),
    }


@routes.get("/conversations", name="conversations")
@pages.template("conversations.html")
async def conversations(request: web.Request) -> Page:
    records = request.config_dict[keys.RECORDS]
    scope = records.scope(request[keys.PRINCIPAL])
    found = await records.db.read(partial(reads.sessions, scope=scope, user_id=USER))
    return {"sessions": found, "reads_turns": scope.reads_turns}


@routes.get("/conversations/{session_id}", name="conversation")
@pages.template("conversation.html")
async def conversation(request: web.Request) -> Page:
    records = request.config_dict[keys.RECORDS]
    scope = records.scope(request[keys.PRINCIPAL])
    session_id = parse_value(SessionIdValue, request.match_info["session_id"], "session_id")
    found = await records.db.read(
        partial(reads.session, scope=scope, user_id=USER, session_id=session_id)
    )
    if found is None:
        raise errors.not_found(f"no conversation {session_id[:40]!r}")
    return {"session": found}


@routes.get("/entities", name="entities")
@pages.template("entities.html")
async def entities(request: web.Request) -> Page:
    args = forms.entity_filters(request.query)
    found = await request.config_dict[keys.RECORDS].entities(request[keys.PRINCIPAL], **args)
    return {"entities": found["entities"], "q": args["q"] or ""}


@routes.get("/entities/{id}", name="entity")
@pages.template("entity.html")
async def entity(request: web.Request) -> Page:
    records = request.config_dict[keys.RECORDS]
    found = await records.entity(request[keys.PRINCIPAL], path_id(request, "entity"))
    found["memories"] = views.with_strength(found["memories"], records.clock())
    return {"entity": found}


def path_id(request: web.Request, what: str) -> int:
    return shapes.path_id(request.match_info["id"], what)
