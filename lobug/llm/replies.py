"""Parsing model output: the RESPOND/IGNORE reply and defensive JSON extraction."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lobug.llm.client import OutputSchema

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
# What spoken prose never contains: braces, a JSON array's start or end, JSON's `"key":` or `\"`,
# a code fence. Any of it in an answer that is not the agreed JSON is debris of broken JSON.
_JSON_DEBRIS = re.compile(
    r'[{}]|"\s*:|\\"|```'
    r'|^\s*\[\s*(?:[\[\]{"\d-]|true|false|null)'  # a JSON array starting
    r'|(?:[\[\]}"\d]|true|false|null)\s*\]\s*$'  # … or ending
)


class UnusableReply(ValueError):
    """The model's answer is neither the agreed JSON nor clean prose (e.g. `}{ not json`)."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


@dataclass(frozen=True)
class Reply:
    action: str  # RESPOND | IGNORE
    response: str


# What the chat prompt asks for (lobug.chat.prompt.REPLY_FORMAT) and parse_reply reads.
# One to three spoken sentences in their JSON object: a model that goes on is cut short (its
# answer then fails to parse and the turn is answered degraded, in bounded time).
REPLY_MAX_TOKENS = 256
REPLY_SCHEMA = OutputSchema(
    "reply",
    {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["RESPOND", "IGNORE"]},
            "response": {"type": "string"},
        },
        "required": ["action", "response"],
    },
)


class TooDeep(ValueError):
    """JSON nested deeper than Python's parser recurses (a model's `[[[[…`, issue 38): not an
    answer, like any other unusable output."""


def json_value(text: str) -> Any:
    """`json.loads` for what a model or its server sent: ValueError for anything that is not
    JSON, nesting too deep for the parser included."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep("the JSON is nested too deep") from None


def find_json(text: str) -> Any:
    """The first JSON value in `text`: tolerates code fences, prose around it, trailing text.

    Raises ValueError when there is none (TooDeep when it is nested too deep to read).
    """
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        candidate = candidate.strip()
        for start, char in enumerate(candidate):
            if char not in "[{":
                continue
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            except RecursionError:
                raise TooDeep("the JSON is nested too deep") from None
            return value
    raise ValueError("no JSON value found in the model output")


def json_items(
    value: Any, *, is_item: Callable[[dict[str, Any]], bool], list_keys: Sequence[str]
) -> list[Any] | None:
    """The items of a model's JSON answer meant as a list, however it wrapped them: the list
    itself, one item object (`is_item`), `{}` for none, a list under one of `list_keys` or the
    object's only list. None when it is none of these."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return None
    if not value:
        return []  # {} — some models' way of saying "nothing"
    if is_item(value):
        return [value]
    for key in list_keys:
        if isinstance(value.get(key), list):
            return list(value[key])
    lists = [v for v in value.values() if isinstance(v, list)]
    return list(lists[0]) if len(lists) == 1 else None


def parse_reply(text: str) -> Reply:
    """The chat prompt asks for {"action": ..., "response": ...}; clean prose means RESPOND.

    Raises UnusableReply for anything else — empty output, prose with JSON debris in it, JSON
    nested too deep to read — which must never be spoken to the user or stored as what the
    assistant said."""
    try:
        return _parse_reply(text)
    except RecursionError:  # a value too deep to turn into words (`str` of a nested list)
        raise UnusableReply("the model's answer is nested too deep", text) from None


def _parse_reply(text: str) -> Reply:
    stripped = text.strip()
    try:
        value = find_json(stripped)
    except TooDeep:
        raise UnusableReply("the model's answer is nested too deep", text) from None
    except ValueError:
        value = None
    if isinstance(value, dict):
        action = str(value.get("action", "RESPOND")).strip().upper()
        response = value.get("response", value.get("text"))
        if response is None:  # some other shape: speak its longest string, never raw JSON
            strings = [
                v for k, v in value.items() if k != "action" and isinstance(v, str) and v.strip()
            ]
            response = max(strings, key=len) if strings and action != "IGNORE" else ""
        if action == "IGNORE" or not isinstance(response, str) or not response.strip():
            return Reply("IGNORE", "")
        return Reply("RESPOND", response.strip())
    if stripped.upper() in ("IGNORE", '"IGNORE"'):
        return Reply("IGNORE", "")
    if not is_clean_prose(stripped):
        raise UnusableReply("the model's answer is neither the reply JSON nor plain prose", text)
    return Reply("RESPOND", stripped)


def is_clean_prose(text: str) -> bool:
    """Words to speak: not empty, no control characters but line breaks and tabs, no JSON debris."""
    if not text.strip():
        return False
    if any(ord(ch) < 32 and ch not in "\n\t\r" for ch in text) or "\x7f" in text:
        return False
    return _JSON_DEBRIS.search(text) is None
