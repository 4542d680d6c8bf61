"""Inline retrieval for the prompt: KNN over active facts and the base memory document."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from lobug.memory import base_memory, knn

BASE_TTL_S = 30.0  # a base memory written by another process (CLI import) shows up this soon


@dataclass(frozen=True)
class Hit:
    memory_id: int
    content: str
    similarity: float  # 1 - cosine distance


def relevant_facts(
    conn: Any, vector: Sequence[float], *, user_id: str, k: int, min_similarity: float
) -> list[Hit]:
    """Top-k active facts with similarity at or above the floor (seed 004 §8), best first."""
    found = knn.nearest_facts(conn, vector, user_id=user_id, k=k, max_distance=1 - min_similarity)
    return [Hit(row.id, row.content, 1.0 - distance) for row, distance in found]


def long_term_section(base: str) -> str | None:
    base = base.strip()
    return f"[Long-term memory]\n{base}" if base else None


def relevant_section(hits: Sequence[Hit]) -> str | None:
    if not hits:
        return None
    return "[Relevant memories]\n" + "\n".join(f"- {hit.content}" for hit in hits)


def sections(base: str, hits: Sequence[Hit]) -> list[str]:
    """Seed 004 §2.3 order: long-term memory, then the relevant memories; empty ones left out."""
    return [s for s in (long_term_section(base), relevant_section(hits)) if s]


class BaseMemoryCache:
    """The base memory per user, kept in memory: it is in every prompt and changes rarely.

    Invalidated when a cascade in this process rewrites it; a TTL catches other writers.
    """

    def __init__(self, ttl_s: float = BASE_TTL_S, monotonic: Callable[[], float] = time.monotonic):
        self.ttl_s = ttl_s
        self.monotonic = monotonic
        self._entries: dict[str, tuple[str, float]] = {}

    def get(self, user_id: str) -> str | None:
        entry = self._entries.get(user_id)
        if entry is None or self.monotonic() - entry[1] > self.ttl_s:
            return None
        return entry[0]

    def put(self, user_id: str, content: str) -> None:
        self._entries[user_id] = (content, self.monotonic())

    def invalidate(self, user_id: str | None = None) -> None:
        if user_id is None:
            self._entries.clear()
        else:
            self._entries.pop(user_id, None)


class RecentVectors:
    """The last few query vectors by exact text: the user's words were embedded for retrieval
    already, so the turn's embed job need not ask the embedder again (an Ollama round trip, or
    CPU time on a Pi)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    def put(self, text: str, vector: list[float]) -> None:
        self._vectors[text] = vector
        self._vectors.move_to_end(text)
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)

    def get(self, text: str) -> list[float] | None:
        return self._vectors.get(text)


def read_context(
    conn: Any,
    vector: Sequence[float] | None,
    *,
    user_id: str,
    k: int,
    min_similarity: float,
    want_base: bool,
) -> tuple[str | None, list[Hit]]:
    """One reader round trip for the hot path: base memory (unless cached) and the KNN hits."""
    base = base_memory.get_base(conn, user_id) if want_base else None
    hits = (
        relevant_facts(conn, vector, user_id=user_id, k=k, min_similarity=min_similarity)
        if vector is not None
        else []
    )
    return base, hits
