"""What a turn asks and what it says: its question sentences and the rest.

"That sounds great! What's your favorite movie?" shares "favorite movie" with a question about
someone's favourite movie, but says nothing of it: the reply does. The search therefore ranks
a turn that only asks below what was said (`scoring.status_weight`) and, in the lead, counts a
turn's words only where it states them (`context.context_scores`); the question a reply answers
still counts by what it asks.
"""

from __future__ import annotations

import re

ASKING_WORDS = 8  # fewer words than this besides its questions: the turn only asks
SENTENCE = re.compile(r"[^.!?]+[.!?]*")


# A question that asks to keep something says it: "Can you remember that Jen's birthday is on
# the 3rd of May?" is a statement put politely to an assistant, not a question about it.
KEEP = re.compile(r"\b(?:remember|remind|note|forget|keep in mind|write down|save)\b", re.I)


def statements(text: str) -> str:
    """The text without its questions (sentences ending in "?" that do not ask to keep
    something: `KEEP`)."""
    return " ".join(
        s for s in SENTENCE.findall(text) if not s.strip().endswith("?") or KEEP.search(s)
    )


def only_asks(text: str) -> bool:
    """Whether a turn asks and says next to nothing besides: fewer than ASKING_WORDS words
    outside its questions ("That sounds great! What's your favorite movie?")."""
    return "?" in text and len(statements(text).split()) < ASKING_WORDS
