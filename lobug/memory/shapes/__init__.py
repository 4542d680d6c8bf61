"""The /v1 shapes as pydantic models: they validate requests (HTTP and the CLI) and make the
OpenAPI document's schemas (`lobug.api.openapi`)."""

from lobug.memory.shapes.parse import QUERY, parse, parse_value, path_id
from lobug.memory.shapes.requests import MemoryCreate, MemoryPatch, TurnCreate

__all__ = [
    "QUERY",
    "MemoryCreate",
    "MemoryPatch",
    "TurnCreate",
    "parse",
    "parse_value",
    "path_id",
]
