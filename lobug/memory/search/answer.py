"""The kind of answer a question asks for, and whether a turn could give it.

"Where does Jen live?" is answered by a turn that names a place ("She moved to Denver in
May"), "How many kids does Sam have?" by one that tells an amount ("We've got three now"), as
"When did…" is by a turn that tells a time (`when.asks_when`, `when.says_when`). These are the
expected answer types of question answering. Here they only rank: among the context list's
turns, the ones that could hold such an answer form one more list (`runner.answering`:
`placed`, `counted`).

A turn names a place when it holds a capitalised word inside a sentence that is not the name
of someone talking, a month or a day: the names of places, shops, teams and titles alike.
Measured on LoCoMo and the synthetic eval: docs/retrieval-eval.md.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from lobug.memory.search.when import MONTHS, WEEKDAYS

_ASKS_WHERE = re.compile(
    r"^\W*where\b|\bwhich\s+(?:city|country|town|state|place|island|region|restaurant|store|shop)\b",
    re.I,
)
_ASKS_AMOUNT = re.compile(r"\bhow\s+(?:many|much|long|old)\b", re.I)
_TELLS_AMOUNT = re.compile(
    r"\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty"
    r"|forty|fifty|hundred|hundreds|thousand|thousands|dozen|dozens|couple|half)\b",
    re.I,
)
# A capitalised word that does not begin the text or a sentence.
_INNER_NAME = re.compile(r"(?<![.!?]\s)(?<![.!?\n])(?<!^)\b[A-Z][a-z]+")
_CALENDAR = frozenset(MONTHS) | frozenset(WEEKDAYS)


def asks_where(text: str) -> bool:
    """Whether the question asks where ("Where did…", "Which city…")."""
    return _ASKS_WHERE.search(text) is not None


def asks_amount(text: str) -> bool:
    """Whether the question asks how many, how much, how long or how old: an amount, of
    things or of time ("for three years")."""
    return _ASKS_AMOUNT.search(text) is not None


def tells_amount(text: str) -> bool:
    """Whether the text tells an amount ("3 kids", "a dozen", "twenty years")."""
    return _TELLS_AMOUNT.search(text) is not None


def names_place(text: str, speakers: Collection[str]) -> bool:
    """Whether the text names something by a proper name inside a sentence (`speakers`: the
    folded words of the names of the people talking, which say who, not where)."""
    for match in _INNER_NAME.finditer(text):
        word = match.group(0).lower()
        if word not in speakers and word not in _CALENDAR:
            return True
    return False
