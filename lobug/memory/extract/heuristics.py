"""The seed-000 heuristic extractor: regex rules turning user sentences into third-person facts."""

from __future__ import annotations

import re

from lobug.memory.extract.rules import RULES
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.validator import validate_fact

_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_MONTH = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
TIME_RULES: dict[str, re.Pattern[str]] = {
    "time.weekday": re.compile(rf"\b(?:on |this |next |last )?{_WEEKDAY}s?\b", re.I),
    "time.relative": re.compile(
        r"\b(?:tomorrow|tonight|today|this (?:morning|afternoon|evening|weekend|week|month)|"
        r"next (?:week|weekend|month|year)|in (?:a|two|three|\d+) (?:days?|weeks?|months?))\b",
        re.I,
    ),
    "time.date": re.compile(
        rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}(?:/\d{{2,4}})?|"
        rf"(?:{_MONTH})\.? \d{{1,2}}(?:st|nd|rd|th)?|\d{{1,2}}(?:st|nd|rd|th)? of (?:{_MONTH}))\b"
        rf"|\b(?:in|this|next|last) (?:{_MONTH})\b|\bat \d{{1,2}}(?::\d{{2}})? ?(?:am|pm)\b",
        re.I,
    ),
}


# "The user likes it." says nothing without the previous turn; better no fact than a vague one.
_VAGUE = re.compile(
    r"^The user(?:'s)? [\w' ]{0,20}?\b(?:it|him|her|them|that|this|those|these|"
    r"one|so|too)\.$"
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
# "Dr. Patel" is not two sentences: hide the abbreviation's dot while splitting.
_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof)\.(?= [A-Z])")
_HIDDEN_DOT = "\u2024"
# Every pattern that opens with a run of spaces starts only where the run does, and takes the
# run whole (`(?<!\s)\s*+`): else each of its characters starts a scan of the rest of it, and
# a turn of 4,000 spaces took minutes (issue 38).
_CLAUSES = re.compile(
    r"(?<!\s)\s*+(?:,|;|\band\b|\bbut\b|\bso\b|\balso\b)\s+(?=(?:I|I'm|I've|I'll|my|we|we're)\b)",
    re.I,
)
_QUESTION_START = re.compile(
    r"^(?:do|does|did|what|where|when|who|why|how|can|could|would|should|is|are|will|which)\b",
    re.I,
)
_LEAD_IN = re.compile(
    r"^(?:(?:oh|well|so|yeah|yes|no|ok|okay|hey|hi|um|uh|btw|also|and|but|"
    r"actually|anyway|by the way|just so you know|fyi|remember that|"
    r"remember|note that|for the record)\b[,!]?\s*)+",
    re.I,
)


def extract_candidates(text: str) -> list[Candidate]:
    """Third-person fact candidates from the user's words in one turn."""
    text = _ABBREVIATION.sub(lambda m: m[1] + _HIDDEN_DOT, text.replace("’", "'"))
    found: list[Candidate] = []
    seen: set[str] = set()
    for sentence in _SENTENCES.split(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?"):
            continue
        for clause in _CLAUSES.split(sentence):
            candidate = _match_clause(_LEAD_IN.sub("", clause.strip(" .!,;")))
            if candidate is not None and candidate.content.lower() not in seen:
                seen.add(candidate.content.lower())
                found.append(candidate)
    return found


def _match_clause(clause: str) -> Candidate | None:
    if not clause or _QUESTION_START.match(clause):
        return None
    times = tuple(rule_id for rule_id, pattern in TIME_RULES.items() if pattern.search(clause))
    for rule in RULES:
        if rule.needs_time and not times:
            continue
        match = rule.pattern.search(clause)
        if match is None:
            continue
        content = rule.rewrite(match)
        if content is None or _VAGUE.search(content):
            continue
        result = validate_fact(content.replace(_HIDDEN_DOT, "."))
        if not result.ok:
            continue
        return Candidate(result.text, rule.category, rule.importance, (rule.id, *times))
    return None
