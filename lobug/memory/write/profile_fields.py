"""The profile fields a fact can set (seed 001 §10): which, and how a fact says one.

Consent holds a field heard by voice (`consent.intercept`); the heuristic judge merges a fact
that sets one only within stricter bands (`judge.heuristic_label`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lobug.memory.write.fact_keys import parse_fact

SENSITIVE = ("preferred_name", "pronouns", "city", "language")
MULTI = ("goals",)  # several values at once: a new one adds to the old ones, replaces none

# parse_fact's attribute (subject "user") -> field.
_ATTRIBUTES = {
    "name": "preferred_name", "preferred name": "preferred_name", "nickname": "preferred_name",
    "pronouns": "pronouns", "preferred pronouns": "pronouns", "pronoun": "pronouns",
    "residence": "city", "city": "city", "home city": "city",
    "language": "language", "preferred language": "language", "native language": "language",
    "first language": "language", "mother tongue": "language",
    "tone": "tone", "preferred tone": "tone", "preferred style": "tone",
    "communication style": "tone",
    "goal": "goals", "goals": "goals", "main goal": "goals", "aim": "goals", "ambition": "goals",
}  # fmt: skip
_V = r"(?P<v>.+?)\s*[.!]?$"
# Phrasings fact_keys does not key (one value per pattern, the subject is the user).
_PHRASES: list[tuple[str, re.Pattern[str]]] = [
    ("preferred_name", re.compile(rf"^The user (?:prefers|wants|likes) to be called {_V}")),
    ("pronouns", re.compile(r"^The user (?:uses|prefers|goes by) (?:the )?(?P<v>[a-z]+/[a-z]+"
                            r"(?:/[a-z]+)?) pronouns?\s*[.!]?$", re.I)),
    ("language", re.compile(r"^The user (?:prefers to (?:speak|talk)(?: in)?|speaks|wants to "
                            r"(?:speak|talk) in) (?P<v>[A-Z][a-z]+)(?: language)?\s*[.!]?$")),
    ("tone", re.compile(r"^The user prefers (?:an? )?(?P<v>[\w -]+? (?:tone|style|answers|"
                        r"replies|responses|conversations?))\s*[.!]?$", re.I)),
    ("tone", re.compile(rf"^The user (?:prefers|wants|would like) (?:the assistant|Lo-Bug) to "
                        rf"(?:be|sound|speak|talk) {_V}", re.I)),
    ("tone", re.compile(r"^The user prefers to be addressed (?P<v>formally|informally|casually)"
                        r"\s*[.!]?$", re.I)),
    ("goals", re.compile(rf"^The user (?:has (?:a|the) goal (?:of|to)|is working towards?|aims to)"
                         rf" {_V}", re.I)),
]  # fmt: skip


@dataclass(frozen=True)
class Field:
    name: str
    value: str

    @property
    def sensitive(self) -> bool:
        return self.name in SENSITIVE


def detect(content: str) -> Field | None:
    """The profile field a third-person fact sets, or None."""
    text = " ".join(content.replace("’", "'").split())
    key = parse_fact(text)
    if key is not None and key.subject == "user" and key.value:
        name = _ATTRIBUTES.get(key.attribute)
        if name is not None:
            return Field(name, f"not {key.value}" if key.negated else key.value)
    for name, pattern in _PHRASES:
        match = pattern.match(text)
        if match:
            return Field(name, match["v"].strip(" ,"))
    return None


def norm(value: str) -> str:
    return " ".join(re.sub(r"[^\w/' -]", " ", value.casefold()).split())


def other_value(new: str, old: str) -> Field | None:
    """The field both facts set, when `new` gives it another value than `old`; else None."""
    found, held = detect(new), detect(old)
    if found is None or held is None or found.name != held.name:
        return None
    return found if norm(found.value) != norm(held.value) else None
