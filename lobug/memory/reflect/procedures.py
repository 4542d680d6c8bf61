"""Procedural memory in the prompt (seed 001 §12): the user's way of doing a task, when they
ask to do that task. Procedures stay out of ordinary retrieval (category `procedural` has context
`none`); here they come in only when the turn's words name the procedure's task.
"""

from __future__ import annotations

import re
from typing import Any

KIND = "procedural"
MAX_SHOWN = 2
MAX_SCANNED = 100  # a user's procedures are few; scanning them beats an index
# The user asks to do something: "help me make coffee", "let's do the weekly review".
_REQUEST = re.compile(
    r"\b(?:help me|let'?s|can you|could you|would you|please|how do i|how should i|walk me|"
    r"guide me|remind me|time to|i want to|i need to|i'?m (?:going|about) to|get ready|"
    r"start(?:ing)?|make|do|prepare|plan|set up)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z][a-z'-]{2,}")
_STOP = frozenset(
    "the and for with that this then first next finally after before when whenever how what "
    "user user's their them they likes like prefers prefer want wants always usually help let's "
    "lets can could would please you your time need going about get ready start starting make "
    "making made do does doing done prepare plan set way steps step routine".split()
)


def topic_words(text: str) -> set[str]:
    """Content words, crudely stemmed so that `make`/`making` and `bean`/`beans` meet."""
    return {_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP}


def for_task(conn: Any, user_id: str, text: str, limit: int = MAX_SHOWN) -> list[str]:
    """The user's procedures for the task this turn asks about: sharing a topic word with a
    request ("help me make coffee"), or two without one; best matches first."""
    words = topic_words(text)
    if not words:
        return []
    needed = 1 if _REQUEST.search(text) else 2
    rows = conn.execute(
        "SELECT content, importance FROM memories WHERE user_id = ? AND kind = ?"
        " AND status = 'active' AND valid_until IS NULL ORDER BY id DESC LIMIT ?",
        (user_id, KIND, MAX_SCANNED),
    ).fetchall()
    scored = []
    for content, importance in rows:
        shared = len(words & topic_words(str(content)))
        if shared >= needed:
            scored.append((shared, float(importance), str(content)))
    scored.sort(key=lambda s: (-s[0], -s[1]))
    return [content for _, _, content in scored[:limit]]


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
