"""Tool input schemas from the /v1 shapes' models (one source of truth), written out in place.

`shapes.schema.component_schemas` gives OpenAPI components that point at each other with
`#/components/schemas/…`; an MCP tool's `inputSchema` must stand alone, and several agent
hosts handle `$ref` poorly, so every reference is replaced by what it names.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter

from lobug.memory.query.scalars import IdValue
from lobug.memory.shapes.schema import REF, ComponentSchema, component_schemas

PREFIX = REF.format(model="")
ID_FIELD = "id"


def tool_schema(
    model: type[BaseModel] | None = None,
    *,
    memory_id: bool = False,
    extra: dict[str, Any] | None = None,
    id_of: str = "Memory",
) -> dict[str, Any]:
    """The model's request schema as a tool's arguments; `memory_id` adds the required `id` of
    the memory (or what `id_of` names) the tool acts on (a /v1 path parameter), `extra` more
    optional properties."""
    components = component_schemas([model] if model is not None else [])
    root: dict[str, Any] = {"type": "object", "properties": {}}
    if model is not None:
        root = dict(_inline(components[model.__name__], components))
        root.pop("minProperties", None)  # MemoryPatch's "give something": `id` now counts
        root.pop("description", None)  # the model's HTTP wording; the tool has its own
    properties: dict[str, Any] = {}
    required: list[str] = []
    if memory_id:
        id_schema = TypeAdapter(IdValue).json_schema(schema_generator=ComponentSchema)
        properties[ID_FIELD] = {**id_schema, "description": f"{id_of} id."}
        required.append(ID_FIELD)
    properties.update(root.get("properties", {}))
    properties.update(extra or {})
    required += [name for name in root.get("required", []) if name not in required]
    schema = {**root, "type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _inline(node: Any, components: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(PREFIX):
            target = _inline(components[ref.removeprefix(PREFIX)], components)
            siblings = {k: _inline(v, components) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings}  # a field's own description wins over the type's
        return {key: _inline(value, components) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, components) for item in node]
    return node
