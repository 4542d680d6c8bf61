"""The memory query interface every door uses (/v1, CLI, prompt): request, filters, result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KINDS = ("fact", "summary", "reflection", "insight", "procedural", "episode")
EPISODE = "episode"  # a raw turn, searched in `turns` rather than `memories`
CHARS_PER_TOKEN = 4
MAX_QUERY_CHARS = 2000  # what any door accepts as a query, and what is embedded of it


class InvalidMemory(ValueError):
    """A memory text the writing constraints reject (seed 001 §9); `reason` names the rule."""

    def __init__(self, reason: str, message: str | None = None) -> None:
        super().__init__(message or f"memory rejected: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class QueryFilters:
    user_id: str = "default"
    session_id: str | None = None  # only memories/turns from this session
    role: str | None = None  # for episodes (turns): user|assistant
    pinned: bool | None = None
    importance_min: float | None = None
    importance_max: float | None = None
    updated_after: float | None = None  # epoch seconds
    updated_before: float | None = None
    layer: str | None = None  # mid|long
    # Archived memories stay findable (they only leave the prompt's default set); a
    # soft-deleted one never is (search.runner.HIDDEN_STATUSES).
    status: tuple[str, ...] = ("active", "archived")
    superseded: bool = True  # False: leave out facts a newer statement replaced
    agent_id: str | None = None  # who wrote it (seed 001 §6.1)
    run_id: str | None = None
    actor_id: str | None = None
    # The people index (seed 002): only memories linked to a person entity of this name or
    # alias (any case); episodes have no entity links and drop out.
    person: str | None = None


@dataclass(frozen=True)
class QueryRequest:
    text: str
    kinds: tuple[str, ...] = ("fact",)  # fact|summary|reflection|insight|procedural|episode
    # None = no category filter (already allowlist-checked by the caller)
    categories: tuple[str, ...] | None = None
    stores: tuple[str, ...] = ("private", "shared", "social")  # already trust-checked
    filters: QueryFilters = field(default_factory=QueryFilters)
    top_k: int = 5
    # Seed 001 §6: drop results whose cosine similarity to the query is below (needs vectors).
    threshold: float | None = None
    min_score: float | None = None  # drop results whose final fused score is below
    budget_tokens: int | None = None  # ~4 chars/token; stop after the budget, at least one
    exclude_session_id: str | None = None


@dataclass(frozen=True)
class QueryResult:
    id: int  # memory id, or turn id for kind "episode"
    kind: str
    category: str | None
    text: str
    score: float
    store: str
    sources: tuple[dict[str, Any], ...]  # ({"turn_id": int, "ref": str | None}, ...)
    explain: dict[str, Any]  # the per-term breakdown (same shape as why()["score"])
    status: str = "active"  # a memory's: active | archived (a turn is always active)
    valid_until: float | None = None  # set when a newer statement replaced this fact

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "category": self.category,
            "text": self.text,
            "score": self.score,
            "store": self.store,
            "status": self.status,
            "valid_until": self.valid_until,
            "sources": [dict(s) for s in self.sources],
            "explain": self.explain,
        }


def tokens_of(text: str) -> int:
    """The budget's cost of a text: ~4 characters per token, at least one."""
    return max(1, -(-len(text) // CHARS_PER_TOKEN))
