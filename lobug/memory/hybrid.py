"""Hybrid retrieval: vector KNN, FTS5 BM25 and entity matches, fused by RRF, then re-scored.

Works on memories (facts, summaries, …) and on turns (episodes) alike; see `Corpus`. Each
`*_ranks` function returns ids best first, already filtered (user, status, store, category), so
the fused list never holds a row the caller may not see. The formula is in `scoring`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lobug.memory.corpus import MEMORIES, TURNS, Corpus, SearchFilter, where_clause
from lobug.memory.entities import entities_in_text
from lobug.memory.fts_query import fts_available
from lobug.memory.lexical import bm25_ranks, text_ranks
from lobug.memory.purge import has_table
from lobug.memory.scoring import Fused, RescoreBreakdown, ScoringWeights, fuse, rescore
from lobug.storage.vectors import pack

# The whole retrieval surface in one place: corpus and filter types, the lexical lists.
__all__ = [
    "MEMORIES",
    "TURNS",
    "Corpus",
    "SearchFilter",
    "SearchHit",
    "bm25_ranks",
    "entity_ranks",
    "hybrid_search",
    "text_ranks",
    "vector_knn",
    "vector_ranks",
]

VEC_MAX_K = 4096  # sqlite-vec's ceiling for `k = ?`


@dataclass(frozen=True)
class SearchHit:
    id: int
    score: float
    fused: Fused
    breakdown: RescoreBreakdown | None = None

    def explain(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "score": self.score,
            "rrf": self.fused.rrf,
            "ranks": dict(self.fused.ranks),
        }
        if self.breakdown is not None:
            data["breakdown"] = self.breakdown.as_dict()
        return data


def vector_knn(
    conn: Any,
    query_vec: Sequence[float],
    k: int,
    *,
    corpus: Corpus = MEMORIES,
    flt: SearchFilter | None = None,
    oversample: int = 4,
) -> list[tuple[int, float]]:
    """(id, cosine distance) of the k nearest visible rows, nearest first."""
    if k <= 0:
        return []
    blob = pack(query_vec)
    # vec0 cannot filter by our columns: fetch more neighbours than k, filter, and widen the
    # net while invisible rows (other users, archived, other stores) crowd out the visible.
    fetch = min(VEC_MAX_K, max(k, k * oversample))
    while True:
        near = conn.execute(
            f"SELECT {corpus.vec_key}, distance FROM {corpus.vectors}"
            f" WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (blob, fetch),
        ).fetchall()
        visible = _visible(conn, corpus, flt or SearchFilter(), [int(r[0]) for r in near])
        hits = [(int(r[0]), float(r[1])) for r in near if int(r[0]) in visible]
        if len(hits) >= k or len(near) < fetch or fetch >= VEC_MAX_K:
            return hits[:k]
        fetch = min(VEC_MAX_K, fetch * 4)


def _visible(conn: Any, corpus: Corpus, flt: SearchFilter, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    where, params = where_clause(corpus, flt)
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT d.id FROM {corpus.table} d WHERE d.id IN ({marks}) AND {where}",
        (*ids, *params),
    )
    return {int(r[0]) for r in rows}


def vector_ranks(
    conn: Any,
    query_vec: Sequence[float],
    k: int,
    *,
    corpus: Corpus = MEMORIES,
    flt: SearchFilter | None = None,
) -> list[int]:
    return [i for i, _ in vector_knn(conn, query_vec, k, corpus=corpus, flt=flt)]


def entity_ranks(
    conn: Any, query: str, k: int, *, corpus: Corpus = MEMORIES, flt: SearchFilter | None = None
) -> list[int]:
    """Rows naming the entities the query names; more of them first, then newest."""
    flt = flt or SearchFilter()
    entity_ids = entities_in_text(conn, flt.user_id, query)
    if not entity_ids:
        return []
    where, params = where_clause(corpus, flt)
    marks = ",".join("?" * len(entity_ids))
    if corpus.table == "memories":
        rows = conn.execute(
            f"SELECT d.id, COUNT(DISTINCT me.entity_id) AS n FROM memory_entities me"
            f" JOIN memories d ON d.id = me.memory_id WHERE me.entity_id IN ({marks})"
            f" AND {where} GROUP BY d.id ORDER BY n DESC, d.created_at DESC, d.id DESC LIMIT ?",
            (*entity_ids, *params, k),
        ).fetchall()
        return [int(r[0]) for r in rows]
    # Turns have no link table: an entity matches a turn whose text names it (or an alias).
    counts: dict[int, int] = {}
    for entity_id in entity_ids:
        names = _names(conn, entity_id)
        query_text = " OR ".join('"' + n.replace('"', '""') + '"' for n in names)
        matched = (
            bm25_ranks(conn, query_text, VEC_MAX_K, corpus=corpus, flt=flt)
            if (fts_available(conn, corpus.fts))
            else text_ranks(conn, " ".join(names), VEC_MAX_K, corpus=corpus, flt=flt)
        )
        for turn_id in matched:
            counts[turn_id] = counts.get(turn_id, 0) + 1
    # Newest first among equals: ids grow with time in the turns table.
    return sorted(counts, key=lambda t: (-counts[t], -t))[:k]


def _names(conn: Any, entity_id: int) -> list[str]:
    row = conn.execute(
        "SELECT canonical_name, aliases FROM entities WHERE id = ?", (entity_id,)
    ).fetchone()
    return list(dict.fromkeys([row["canonical_name"], *json.loads(row["aliases"] or "[]")]))


def hybrid_search(
    conn: Any,
    text: str,
    query_vec: Sequence[float] | None,
    k: int = 10,
    *,
    corpus: Corpus = MEMORIES,
    flt: SearchFilter | None = None,
    weights: ScoringWeights | None = None,
    depth: int = 50,
    now: float | None = None,
    lists: Sequence[str] | None = None,
) -> list[SearchHit]:
    """Fuse the ranked lists by RRF; with `now`, re-score by the memory's own signals too."""
    weights = weights or ScoringWeights()
    flt = flt or SearchFilter()
    lists = corpus.lists if lists is None else lists
    ranked: dict[str, list[int]] = {}
    if "vector" in lists and query_vec is not None and has_table(conn, corpus.vectors):
        ranked["vector"] = vector_ranks(conn, query_vec, depth, corpus=corpus, flt=flt)
    if "bm25" in lists:
        ranked["bm25"] = text_ranks(
            conn, text, depth, corpus=corpus, flt=flt, min_words=weights.bm25_min_words
        )
    if "entity" in lists:
        ranked["entity"] = entity_ranks(conn, text, depth, corpus=corpus, flt=flt)
    fused = fuse(ranked, weights.rrf_k, weights.list_weights)
    if now is None:
        return [SearchHit(f.id, f.rrf_norm, f) for f in fused[:k]]
    rows = _rows(conn, corpus, [f.id for f in fused])
    related = _related_strength(conn, [f.id for f in fused]) if corpus.table == "memories" else {}
    hits = []
    for f in fused:
        score, breakdown = rescore(f, rows.get(f.id, {}), weights, now, related.get(f.id, 0.0))
        hits.append(SearchHit(f.id, score, f, breakdown))
    hits.sort(key=lambda h: -h.score)
    return hits[:k]


def _rows(conn: Any, corpus: Corpus, ids: Sequence[int]) -> Mapping[int, Any]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT * FROM {corpus.table} WHERE id IN ({marks})", tuple(ids))
    return {int(r["id"]): r for r in rows}


def _related_strength(conn: Any, ids: Sequence[int]) -> dict[int, float]:
    """Per candidate, its strongest edge to another candidate (seed 001 §2).

    Only edges inside the result set count: a memory strongly tied to another relevant one is
    likelier relevant itself, while a globally well-connected memory is not, for this query.
    """
    if len(ids) < 2:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT from_id, to_id, strength FROM relations WHERE from_id IN ({marks})"
        f" AND to_id IN ({marks})",
        (*ids, *ids),
    ).fetchall()
    best: dict[int, float] = {}
    for a, b, strength in rows:
        for node in (a, b):
            best[node] = max(best.get(node, 0.0), float(strength))
    return best
