"""The facts one exchange proposes: LLM and heuristic candidates merged, validated, de-duplicated
(extraction modes: docs/memory.md, "Jobs").

In `hybrid` mode the model's facts lead, and a heuristic fact joins only when no model fact
already covers it (most of its words, or the same subject and attribute), so the rules fill
gaps instead of restating what the model said in other words.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lobug.memory.extract import llm as extraction
from lobug.memory.extract import procedures
from lobug.memory.extract.heuristics import extract_candidates
from lobug.memory.table.dedup import dedupe_batch
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.fact_keys import subject_attribute
from lobug.memory.write.judge import covers
from lobug.memory.write.validator import RejectCounter, validate_fact

# The model's categories (seed 004) set the importance; the rules carry their own.
LLM_IMPORTANCE = {
    "personal": 0.7,
    "preference": 0.6,
    "event": 0.5,
    "knowledge": 0.5,
    extraction.PROCEDURAL: 0.6,
}
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


def from_llm(found: Iterable[extraction.Extracted], said: str) -> list[Candidate]:
    """The model's items; a `procedural` one is a procedure (seed 001 §12), not a fact, when the
    user's words (`said`) describe one; else the model's label is a guess, and the item a
    preference fact."""
    procedure = procedures.cued(said)
    out = []
    for c in found:
        category = c.category
        if category == extraction.PROCEDURAL and not procedure:
            category = "preference"
        kind = "procedural" if category == extraction.PROCEDURAL else "fact"
        out.append(Candidate(c.content, category, LLM_IMPORTANCE.get(category, 0.5), (), kind))
    return out


def heuristic(user_text: str) -> list[Candidate]:
    """The fact rules' candidates, then the procedures the turn describes."""
    facts = [
        Candidate(c.content, _rule_category(c.category), c.importance, c.rules)
        for c in extract_candidates(user_text)
    ]
    return facts + procedures.procedural_candidates(user_text)


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


def validated(candidates: Iterable[Candidate]) -> tuple[list[Candidate], RejectCounter]:
    """Candidates that pass the writing constraints (tidied), intra-batch exact duplicates
    dropped (seed 003 level 1); the accepted ones and the rejections by reason counted (the
    validator's pass rate in /v1/stats)."""
    kept: list[Candidate] = []
    tally = RejectCounter()
    for cand in candidates:
        result = tally.record(validate_fact(cand.content, cand.kind))
        if not result.ok:
            continue
        kept.append(Candidate(result.text, cand.category, cand.importance, cand.rules, cand.kind))
    return dedupe_batch(kept), tally


def _covering(found: Candidate, model: Sequence[Candidate]) -> int | None:
    key = subject_attribute(found.content)
    for index, cand in enumerate(model):
        if key is not None and key == subject_attribute(cand.content):
            return index
        if covers(cand.content, found.content):
            return index
    return None
