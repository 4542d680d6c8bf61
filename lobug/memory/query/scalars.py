"""The bounded values of the /v1 shapes: each limit once, as a pydantic type that checks it.

A type is `Annotated[base, constraints, BeforeValidator(check)]`: the constraints make the JSON
Schema (lobug/api/openapi.json), the check refuses a bad value with our own words ("is 2001
characters; the limit is 2000"), and `shapes.parse` turns that into a 400 naming the field.
`named()` makes a type a `#/components/schemas/NAME` reference in the document.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, GetJsonSchemaHandler, WithJsonSchema
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError

from lobug.access import MAX_CATEGORY_CHARS, STORES

MAX_CONTENT_CHARS = 2000
MAX_TAGS, MAX_TAG_CHARS = 32, 64
MAX_ID_CHARS = 128  # session ids and user ids
MAX_REF_CHARS = 256
MAX_LIST_QUERY_CHARS = 500
MAX_TOP_K = 100
MAX_BUDGET_TOKENS = 32768
MAX_MIN_SCORE = 100.0  # final scores are ~0..1.25 with the default weights
MAX_TIMESTAMP = 32_503_680_000.0  # year 3000: anything later is a unit mistake (ms for s)
MAX_ID = 2**63 - 1
KINDS = ("fact", "summary", "reflection", "insight", "procedural")
QUERY_KINDS = ("episode", *KINDS)
LAYERS = ("mid", "long")
STATUSES = ("active", "archived", "soft_deleted")
PATCH_STATUSES = ("active", "archived")  # soft delete is DELETE; undoing it is /restore
ROLES = ("user", "assistant")
RETURNS = ("bullets", "full")
# Who wrote a memory (seed 001 §6, §6.1): the agent, its run, the person speaking.
WRITER_KEYS = ("agent_id", "run_id", "actor_id")

Check = Callable[[Any], Any]


class Request(BaseModel):
    """A body where `null` is the same as leaving the field out (CONTRACT.md: old clients send
    it): the document shows each field's type without the null."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(core_schema)
        target = handler.resolve_ref_schema(json_schema)
        for name, prop in target.get("properties", {}).items():
            branches = [b for b in prop.get("anyOf", []) if b != {"type": "null"}]
            if len(branches) == 1 and name not in target.get("required", []):
                del prop["anyOf"]
                target["properties"][name] = {**branches[0], **prop}
        return json_schema


def bad(message: str, *, field: str | None = None) -> PydanticCustomError:
    """What is wrong with a value; `shapes.parse` puts the field's name in front (`field`: a
    model's own check names the field it is about)."""
    return PydanticCustomError("lobug", "{message}", {"message": message, "field": field})


def absent(description: str | None = None) -> Any:
    """The default of a key that may be left out but is never null (typed Any on purpose: the
    field keeps its type, and `schema` drops the `default: null`)."""
    return Field(None, description=description)


def named(name: str) -> WithJsonSchema:
    return WithJsonSchema({"$ref": f"#/components/schemas/{name}"})


def text(limit: int) -> Check:
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise bad("must be a string")
        cleaned = value.strip()
        if not cleaned:
            raise bad("must not be empty")
        if len(cleaned) > limit:
            raise bad(f"is {len(cleaned)} characters; the limit is {limit}")
        if "\x00" in cleaned:
            raise bad("must not contain NUL characters")
        return cleaned

    return check


def ident(limit: int = MAX_ID_CHARS, *, printable: bool = False, lower: bool = False) -> Check:
    """An id (session, user, ref, writer): no control characters; `printable` refuses more."""
    as_text = text(limit)

    def check(value: Any) -> str:
        cleaned = as_text(value)
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in cleaned):
            raise bad("must not contain control characters")
        if printable and not cleaned.isprintable():
            raise bad("must contain printable characters only")
        return cleaned.lower() if lower else cleaned

    return check


def choice(allowed: tuple[str, ...]) -> Check:
    def check(value: Any) -> str:
        if value not in allowed:
            raise bad(f"must be one of {', '.join(allowed)}, got {value!r}")
        return str(value)

    return check


def flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise bad("must be true or false")
    return value


def number(lo: float, hi: float) -> Check:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad("must be a number")
        if not math.isfinite(value):
            raise bad("must be a number")
        if not lo <= value <= hi:
            raise bad(f"must be between {lo:g} and {hi:g}, got {value:g}")
        return float(value)

    return check


def integer(lo: int, hi: int, *, from_text: bool = False) -> Check:
    """An integer in [lo, hi]; `from_text` also reads one from a query string or a flag."""

    def check(value: Any) -> int:
        if from_text and isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise bad(f"must be an integer, got {value[:40]!r}") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("must be an integer")
        if not lo <= value <= hi:
            raise bad(f"must be between {lo} and {hi}, got {value}")
        return value

    return check


