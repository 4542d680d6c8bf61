"""The prompt's related bullets (seed 001 §2): after the search picked its facts, 1-2 current
facts tied to them by a `related_to` edge join the [Relevant memories] section, strongest edge
first, by the same category rules as the picked ones (no `none` category, `rag_length` per
category counted with the picked ones, the caller's stores and categories)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from lobug.access import UNCATEGORIZED, CategoryPolicy
from lobug.memory.graph import relations
from lobug.memory.query import QueryResult

RELATED_MAX = 2  # related bullets per prompt, at most


def related_results(
    conn: Any,
    picked: Sequence[QueryResult],
    policy: CategoryPolicy,
    *,
    user_id: str,
    stores: Sequence[str],
    categories: Collection[str] | None = None,
    skip: Collection[int] = (),
    limit: int = RELATED_MAX,
    now: float | None = None,
) -> list[QueryResult]:
    """Up to `limit` facts tied to `picked` (none of them, none of `skip`), as results whose
    `explain` says which picked fact they are tied to and how strongly."""
    ids = [r.id for r in picked if r.kind == "fact"]
    found = relations.related_facts(conn, ids, user_id=user_id, stores=stores, skip=skip, now=now)
    per = Counter(r.category or UNCATEGORIZED for r in picked)
    kept: list[QueryResult] = []
    for row, via, strength in found:
        if len(kept) >= limit:
            break
        category = row["category"] or UNCATEGORIZED
        if categories is not None and category not in categories:
            continue
        if policy.context_mode(category) == "none":
            continue
        cap = policy.rag_length(category)
        if cap is not None and per[category] >= cap:
            continue
        per[category] += 1
        kept.append(
            QueryResult(
                id=int(row["id"]),
                kind="fact",
                category=row["category"],
                text=str(row["content"]),
                score=0.0,
                store=str(row["store"]),
                sources=[],
                explain={"related_to": via, "strength": strength},
            )
        )
    return kept
