"""Procedural memory at extraction (seed 001 §12): "how I like things done" — routines, step
lists, preferences about procedure — as numbered imperative steps, kind `procedural`.

Detected only on clear cues (high confidence, as the seed asks): "my morning routine is …",
"when I make coffee, I first …, then …", "the way I like to … is …", "to …, first …, then …".
Whole sentences are read, not the clauses the fact rules split them into: the steps belong
together.
"""

from __future__ import annotations

import re

from lobug.memory.write.candidate import Candidate
from lobug.memory.write.validator import validate_fact

KIND = "procedural"
CATEGORY = "procedural"
IMPORTANCE = 0.6
MAX_STEPS = 8
_TASK = r"(?P<task>[\w' -]{3,60}?)"
_HOW = r"(?P<how>.+)"
PATTERNS: list[tuple[str, re.Pattern[str], str]] = [
    (
        "procedure.routine",
        re.compile(rf"\bmy (?P<task>[\w' -]{{0,30}}?routine) is {_HOW}", re.I),
        "The user's {task}",
    ),
    (
        "procedure.when",
        re.compile(
            rf"\b(?:when|whenever|every time) I {_TASK},\s*I (?:always |usually |like to |"
            rf"prefer to )*(?P<how>(?:first\b).+|.+\bthen\b.+)",
            re.I,
        ),
        "How the user likes to {task}",
    ),
    (
        "procedure.the_way",
        re.compile(rf"\b(?:the way|how) I like (?:to )?{_TASK},? is (?:to )?{_HOW}", re.I),
        "How the user likes to {task}",
    ),
    (
        "procedure.to_do",
        re.compile(rf"^(?:to|for) {_TASK},\s*(?:I )?(?:always )?first {_HOW}", re.I),
        "How the user likes to {task}",
    ),
]
_STEP_SPLIT = re.compile(
    r"(?<!\s)\s*+(?:,\s*(?:and\s+)?then|;\s*(?:then\s+)?|\bthen\b|,\s*after that,?|"
    r",?\s*and finally|,\s*finally|,\s*next,?|,\s*and\s+(?=I\b))\s*",
    re.I,
)
_STEP_LEAD = re.compile(r"^(?:and |first(?:ly)?,? |finally,? |next,? |after that,? )+", re.I)
_I_VERB = re.compile(r"^I (?:always |usually |like to |prefer to )*", re.I)
_PRONOUNS = [(r"\bmy\b", "their"), (r"\bme\b", "them"), (r"\bmyself\b", "themselves")]


# What a user says when they describe how they do something: a sequence, a routine, a way.
_CUE = re.compile(
    r"\b(?:first|then|after that|finally|step|steps|routine|the way I|how I (?:like|do|make)|"
    r"remember how)\b",
    re.I,
)


def cued(text: str) -> bool:
    """Whether the user's words describe a procedure (seed 001 §12: one is kept only on a clear
    cue): a rule matches, or they speak in steps, of a routine or of their way of doing it."""
    return bool(_CUE.search(text)) or any(p.search(text) for _, p, _ in PATTERNS)


def procedural_candidates(text: str) -> list[Candidate]:
    """The procedures a user's turn describes (usually none)."""
    found: list[Candidate] = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text.replace("’", "'")):
        sentence = sentence.strip().rstrip(".!")
        if not sentence or sentence.endswith("?"):
            continue
        for rule_id, pattern, lead in PATTERNS:
            match = pattern.search(sentence)
            if match is None:
                continue
            candidate = _candidate(rule_id, lead, match["task"], match["how"])
            if candidate is not None:
                found.append(candidate)
                break
    return found


def steps_of(how: str) -> list[str]:
    steps = []
    for raw in _STEP_SPLIT.split(how):
        step = _I_VERB.sub("", _STEP_LEAD.sub("", raw.strip(" ,;."))).strip(" ,;.")
        for pattern, replacement in _PRONOUNS:
            step = re.sub(pattern, replacement, step, flags=re.I)
        if step and not re.search(r"\b(?:I|I'm|we|you)\b", step, re.I):
            steps.append(step[0].lower() + step[1:])
    return steps[:MAX_STEPS]


def _candidate(rule_id: str, lead: str, task: str, how: str) -> Candidate | None:
    steps = steps_of(how)
    task = " ".join(task.split()).strip(" ,")
    if len(steps) < 2 and rule_id != "procedure.the_way":
        return None  # one step is a preference, which the fact rules keep
    if not steps or re.search(r"\b(?:I|you)\b", task, re.I):
        return None
    for pattern, replacement in _PRONOUNS:
        task = re.sub(pattern, replacement, task, flags=re.I)
    body = "; ".join(f"{n}) {step}" for n, step in enumerate(steps, 1))
    result = validate_fact(f"{lead.format(task=task)}: {body}.", KIND)
    if not result.ok:
        return None
    return Candidate(result.text, CATEGORY, IMPORTANCE, (rule_id,), KIND)
