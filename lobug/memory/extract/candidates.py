"""The facts one exchange proposes: LLM and heuristic candidates merged, validated, de-duplicated.

Modes (`memory.extraction_mode`, seed 000): `heuristic` uses the regex rules only, `llm` the
model only, `hybrid` both — the model's facts lead, and a heuristic fact joins only when no
model fact already covers it (most of its words, or the same subject and attribute), so the
rules fill gaps instead of restating what the model said in other words. When the model fails
(unreachable after retries, or nonsense twice) the heuristic facts stand in for that exchange.

Every candidate passes the writing validator (seed 001 §9); rejections are counted per reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from lobug.memory.extract import llm as extraction
from lobug.memory.extract.heuristics import extract_candidates
from lobug.memory.store.dedup import dedupe_batch
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.fact_keys import subject_attribute
from lobug.memory.write.judge import covers
from lobug.memory.write.validator import validate_fact

__all__ = ["Candidate", "from_llm", "heuristic", "merge", "validated"]

# The model's categories (seed 004) set the importance; the rules carry their own.
LLM_IMPORTANCE = {"personal": 0.7, "preference": 0.6, "event": 0.5, "knowledge": 0.5}
# The rules' categories in the vocabulary of the category allowlists (lobug.access), so a
# supervisor token sees heuristic facts as it sees the model's.
RULE_CATEGORIES = {
    "profile": "profile",
    "state": "personal",
    "work": "personal",
    "health": "personal",
    "relationships": "relationships",
    "preference": "preference",
    "plan": "event",
    "habit": "personal",
}


def from_llm(found: Iterable[extraction.Candidate]) -> list[Candidate]:
    return [
        Candidate(c.content, c.category, LLM_IMPORTANCE.get(c.category, 0.5), ()) for c in found
    ]


def heuristic(user_text: str) -> list[Candidate]:
    return [
        Candidate(c.content, _rule_category(c.category), c.importance, c.rules)
        for c in extract_candidates(user_text)
    ]


def _rule_category(category: str | None) -> str | None:
    return None if category is None else RULE_CATEGORIES.get(category, category)


def merge(model: Sequence[Candidate], rules: Sequence[Candidate]) -> list[Candidate]:
    """Model facts first (with the rules that agree with them), then uncovered rule facts."""
    merged = list(model)
    extra: list[Candidate] = []
    for found in rules:
        index = _covering(found, merged)
        if index is None:
            extra.append(found)
            continue
        agreed = merged[index]
        rule_ids = tuple(dict.fromkeys((*agreed.rules, *found.rules)))
        merged[index] = Candidate(
            agreed.content, agreed.category, agreed.importance, rule_ids, agreed.kind
        )
    return merged + extra


def validated(candidates: Iterable[Candidate]) -> tuple[list[Candidate], Counter[str]]:
    """Candidates that pass the writing constraints (tidied), intra-batch exact duplicates
    dropped (seed 003 level 1); the rejections counted by reason."""
    kept: list[Candidate] = []
    rejected: Counter[str] = Counter()
    for cand in candidates:
        result = validate_fact(cand.content, cand.kind)
        if not result.ok:
            rejected[result.reason or "unknown"] += 1
            continue
        kept.append(Candidate(result.text, cand.category, cand.importance, cand.rules, cand.kind))
    return dedupe_batch(kept), rejected


def _covering(found: Candidate, model: Sequence[Candidate]) -> int | None:
    key = subject_attribute(found.content)
    for index, cand in enumerate(model):
        if key is not None and key == subject_attribute(cand.content):
            return index
        if covers(cand.content, found.content):
            return index
    return None
