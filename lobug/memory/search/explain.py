"""Why a memory ranks where it does (seed 000 `why`): score terms, list ranks, history.

With a query, the memory is ranked by the very pipeline `query()` uses (`search.rank_all`,
same request defaults, same weights, same clock), so the explained score and rank are the ones
`query()` returned. Without one, the score is the memory's own part: no relevance, and no
relation boost (that needs other candidates). With a query and its vector, `similarity` is
the cosine similarity a query's `threshold` is compared with.

The ranking covers only the caller's `stores` and `categories` (what /v1/query would search
for that caller): `rank` and `candidates` counted over memories the caller may not see would
tell it whether a hidden memory matches a guessed query.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lobug.access import STORES
from lobug.memory.graph import relations
from lobug.memory.query import QueryRequest, Reach
from lobug.memory.search.corpus import MEMORIES
from lobug.memory.search.runner import Plan, Similarity, memory_sources, rank_all
from lobug.memory.search.scoring import Fused, ScoringWeights, rescore
from lobug.storage.sqlite import placeholders

DECISIONS = 10
# Upkeep noise: retrievals wrote a HIT row each until issue 42 (now only `hits` counts them);
# a database from before holds them until the nightly GC forgets them (`upkeep/retention.py`).
QUIET_EVENTS = ("HIT",)


def request_for(
    query: str,
    kind: str,
    user_id: str,
    *,
    stores: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
) -> QueryRequest:
    """The request `why(query=…)` ranks with: query()'s defaults, for the memory's kind, within
    the caller's stores (None: every store) and categories (None: every category)."""
    return QueryRequest(
        query=query,
        kinds=[kind],
        reach=Reach(
            user_id=user_id,
            stores=STORES if stores is None else tuple(stores),
            categories=None if categories is None else tuple(categories),
        ),
    )


def explain(
    conn: Any,
    memory_id: int,
    *,
    user_id: str,
    query: str | None,
    vector: Sequence[float] | None,
    now: float,
    weights: ScoringWeights,
    stores: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    if row is None or row["user_id"] != user_id:
        return None
    rank: int | None = None
    candidates = 0
    score: dict[str, Any] | None = None
    if query is not None:
        request = request_for(query, row["kind"], user_id, stores=stores, categories=categories)
        plan = Plan.at(request, weights, now)
        ranked = rank_all(conn, plan, vector, now=now)
        candidates = len(ranked)
        for position, item in enumerate(ranked, start=1):
            if item.corpus is MEMORIES and item.hit.id == memory_id:
                rank, score = position, item.explain()
                break
    if score is None:
        score = rescore(Fused(memory_id, 0.0, 0.0, {}), row, weights, now)[1].as_dict()
    similarity = None
    if query is not None and vector is not None:
        # What a query's `threshold` compares: the same number its results' explain shows.
        # With the plan's reads: what its KNNs found, as the query's cut took it.
        similarity = Similarity(conn, vector, plan.reads).of(MEMORIES, memory_id)
    score["similarity"] = similarity
    own = weights.salience.score(row, now)
    return {
        "id": memory_id,
        "kind": row["kind"],
        "content": row["content"],
        "category": row["category"],
        "store": row["store"],
        "status": row["status"],
        "layer": row["layer"],
        "pinned": bool(row["pinned"]),
        "importance": row["importance"],
        "confidence": row["confidence"],
        "hits": row["hits"],
        "mention_count": row["mention_count"],
        "age_days": own.age_days,
        "last_accessed": row["last_accessed"],
        "created_at": row["created_at"],
        "query": query,
        "similarity": similarity,  # cosine similarity to the query (None: no vector for it)
        "rank": rank,
        "candidates": candidates,
        "score": score,
        "memory_score": own.as_dict(),  # the seed-000 score the GC uses (its λ)
        "rules": json.loads(row["rules"] or "[]"),
        "pii": json.loads(row["pii"] or "[]"),
        "supersedes": row["supersedes"],
        "superseded_by": _superseded_by(conn, memory_id),
        "sources": list(memory_sources(conn, [memory_id]).get(memory_id, ())),
        "relations": relations.strongest(conn, memory_id),
        "derived_from": relations.derived_from(conn, memory_id),
        "decisions": decisions(conn, memory_id),
    }


def decisions(conn: Any, memory_id: int, limit: int = DECISIONS) -> list[dict[str, Any]]:
    """The memory's latest history events (promoted, archived, merged, …), newest first."""
    marks = placeholders(QUIET_EVENTS)
    rows = conn.execute(
        f"SELECT event, old_value, new_value, actor, meta, ts FROM history WHERE memory_id = ?"
        f" AND event NOT IN ({marks}) ORDER BY id DESC LIMIT ?",
        (memory_id, *QUIET_EVENTS, limit),
    ).fetchall()
    return [{**dict(r), "meta": json.loads(r["meta"] or "{}")} for r in rows]


def _superseded_by(conn: Any, memory_id: int) -> int | None:
    row = conn.execute(
        "SELECT id FROM memories WHERE supersedes = ? ORDER BY id DESC LIMIT 1", (memory_id,)
    ).fetchone()
    return None if row is None else int(row[0])
