"""The MCP resources: the base memory document and the entities (people, places, things).

Read through the same `Records` calls as GET /v1/entities and `lobug memory base`, with the
caller's `Principal`: the base memory is only for an unrestricted caller (it is distilled from
every store), and the entities are those the caller's stores and categories may see.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from lobug import errors
from lobug.access import Principal
from lobug.mcp_server.tools import Services
from lobug.memory.shapes import path_id

BASE_URI = "lobug://memory/base"
ENTITIES_URI = "lobug://entities"
ENTITY_PREFIX = "lobug://entities/"
ENTITY_TEMPLATE = ENTITY_PREFIX + "{id}"
JSON = "application/json"
LISTED_ENTITIES = 100  # resources/list names at most this many entities; the index has the rest


async def listing(s: Services, who: Principal) -> list[types.Resource]:
    """The base memory (to an unrestricted caller), the entity index, and each entity."""
    found: list[types.Resource] = []
    if s.records.scope(who).unrestricted:
        found.append(
            types.Resource(
                uri=BASE_URI,
                name="base-memory",
                title="Base memory",
                description="The user's profile document, always in Lo-Bug's prompt.",
                mime_type="text/markdown",
            )
        )
    found.append(
        types.Resource(
            uri=ENTITIES_URI,
            name="entities",
            title="Entities",
            description="People, places and things Lo-Bug knows of, with their aliases.",
            mime_type=JSON,
        )
    )
    entities = (await s.records.entities(who, limit=LISTED_ENTITIES))["entities"]
    found += [
        types.Resource(
            uri=f"{ENTITY_PREFIX}{entity['id']}",
            name=f"entity-{entity['id']}",
            title=str(entity["canonical_name"]),
            description="An entity's profile and the memories linked to it.",
            mime_type=JSON,
        )
        for entity in entities
    ]
    return found


TEMPLATES = [
    types.ResourceTemplate(
        uri_template=ENTITY_TEMPLATE,
        name="entity",
        title="Entity",
        description="An entity's profile and the memories linked to it (GET /v1/entities/{id}).",
        mime_type=JSON,
    )
]


async def read(s: Services, who: Principal, uri: str) -> types.TextResourceContents:
    """One resource's contents; an unknown URI is 404 `not_found`."""
    if uri == BASE_URI:
        text = await s.records.base(who)
        return types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)
    if uri == ENTITIES_URI:
        return _json(uri, await s.records.entities(who))
    if uri.startswith(ENTITY_PREFIX):
        entity_id = path_id(uri.removeprefix(ENTITY_PREFIX), "entity")
        return _json(uri, await s.records.entity(who, entity_id))
    raise errors.not_found(f"no resource {uri[:200]!r}")


def _json(uri: str, data: Any) -> types.TextResourceContents:
    return types.TextResourceContents(uri=uri, mime_type=JSON, text=json.dumps(data))
