"""Writing constraints for stored memories (seed 001 §9): length, one line, third person."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any

from lobug.memory.query import InvalidMemory
from lobug.memory.table.rows import bump_counter

MAX_CHARS = 280
# Summaries and reflections are paragraphs by design; only their length is bounded.
KIND_MAX_CHARS = {
    "fact": MAX_CHARS,
    "insight": MAX_CHARS,
    "procedural": 600,
    "summary": 2000,
    "reflection": 1200,
}
PERSON_CHECKED = frozenset({"fact", "insight"})

EMPTY = "empty"
TOO_LONG = "too_long"
MULTILINE = "multiline"
FIRST_PERSON = "first_person"
ADDRESSES_ASSISTANT = "addresses_assistant"
UNKNOWN_KIND = "unknown_kind"


@dataclass(frozen=True)
class ValidationResult:
    ok: bool
    text: str  # normalised (and possibly trimmed) text; what to store when ok
    reason: str | None = None


_BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,2}[.)])\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_WRAPPING_QUOTES = ('"', "'", "“", "”", "‘", "’", "`")
# Quoted speech may hold any pronoun: 'The user said "I hate Mondays".'
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|„[^“”]*[“”]|«[^»]*»|(?<![\w])'[^']*'(?![\w])")
_ABBREVIATIONS = re.compile(r"\b(?:i\.e\.|e\.g\.)", re.IGNORECASE)
_FIRST_PERSON_ANY_CASE = re.compile(
    r"\b(?:me|my|mine|myself|we|our|ours|ourselves)\b", re.IGNORECASE
)
# "us" only in lower case: "US" is the country. "I" in upper case, or a sloppy lone "i".
_FIRST_PERSON_CASED = re.compile(r"\bus\b|\bi\b|\bI\b")
# "World War I", "Elizabeth I": a capitalised word, then I, then punctuation or the end.
_ROMAN_I = re.compile(r"\b[A-Z][a-z]+ I\b(?=\s*[.,;:!?]|\s*$)")
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|yourselves)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?:[\"'”’)\]]*)(?=\s|$)")


def validate_fact(text: str, kind: str = "fact") -> ValidationResult:
    """Check (and tidy) one memory text; a rejection names its reason."""
    if kind not in KIND_MAX_CHARS:
        return ValidationResult(False, text, UNKNOWN_KIND)
    lines = [line for line in (_clean(raw) for raw in text.splitlines()) if line]
    if not lines:
        return ValidationResult(False, "", EMPTY)
    if len(lines) > 1 and kind in PERSON_CHECKED:
        # Several lines are several facts; the caller splits them, we do not guess.
        return ValidationResult(False, " ".join(lines), MULTILINE)
    # Paragraph kinds keep their line breaks; a fact is one line by now.
    body = "\n".join(lines)
    if not any(ch.isalnum() for ch in body):
        return ValidationResult(False, body, EMPTY)
    limit = KIND_MAX_CHARS[kind]
    if len(body) > limit:
        trimmed = trim_to_sentences(body, limit)
        if trimmed is None:
            return ValidationResult(False, body, TOO_LONG)
        body = trimmed
    if kind in PERSON_CHECKED:
        visible = _ABBREVIATIONS.sub(" ", _QUOTED.sub(" ", body))
        visible = _ROMAN_I.sub(" ", visible)
        if _FIRST_PERSON_ANY_CASE.search(visible) or _FIRST_PERSON_CASED.search(visible):
            return ValidationResult(False, body, FIRST_PERSON)
        if _SECOND_PERSON.search(visible):
            return ValidationResult(False, body, ADDRESSES_ASSISTANT)
        body = _sentence_case(body, limit)
    return ValidationResult(True, body, None)


def checked(text: str, kind: str = "fact") -> str:
    """The text as stored (normalised, perhaps trimmed to whole sentences) when it meets the
    writing constraints of its kind — for what a user or an app writes (POST and PATCH
    /v1/memories, `lobug memory remember/update`); InvalidMemory naming the rule otherwise."""
    result = validate_fact(text, kind)
    if not result.ok:
        reason = result.reason or "invalid"
        raise InvalidMemory(reason, f"memory rejected: {reason.replace('_', ' ')}")
    return result.text


def count_rejection(conn: Any, reason: str) -> None:
    """A refused write in the validator's counters (`/health`, `lobug memory stats`)."""
    bump_counter(conn, "validator_rejected_total")
    bump_counter(conn, f"validator_rejected.{reason}")


def trim_to_sentences(text: str, limit: int = MAX_CHARS) -> str | None:
    """The longest run of whole leading sentences within limit chars, or None if there is none."""
    cut = None
    for match in _SENTENCE_END.finditer(text):
        if match.end() > limit:
            break
        cut = match.end()
    return text[:cut].strip() if cut else None


class RejectCounter:
    """Counts accepted results and rejections per reason (for /health and the extract job)."""

    def __init__(self) -> None:
        self.accepted = 0
        self.rejected: Counter[str] = Counter()

    def record(self, result: ValidationResult) -> ValidationResult:
        if result.ok:
            self.accepted += 1
        else:
            self.rejected[result.reason or "unknown"] += 1
        return result

    def as_dict(self) -> dict[str, int]:
        return {"accepted": self.accepted, **dict(sorted(self.rejected.items()))}


def _clean(line: str) -> str:
    line = unicodedata.normalize("NFC", _CONTROL.sub("", line))
    line = _BULLET.sub("", " ".join(line.split()))
    # An LLM often wraps the whole fact in quotes; those are not quoted speech.
    while len(line) >= 2 and line[0] in _WRAPPING_QUOTES and line[-1] in _WRAPPING_QUOTES:
        line = line[1:-1].strip()
    return line


def _sentence_case(text: str, limit: int) -> str:
    """Capitalise the first letter and end with a full stop (if it fits) for tidy prompts."""
    if text[0].islower():
        text = text[0].upper() + text[1:]
    if text[-1] not in ".!?\"'”’)" and len(text) < limit:
        text += "."
    return text
