"""LLM fact extraction: the prompt, and a defensive parser for what small models really send."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lobug.llm.ask import InvalidOutput, ask
from lobug.llm.client import LLMClient, OutputSchema
from lobug.memory import instructions
from lobug.memory.table.rows import FACT_TYPES
from lobug.memory.write.validator import MAX_CHARS

PROCEDURAL = "procedural"  # seed 001 §12: how the user likes a task done
MAX_FACTS = 20  # per exchange; more is a model rambling, not a user talking
MAX_FACT_CHARS = 1000  # a bound on garbage; the writing validator (≤ 280) decides and counts
MIN_FACT_CHARS = 8
MAX_ASSISTANT_CHARS = 1500  # the reply is context for the user's words, not a source of facts
_TEXT_KEYS = ("fact", "content", "text", "memory", "statement")
_LIST_KEYS = ("facts", "memories", "items", "results", "data")
_SPACES = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\s\"'“”‘’`]+|[\s\"'“”‘’`.!?;:,]+$")


# What the prompt asks for; parse_facts also takes the other shapes small models send.
FACTS_SCHEMA = OutputSchema(
    "facts",
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "fact": {"type": "string", "maxLength": MAX_CHARS},
                "type": {"type": "string", "enum": [*FACT_TYPES, PROCEDURAL]},
                # Which of several exchanges it came from (extract.batch); one has no need.
                "exchange": {"type": "integer", "minimum": 1},
            },
            "required": ["fact", "type"],
        },
        "maxItems": MAX_FACTS,
    },
)


@dataclass(frozen=True)
class Extracted:
    content: str
    category: str  # one of FACT_TYPES, or PROCEDURAL
    exchange: int | None = None  # the model's number of the exchange it came from (1 = first)


async def extract(
    llm: LLMClient, exchanges: Sequence[tuple[str, str | None]], *, timeout_s: float
) -> list[Extracted]:
    """Facts from one exchange (user's words, Lo-Bug's reply or None) or several of one
    conversation (lobug.memory.extract.batch). Raises LLMUnavailable, or InvalidOutput after
    one reminder."""
    shown = [(user, (reply or "")[:MAX_ASSISTANT_CHARS] or None) for user, reply in exchanges]
    return await ask(
        llm,
        instructions.extraction_messages(shown),
        parse_facts,
        reminder=instructions.EXTRACTION_REMINDER,
        what="fact extraction",
        timeout_s=timeout_s,
        temperature=0.1,
        schema=FACTS_SCHEMA,
    )


def parse_facts(raw: str) -> list[Extracted]:
    """Accept a JSON array, one object, or `{"facts": [...]}`, fenced or with prose around it.

    Raises InvalidOutput when there is no usable JSON (an empty array is a valid "nothing").
    """
    items = instructions.answer_items(
        raw,
        is_item=lambda v: any(isinstance(v.get(k), str) for k in _TEXT_KEYS),
        list_keys=_LIST_KEYS,
    )
    candidates: list[Extracted] = []
    seen: set[str] = set()
    for item in items:
        candidate = _candidate(item)
        if candidate is None or _repeat_key(candidate.content) in seen:
            continue
        seen.add(_repeat_key(candidate.content))
        candidates.append(candidate)
    if items and not candidates and not all(_is_blank(i) for i in items):
        raise InvalidOutput(f"none of the {len(items)} item(s) is a fact", raw)
    return candidates[:MAX_FACTS]


def _candidate(item: Any) -> Extracted | None:
    exchange = None
    if isinstance(item, str):
        text, kind = item, None
    elif isinstance(item, dict):
        text = next((item[k] for k in _TEXT_KEYS if isinstance(item.get(k), str)), "")
        kind = item.get("type", item.get("category"))
        exchange = _number(item.get("exchange"))
    else:
        return None
    text = " ".join(text.split())
    if not MIN_FACT_CHARS <= len(text) <= MAX_FACT_CHARS:
        return None
    if text[-1] not in ".!?\"'”":
        text += "."
    return Extracted(text[0].upper() + text[1:], _category(kind), exchange)


def _number(value: Any) -> int | None:
    """An exchange number as models write it (2 or "2"); None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _category(kind: Any) -> str:
    word = re.sub(r"[^a-z]", "", str(kind or "").lower())
    if word.startswith(("proced", "routine", "howto")):
        return PROCEDURAL
    for known in FACT_TYPES:
        if word.startswith(known[:5]):  # "preferences", "personal_info", "events", "knowledge"
            return known
    return "knowledge"


def _is_blank(item: Any) -> bool:
    return item in (None, "", {}, [])


def _repeat_key(text: str) -> str:
    """A fact as the parser's repeat check sees it: case, spacing and edge punctuation ignored.

    Looser than `dedup.normalize` (the content hash's form, which also folds inner punctuation
    and Unicode forms): the parser only drops what a model plainly said twice in one answer;
    near repeats are the writer's to merge.
    """
    return _EDGE_PUNCT.sub("", _SPACES.sub(" ", text).strip()).lower()
