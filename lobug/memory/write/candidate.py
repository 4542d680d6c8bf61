"""A proposed memory: what extraction, the heuristics and an explicit remember hand to reconcile."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    content: str
    category: str | None  # None: uncategorised (a remembered memory may have none)
    importance: float  # 0..1, as in the memories table
    rules: tuple[str, ...]  # rule ids that fired, for explain
    kind: str = "fact"
