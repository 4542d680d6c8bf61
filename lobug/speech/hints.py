"""Recognition hints: the words a caller's household uses (names, places), handed to Whisper.

A generic model cannot guess that the puppy is "Biscuit" or the cat "Pirukas". Whoever knows
those words (the memory, wired in lobug/app.py) is a `VocabularySource`: given the caller's
trust, the terms it may hear about, most important first. Speech never asks the memory itself
(speech is a lower layer); it only turns the terms into faster-whisper options.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

# Trust level ("full", "inner", "familiar", "public") → terms, most important first.
VocabularySource = Callable[[str], Awaitable[Sequence[str]]]
HintMode = Literal["hotwords", "prompt", "off"]

# Whisper's BPE spends about one token per 3-4 characters of a rare name, plus the separator.
_CHARS_PER_TOKEN = 3.5


@dataclass(frozen=True)
class Hints:
    """What one transcription is given: faster-whisper's `hotwords` or `initial_prompt`."""

    hotwords: str | None = None
    initial_prompt: str | None = None

    @property
    def empty(self) -> bool:
        return not (self.hotwords or self.initial_prompt)


NO_HINTS = Hints()


def estimate_tokens(term: str) -> int:
    """A cheap upper-ish estimate of the tokens a term costs in the hint, separator included."""
    return math.ceil(len(term) / _CHARS_PER_TOKEN) + 1


def bounded_terms(terms: Sequence[str], max_tokens: int) -> list[str]:
    """The terms in order, without duplicates (any case), until `max_tokens` is spent."""
    kept: list[str] = []
    seen: set[str] = set()
    spent = 0
    for term in terms:
        term = " ".join(term.split())
        if not term or term.lower() in seen:
            continue
        cost = estimate_tokens(term)
        if spent + cost > max_tokens:
            break  # ranked: a later, cheaper term is also a less important one
        kept.append(term)
        seen.add(term.lower())
        spent += cost
    return kept


def hints_for(terms: Sequence[str], mode: HintMode, max_tokens: int) -> Hints:
    """The terms as the configured hint, bounded: "Biscuit, Oliver, Rosalind." A list that
    ends like a sentence did as well as a label or a made-up sentence around it and adds no
    words Whisper could echo (docs/benchmarks.md). The two forms are never combined: given both,
    Whisper repeated the list as if it had been said."""
    kept = bounded_terms(terms, max_tokens) if mode != "off" else []
    if not kept:
        return NO_HINTS
    text = ", ".join(kept) + "."
    return Hints(hotwords=text) if mode == "hotwords" else Hints(initial_prompt=text)