def boolean_text(value: Any) -> bool:
    """A query-string flag: true/1/yes or false/0/no."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("true", "1", "yes"):
        return True
    if word in ("false", "0", "no"):
        return False
    raise bad(f"must be true or false, got {str(value)[:40]!r}")


def tag_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        raise bad("must be a list of strings")
    if len(value) > MAX_TAGS:
        raise bad(f"has {len(value)} items; the limit is {MAX_TAGS}")
    return list(dict.fromkeys(ident(MAX_TAG_CHARS)(tag) for tag in value))


def timestamp(value: Any) -> float:
    """Unix seconds, or an ISO 8601 date or date-time (UTC when it has no offset)."""
    if isinstance(value, str):
        raw = text(40)(value)
        try:
            parsed = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise bad("must be Unix seconds or an ISO 8601 date or date-time") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.timestamp()
    return number(0, MAX_TIMESTAMP)(value)


def enum(values: tuple[str, ...], description: str | None = None) -> WithJsonSchema:
    schema: dict[str, Any] = {"enum": list(values)}
    return WithJsonSchema({**schema, "description": description} if description else schema)


def _id_schema(limit: int, pattern: str, description: str) -> Any:
    return Field(min_length=1, max_length=limit, pattern=pattern, description=description)


# -- the named components: the value type, then the reference the models use -----------------
IdValue = Annotated[int, Field(ge=1, json_schema_extra={"format": "int64"})]
SessionIdValue = Annotated[
    str,
    _id_schema(
        MAX_ID_CHARS, r"^[^\x00-\x1f]+$", "Conversation id: at most 128 printable characters."
    ),
    BeforeValidator(ident()),
]
WriterIdValue = Annotated[
    str,
    _id_schema(
        MAX_ID_CHARS,
        r"^[^\x00-\x1f\x7f]+$",
        "Who wrote a memory (seed 001 §6.1): an agent, run or actor id of at most 128 "
        "printable characters.",
    ),
    BeforeValidator(ident(printable=True)),
]
CategoryValue = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_CATEGORY_CHARS,
        description="A category of the configured categories file (compared lowercase), e.g. "
        "personal, preference, knowledge, event, profile, tasks, procedural. Reads are limited "
        "to the calling agent's allowlist.",
    ),
    BeforeValidator(ident(MAX_CATEGORY_CHARS, lower=True)),
]
KindValue = Annotated[str, enum(KINDS), BeforeValidator(choice(KINDS))]
QueryKindValue = Annotated[
    str,
    enum(QUERY_KINDS, "`episode` means raw conversation turns."),
    BeforeValidator(choice(QUERY_KINDS)),
]
LayerValue = Annotated[str, enum(LAYERS), BeforeValidator(choice(LAYERS))]
StatusValue = Annotated[str, enum(STATUSES), BeforeValidator(choice(STATUSES))]
StoreValue = Annotated[
    str,
    enum(
        STORES,
        "Trust-gated store. full trust sees private+shared+social, inner shared+social, "
        "familiar social, public none. Writes default to private (full), shared (inner) or "
        "social (familiar).",
    ),
    BeforeValidator(choice(STORES)),
]
RoleValue = Annotated[str, enum(ROLES), BeforeValidator(choice(ROLES))]
ImportanceValue = Annotated[float, Field(ge=0, le=1), BeforeValidator(number(0, 1))]
TagsValue = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]],
    Field(
        max_length=MAX_TAGS,
        description="At most 32 tags of 1-64 characters; duplicates are dropped.",
    ),
    BeforeValidator(tag_list),
]
SCALARS: dict[str, Any] = {
    "Id": IdValue,
    "SessionId": SessionIdValue,
    "WriterId": WriterIdValue,
    "Kind": KindValue,
    "QueryKind": QueryKindValue,
    "Layer": LayerValue,
    "Status": StatusValue,
    "Store": StoreValue,
    "Role": RoleValue,
    "Category": CategoryValue,
    "Importance": ImportanceValue,
    "Tags": TagsValue,
}
Id = Annotated[IdValue, named("Id")]
SessionId = Annotated[SessionIdValue, named("SessionId")]
WriterId = Annotated[WriterIdValue, named("WriterId")]
Category = Annotated[CategoryValue, named("Category")]
Kind = Annotated[KindValue, named("Kind")]
QueryKind = Annotated[QueryKindValue, named("QueryKind")]
Layer = Annotated[LayerValue, named("Layer")]
Status = Annotated[StatusValue, named("Status")]
Store = Annotated[StoreValue, named("Store")]
Role = Annotated[RoleValue, named("Role")]
Importance = Annotated[ImportanceValue, named("Importance")]
Flag = Annotated[bool, BeforeValidator(flag)]
Tags = Annotated[TagsValue, named("Tags")]
