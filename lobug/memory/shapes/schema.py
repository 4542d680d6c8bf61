"""JSON Schema of the shapes, as `#/components/schemas` of an OpenAPI 3.1 document (or MCP)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, models_json_schema

from lobug.memory.query.scalars import SCALARS

REF = "#/components/schemas/{model}"


class ComponentSchema(GenerateJsonSchema):
    """Pydantic's schema minus what only adds noise: titles and `default: null`."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def handle_ref_overrides(self, json_schema: JsonSchemaValue) -> JsonSchemaValue:
        # A `named()` scalar points at a component pydantic does not know: keep it as written.
        if "$ref" in json_schema and json_schema["$ref"] not in self.json_to_defs_refs:
            return json_schema
        return super().handle_ref_overrides(json_schema)


def _tidy(node: Any) -> Any:
    if isinstance(node, dict):
        tidy = {key: _tidy(value) for key, value in node.items() if key != "title"}
        if isinstance(tidy.get("description"), str):  # a wrapped docstring reads as one line
            tidy["description"] = " ".join(tidy["description"].split())
        if "default" in tidy and tidy["default"] is None:
            del tidy["default"]
        if "properties" in node:  # a property may be named "title"
            tidy["properties"] = {k: _tidy(v) for k, v in node["properties"].items()}
        return tidy
    if isinstance(node, list):
        return [_tidy(item) for item in node]
    return node


def component_schemas(models: list[type[BaseModel]]) -> dict[str, Any]:
    """The named scalars, then every model (and the models they use), by name."""
    schemas = {
        name: TypeAdapter(value).json_schema(schema_generator=ComponentSchema)
        for name, value in SCALARS.items()
    }
    _, top = models_json_schema(
        [(model, "validation") for model in models],
        ref_template=REF,
        schema_generator=ComponentSchema,
    )
    schemas.update(top.get("$defs", {}))
    # A model written out in place (`inline_schema`) leaves a definition nothing points at.
    used = json.dumps(schemas) + "".join(f'"{REF.format(model=m.__name__)}"' for m in models)
    return {
        name: _tidy(schema)
        for name, schema in schemas.items()
        if f'"{REF.format(model=name)}"' in used
    }


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's schema written out in place (one without references to components)."""
    return dict(_tidy(model.model_json_schema(schema_generator=ComponentSchema)))
