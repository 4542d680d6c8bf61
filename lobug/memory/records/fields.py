"""Input limits and validation for the memory API, shared by HTTP and the CLI.

Every field has a bound; a bad value is 400 `invalid_request` naming the field in `details`.
Unknown top-level fields are ignored (CONTRACT.md: old and new clients must both work);
unknown keys inside `filters` are refused, because a filter silently ignored widens a read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from lobug import errors
from lobug.access import MAX_CATEGORY_CHARS, STORES, check_store_name
from lobug.memory.query import MAX_QUERY_CHARS

MAX_CONTENT_CHARS = 2000
MAX_TAGS, MAX_TAG_CHARS = 32, 64
MAX_ID_CHARS = 128  # session ids and user ids
MAX_REF_CHARS = 256
MAX_LIST_QUERY_CHARS = 500
MAX_TOP_K = 100
MAX_BUDGET_TOKENS = 32768
MAX_MIN_SCORE = 100.0  # final scores are ~0..1.25 with the default weights
MAX_TIMESTAMP = 32_503_680_000.0  # year 3000: anything later is a unit mistake (ms for s)
KINDS = ("fact", "summary", "reflection", "insight", "procedural")
QUERY_KINDS = ("episode", *KINDS)
LAYERS = ("mid", "long")
STATUSES = ("active", "archived", "soft_deleted")
PATCH_STATUSES = ("active", "archived")  # soft delete is DELETE; undoing it is /restore
ROLES = ("user", "assistant")
RETURNS = ("bullets", "full")
# Who wrote a memory (seed 001 §6, §6.1): the agent, its run, the person speaking.
WRITER_KEYS = ("agent_id", "run_id", "actor_id")
FILTER_KEYS = (
    "user_id", "session_id", "role", "pinned", "importance_min", "importance_max",
    "updated_after", "updated_before", *WRITER_KEYS,
)  # fmt: skip
PATCH_KEYS = ("content", "category", "importance", "tags", "pinned", "store", "status")


def bad(field: str, message: str) -> errors.ApiError:
    return errors.invalid_request(f"'{field}' {message}", field=field)


def text(value: Any, field: str, limit: int) -> str:
    if not isinstance(value, str):
        raise bad(field, "must be a string")
    cleaned = value.strip()
    if not cleaned:
        raise bad(field, "must not be empty")
    if len(cleaned) > limit:
        raise bad(field, f"is {len(cleaned)} characters; the limit is {limit}")
    if "\x00" in cleaned:
        raise bad(field, "must not contain NUL characters")
    return cleaned


def ident(value: Any, field: str, limit: int = MAX_ID_CHARS) -> str:
    """An id (session, user, ref): printable, no control characters."""
    cleaned = text(value, field, limit)
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in cleaned):
        raise bad(field, "must not contain control characters")
    return cleaned


def writer_id(value: Any, field: str) -> str:
    """An agent, run or actor id: at most MAX_ID_CHARS printable characters."""
    cleaned = ident(value, field)
    if not cleaned.isprintable():
        raise bad(field, "must contain printable characters only")
    return cleaned


def writers(body: Mapping[str, Any], prefix: str = "") -> dict[str, str | None]:
    """`agent_id`, `run_id`, `actor_id` of a body (None when absent or null)."""
    return {
        key: None if body.get(key) is None else writer_id(body[key], prefix + key)
        for key in WRITER_KEYS
    }


def category(value: Any, field: str = "category") -> str:
    return ident(value, field, MAX_CATEGORY_CHARS).lower()


def choice(value: Any, field: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise bad(field, f"must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def flag(value: Any, field: str) -> bool:
    if not isinstance(value, bool):
        raise bad(field, "must be true or false")
    return value


def number(value: Any, field: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise bad(field, "must be a number")
    if not lo <= value <= hi:
        raise bad(field, f"must be between {lo:g} and {hi:g}, got {value:g}")
    return float(value)


def integer(value: Any, field: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad(field, "must be an integer")
    if not lo <= value <= hi:
        raise bad(field, f"must be between {lo} and {hi}, got {value}")
    return value


def tags(value: Any, field: str = "tags") -> list[str]:
    if not isinstance(value, list):
        raise bad(field, "must be a list of strings")
    if len(value) > MAX_TAGS:
        raise bad(field, f"has {len(value)} items; the limit is {MAX_TAGS}")
    return list(dict.fromkeys(ident(tag, field, MAX_TAG_CHARS) for tag in value))


def timestamp(value: Any, field: str) -> float:
    """Unix seconds, or an ISO 8601 date or date-time (UTC when it has no offset)."""
    if isinstance(value, str):
        raw = text(value, field, 40)
        try:
            parsed = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise bad(field, "must be Unix seconds or an ISO 8601 date or date-time") from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        return parsed.timestamp()
    return number(value, field, 0, MAX_TIMESTAMP)


def memory_create(body: Mapping[str, Any]) -> dict[str, Any]:
    """A POST /v1/memories body as keyword arguments (store None: the trust's default)."""
    if "content" not in body:
        raise bad("content", "is required")
    fields: dict[str, Any] = {
        "content": text(body["content"], "content", MAX_CONTENT_CHARS),
        "kind": choice(body.get("kind", "fact"), "kind", KINDS),
        "category": None,
        "importance": number(body.get("importance", 0.5), "importance", 0, 1),
        "tags": tags(body.get("tags", [])),
        "store": None,
        "pinned": flag(body.get("pinned", False), "pinned"),
        "session_id": None,
        **writers(body),  # agent_id None: the caller's agent (Records.create)
    }
    if body.get("category") is not None:
        fields["category"] = category(body["category"])
    if body.get("store") is not None:
        fields["store"] = check_store_name(body["store"])
    if body.get("session_id") is not None:
        fields["session_id"] = ident(body["session_id"], "session_id")
    return fields


def memory_patch(body: Mapping[str, Any]) -> dict[str, Any]:
    """A PATCH body: only the fields given; `category: null` clears the category."""
    changes: dict[str, Any] = {}
    for key in PATCH_KEYS:
        if key not in body:
            continue
        value = body[key]
        if key == "category":
            changes[key] = None if value is None else category(value)
        elif key == "content":
            changes[key] = text(value, key, MAX_CONTENT_CHARS)
        elif key == "importance":
            changes[key] = number(value, key, 0, 1)
        elif key == "tags":
            changes[key] = tags(value)
        elif key == "pinned":
            changes[key] = flag(value, key)
        elif key == "store":
            changes[key] = choice(value, key, STORES)
        else:
            changes[key] = choice(value, key, PATCH_STATUSES)
    if not changes:
        raise errors.invalid_request(
            f"nothing to change; give at least one of {', '.join(PATCH_KEYS)}"
        )
    return changes


def filters(value: Any) -> dict[str, Any]:
    """/v1/query `filters`: known keys only (400 naming an unknown one), each bounded."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise bad("filters", "must be an object")
    unknown = sorted(set(value) - set(FILTER_KEYS))
    if unknown:
        raise errors.invalid_request(
            f"unknown filter '{unknown[0]}' (known: {', '.join(FILTER_KEYS)})",
            field=f"filters.{unknown[0]}",
        )
    out: dict[str, Any] = {}
    for key, raw in value.items():
        name = f"filters.{key}"
        if raw is None:
            continue
        if key in ("user_id", "session_id"):
            out[key] = ident(raw, name)
        elif key in WRITER_KEYS:
            out[key] = writer_id(raw, name)
        elif key == "role":
            out[key] = choice(raw, name, ROLES)
        elif key == "pinned":
            out[key] = flag(raw, name)
        elif key.startswith("importance_"):
            out[key] = number(raw, name, 0, 1)
        else:
            out[key] = timestamp(raw, name)
    if out.get("importance_min", 0) > out.get("importance_max", 1):
        raise bad("filters.importance_min", "is above filters.importance_max")
    if out.get("updated_after", 0) > out.get("updated_before", MAX_TIMESTAMP):
        raise bad("filters.updated_after", "is after filters.updated_before")
    return out


def turn_create(body: Mapping[str, Any], *, max_text_chars: int) -> dict[str, Any]:
    for key in ("session_id", "role", "text"):
        if key not in body:
            raise bad(key, "is required")
    fields: dict[str, Any] = {
        "session_id": ident(body["session_id"], "session_id"),
        "role": choice(body["role"], "role", ROLES),
        "text": text(body["text"], "text", max_text_chars),
        "ts": None,
        "ref": None,
        "speaker": None,
        "auto_extract": flag(body.get("auto_extract", True), "auto_extract"),
        **writers(body),
    }
    if body.get("ts") is not None:
        fields["ts"] = number(body["ts"], "ts", 0, MAX_TIMESTAMP)
    if body.get("ref") is not None:
        fields["ref"] = ident(body["ref"], "ref", MAX_REF_CHARS)
    if body.get("speaker") is not None:
        fields["speaker"] = ident(body["speaker"], "speaker")
    return fields


def query_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    """A /v1/query body (seed 001 §6), validated; access checks come after, in the service."""
    if "query" not in body:
        raise bad("query", "is required")
    out: dict[str, Any] = {
        "agent": None,
        "query": text(body["query"], "query", MAX_QUERY_CHARS),
        "categories": None,
        "kinds": ("fact",),
        "filters": filters(body.get("filters")),
        "top_k": integer(body.get("top_k", 5), "top_k", 1, MAX_TOP_K),
        "threshold": None,  # seed 001 §6: a floor on the cosine similarity to the query
        "min_score": None,  # a floor on the final fused score
        "return": choice(body.get("return", "bullets"), "return", RETURNS),
        "budget_tokens": None,
        "session_id": None,
    }
    if body.get("agent") is not None:
        out["agent"] = ident(body["agent"], "agent", 64)
    if body.get("categories") is not None:
        value = body["categories"]
        if not isinstance(value, list) or len(value) > 64:
            raise bad("categories", "must be a list of at most 64 category names")
        out["categories"] = [category(item, "categories") for item in value]
    if body.get("kinds") is not None:
        value = body["kinds"]
        if not isinstance(value, list) or not 1 <= len(value) <= len(QUERY_KINDS):
            raise bad("kinds", f"must be a list of 1-{len(QUERY_KINDS)} kinds")
        out["kinds"] = tuple(dict.fromkeys(choice(k, "kinds", QUERY_KINDS) for k in value))
    if body.get("threshold") is not None:
        out["threshold"] = number(body["threshold"], "threshold", 0, 1)
    if body.get("min_score") is not None:
        out["min_score"] = number(body["min_score"], "min_score", 0, MAX_MIN_SCORE)
    if body.get("budget_tokens") is not None:
        out["budget_tokens"] = integer(body["budget_tokens"], "budget_tokens", 1, MAX_BUDGET_TOKENS)
    if body.get("session_id") is not None:
        out["session_id"] = ident(body["session_id"], "session_id")
    return out
