"""Text normalisation, content hashes, Jaccard overlap and intra-batch exact de-duplication."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

_APOSTROPHES = re.compile(r"['’‘`´]")
_NON_WORD = re.compile(r"[\W_]+")


def normalize(text: str) -> str:
    """Lowercase, punctuation removed, whitespace collapsed: the form hashes and overlap use."""
    # NFKC folds full-width and ligature forms; casefold handles ß and friends. Apostrophes are
    # deleted rather than spaced so "user's" and "users" do not differ by a stray "s" token.
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _APOSTROPHES.sub("", text)
    return " ".join(_NON_WORD.sub(" ", text).split())


def content_hash(text: str) -> str:
    """SHA-256 (hex) of the normalised text: equal for texts differing only in case/punctuation."""
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()


def tokens(text: str) -> frozenset[str]:
    return frozenset(normalize(text).split())


def jaccard(a: str, b: str) -> float:
    """|A∩B| / |A∪B| over normalised word sets; two texts with no words count as identical."""
    left, right = tokens(a), tokens(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def dedupe_batch(candidates: Iterable[T], text: Callable[[T], str] | None = None) -> list[T]:
    """Drop later candidates whose content hash equals an earlier one's (seed 003 level 1)."""
    key = text or _content
    seen: set[str] = set()
    kept: list[T] = []
    for candidate in candidates:
        digest = content_hash(key(candidate))
        if digest in seen:
            continue
        seen.add(digest)
        kept.append(candidate)
    return kept


def _content(candidate: Any) -> str:
    # Candidates arrive as strings, dicts from LLM JSON, or dataclasses with `.content`.
    if isinstance(candidate, str):
        return candidate
    if isinstance(candidate, dict):
        return str(candidate.get("content", ""))
    return str(candidate.content)
