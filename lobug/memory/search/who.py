"""The person a question names, among the speakers of the user's imported conversations.

Turns imported from a conversation between two people may carry the speaker's name
(`turns.speaker`); a question that names one ("Which town is Liam's father based in?") then
prefers that person's turns — one more pair of ranked lists in the fusion (`runner`), the way a
named period does. Names match as whole words, case-insensitively, possessive included.
A question that joins two of them ("What do Jon and Gina both like?") is about both: it names
no one speaker, and their turns rank as any other's.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from lobug.memory.search.fts import fold, scan_words

JOINED = re.compile(r"\W*(?:and|&)\W*", re.I)  # what stands between two names asked together


def speakers(conn: Any, user_id: str) -> list[str]:
    """The named speakers of the user's turns."""
    return [
        r[0]
        for r in conn.execute(
            "SELECT DISTINCT speaker FROM turns WHERE user_id = ? AND speaker IS NOT NULL",
            (user_id,),
        )
    ]


class Speakers:
    """The named speakers of each user's turns as last read, so a query can take the names out
    of its question and start embedding it before it reads anything (`runner.run_asked`).

    The query's first read checks them against the turns (the index `idx_turns_speaker`, a
    few pages): turns written since with a new speaker, or deleted, are seen by the very query
    that follows, in any process. The word counts beside them (`fts.word_rows`) are kept for a
    minute instead: a count a little old moves a score a little, a name missed changes the
    question."""

    def __init__(self) -> None:
        self._names: dict[str, tuple[str, ...]] = {}

    def known(self, user_id: str) -> tuple[str, ...] | None:
        """The speakers last read for the user; None before the first read."""
        return self._names.get(user_id)

    def read(self, conn: Any, user_id: str) -> tuple[str, ...]:
        """The speakers as the turns say now, remembered."""
        names = tuple(speakers(conn, user_id))
        self._names[user_id] = names
        return names


def name_words(names: Iterable[str]) -> set[str]:
    """The words of the speakers' names, folded as the index folds them: they say who, not
    what, so the word lists leave them out (`context`, `who`)."""
    return {fold(w) for name in names for w in scan_words(name)}


def named_speaker(names: Sequence[str], text: str) -> str | None:
    """The first of the speakers `names` that the text names; None when none, or when it
    joins two of them with "and" ("Jon and Gina", "both Joanna & Nate"): asked about both,
    the turns of either answer."""
    found = sorted((m.start(), m.end(), name) for name in names if (m := _word(name).search(text)))
    if any(JOINED.fullmatch(text[a[1] : b[0]]) for a, b in itertools.pairwise(found)):
        return None
    return found[0][2] if found else None


def without_speakers(text: str, names: Sequence[str]) -> str:
    """The question as its meaning is embedded: without the speakers' names (possessive
    included). Who it asks about is the `who` lists' part; in the vector the name matches the
    turns that greet or thank that person ("Thanks, Caroline!") instead of what was asked. On
    LoCoMo conversations 1–5 MiniLM alone finds a cited turn in its first 10 for 0.68 of the
    questions this way, 0.34 with the names."""
    kept = text
    for name in names:
        kept = re.sub(rf"(?<!\w){re.escape(name)}(?:['’]s)?(?!\w)", " ", kept, flags=re.I)
    kept = " ".join(kept.split())
    return kept if re.search(r"\w", kept) else text  # only a name: embed it as asked


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", re.I)
