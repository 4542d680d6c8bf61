"""The LLM NER provider (seed 003's `llm`): the memory model names the entities of a few notes.

Only the nightly enrichment asks it (the `accurate` strategy, graph/ner.py), a background call
in the LLM lane like every memory job's: it waits for a quiet conversation and a turn preempts
it. On a Pi the model writes ~5 tokens a second, so one call takes `BATCH` notes (its prompt
read once for them all) and the answer is compact: per note number, a list of [name, type]
pairs, bounded by `TOKENS_PER_NOTE` a note. A name is kept only where the note says it (any
case): the model cannot add a name that is not there, and its span is the note's own words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial
from typing import Any

from lobug.llm.ask import InvalidOutput, ask, plain_text
from lobug.llm.client import LLMClient, OutputSchema
from lobug.llm.replies import json_value
from lobug.memory.graph.ner import (
    COMMON_WORDS,
    Mention,
    Ner,
    Provider,
    RegexProvider,
    load_spacy,
)

TASK = "ner"
BATCH = 10  # notes per call: 50 candidates a night are 5 calls of the upkeep budget
NOTE_CHARS = 400  # of each note shown; a name past it is left to the regexes
TOKENS_PER_NOTE = 40  # ~3 entities a note; a model that rambles past it is cut short
MAX_NAME_CHARS = 60
TYPES = {
    "person": "person",
    "organization": "organization",
    "location": "location",
    "place": "location",
    "project": "other",
    "other": "other",
}
_IGNORED = frozenset({"user", "the user", "lo-bug", "lobug", "assistant"})

SYSTEM = """\
You find named entities in short notes about the user of Lo-Bug, a voice assistant. For each \
numbered note, list the people, pets, organizations, places and projects it names, as written \
in the note. Not the user, not Lo-Bug, no dates, no common nouns. Types: person, organization, \
location, project. Output only JSON, one key per note: {"1": [["Jen Park", "person"]], "2": []}"""

REMINDER = (
    'That was not valid. Reply again with only the JSON object, e.g. {"1": [["Jen", "person"], '
    '["Lisbon", "location"]], "2": []}: one key per note number. No prose, no code fences.'
)

SCHEMA = OutputSchema(
    TASK,
    {
        "type": "object",
        "additionalProperties": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
        },
    },
)


def messages(texts: Sequence[str]) -> list[dict[str, str]]:
    notes = "\n".join(f"{i}. {' '.join(t.split())[:NOTE_CHARS]}" for i, t in enumerate(texts, 1))
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": notes}]


class LlmProvider:
    name = "llm"

    def __init__(self, llm: LLMClient, *, timeout_s: float) -> None:
        self.llm = llm
        self.timeout_s = timeout_s

    async def extract_many(self, texts: Sequence[str]) -> list[list[Mention]]:
        """Raises LLMUnavailable (an outage), InvalidOutput (nonsense twice), or Preempted."""
        found: list[list[Mention]] = []
        for start in range(0, len(texts), BATCH):
            batch = list(texts[start : start + BATCH])
            found += await ask(
                self.llm,
                messages(batch),
                partial(parse, texts=batch),
                reminder=REMINDER,
                what=TASK,
                timeout_s=self.timeout_s,
                schema=SCHEMA,
                max_tokens=TOKENS_PER_NOTE * len(batch) + 16,
            )
        return found


def parse(raw: str, texts: Sequence[str]) -> list[list[Mention]]:
    """Each note's entities from the answer; names the note does not contain are dropped."""
    try:
        answer = json_value(plain_text(raw))
    except ValueError:
        raise InvalidOutput("not JSON", raw) from None
    if not isinstance(answer, dict) or not all(str(k).strip().isdigit() for k in answer):
        raise InvalidOutput("not an object keyed by note number", raw)
    found: list[list[Mention]] = [[] for _ in texts]
    for key, items in answer.items():
        index = int(str(key).strip()) - 1
        if not 0 <= index < len(texts):
            continue
        if not isinstance(items, list):
            raise InvalidOutput(f"note {key}: not a list", raw)
        found[index] = _entities(texts[index], items)
    return found


def _entities(text: str, items: list[Any]) -> list[Mention]:
    entities = []
    for item in items:
        if isinstance(item, dict):
            item = [item.get("name"), item.get("type")]
        if not (isinstance(item, list) and len(item) >= 2):
            continue
        name, kind = (str(x or "").strip() for x in item[:2])
        entity_type = TYPES.get(kind.lower())
        if entity_type is None or not 2 <= len(name) <= MAX_NAME_CHARS:
            continue
        if name.lower() in COMMON_WORDS or name.lower() in _IGNORED:
            continue
        found = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE)
        if found is None:
            continue  # not in the note: the model's invention
        canonical = name if not name.islower() else name.title()
        entities.append(Mention(found.group(0), canonical, entity_type, found.span()))
    return entities


def load(llm: LLMClient, *, timeout_s: float, use_llm: bool) -> Ner:
    """The providers this install has: the regexes, spaCy if it loads, and the memory LLM unless
    extraction is `heuristic` (an install that keeps the model out of memory work)."""
    providers: list[Provider] = [RegexProvider()]
    spacy = load_spacy()
    if spacy is not None:
        providers.append(spacy)
    if use_llm:
        providers.append(LlmProvider(llm, timeout_s=timeout_s))
    return Ner(providers)
