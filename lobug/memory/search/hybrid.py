"""Hybrid retrieval: vector KNN, FTS5 BM25 and entity matches, fused by RRF, then re-scored.

Works on memories (facts, summaries, …) and on turns (episodes) alike; see `Corpus`. Each
`*_ranks` function returns ids best first, already filtered (user, status, store, category), so
the fused list never holds a row the caller may not see. The formula is in `scoring`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from lobug.memory.graph import relations
from lobug.memory.graph.entities import entities_in_text
from lobug.memory.query import Reach
from lobug.memory.search.context import WEIGHTS as CONTEXT
from lobug.memory.search.context import QuestionWords, context_ranks
from lobug.memory.search.corpus import (
    MEMORIES,
    TURNS,
    Corpus,
    Reads,
    where_clause,
)
from lobug.memory.search.fts import fts_available
from lobug.memory.search.lexical import bm25_ranks, text_ranks
from lobug.memory.search.scoring import (
    Fused,
    RescoreBreakdown,
    ScoringWeights,
    fuse,
    rescore,
    rescored_score,
)
from lobug.memory.vectors import knn
from lobug.memory.vectors.knn import VEC_MAX_K
from lobug.storage.sqlite import has_table, placeholders

# The whole retrieval surface in one place: corpus and filter types, the lexical lists.
__all__ = [
    "MEMORIES",
    "TURNS",
    "Corpus",
    "SearchHit",
    "bm25_ranks",
    "entity_ranks",
    "fuse_and_rescore",
    "ranked_lists",
    "text_ranks",
    "vector_knn",
    "vector_ranks",
]

LIST_ORDER = ("vector", "bm25", "context", "entity", "when", "who", "dated", "latest")


@dataclass(slots=True)  # not frozen: one per candidate, a frozen __init__ costs µs
class SearchHit:
    """A fused row and its score. Re-scored, it keeps what it was re-scored with (`rescored`:
    the row, the weights, when, its relation strength), and builds its breakdown when one is
    asked for (`breakdown`): a search re-scores ~80 rows and explains the few it returns."""

    id: int
    score: float
    fused: Fused
    rescored_with: tuple[Mapping[str, Any], ScoringWeights, float, float] | None = None
    context: float = 0.0  # what the lead added (`runner.lead`), already in `score`
    _breakdown: RescoreBreakdown | None = None

    @property
    def breakdown(self) -> RescoreBreakdown | None:
        """Every term of the score (`scoring.rescore`), the lead's included; None when it
        was fused only."""
        if self._breakdown is None:
            if self.rescored_with is None:
                return None
            self._breakdown = rescore(self.fused, *self.rescored_with)[1]
        self._breakdown.context, self._breakdown.final = self.context, self.score
        return self._breakdown

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
    flt: Reach | None = None,
    max_distance: float | None = None,
    reads: Reads | None = None,
) -> list[tuple[int, float]]:
    """(id, cosine distance) of the k nearest visible rows within max_distance, nearest first
    (kept in `reads`: the fusion and the cut need the similarities again)."""
    reads = reads or Reads()
    flt = flt or Reach()
    if (every := reads.every(conn, corpus, flt)) is not None:  # a narrow filter: its rows alone
        found = knn.among(
            conn, corpus.vectors, query_vec, sorted(every), k, max_distance=max_distance
        )
    else:
        visible = partial(reads.visible, conn, corpus, flt)
        found = knn.nearest(
            conn, corpus.vectors, query_vec, k, accept=visible, max_distance=max_distance
        )
    reads.nearest(corpus.vectors, found)
    return found


def vector_ranks(
    conn: Any,
    query_vec: Sequence[float],
    k: int,
    *,
    corpus: Corpus = MEMORIES,
    flt: Reach | None = None,
    max_distance: float | None = None,
) -> list[int]:
    found = vector_knn(conn, query_vec, k, corpus=corpus, flt=flt, max_distance=max_distance)
    return [i for i, _ in found]


def entity_ranks(
    conn: Any, query: str, k: int, *, corpus: Corpus = MEMORIES, flt: Reach | None = None
) -> list[int]:
    """Rows naming the entities the query names; more of them first, then newest."""
    flt = flt or Reach()
    entity_ids = entities_in_text(conn, flt.user_id, query)
    if not entity_ids:
        return []
    where, params = where_clause(corpus, flt)
    marks = placeholders(entity_ids)
    if corpus.table == "memories":
        rows = conn.execute(
            f"SELECT d.id, COUNT(DISTINCT me.entity_id) AS n FROM memory_entities me"
            f" JOIN memories d ON d.id = me.memory_id WHERE me.entity_id IN ({marks})"
            f" AND {where} GROUP BY d.id ORDER BY n DESC, d.created_at DESC, d.id DESC LIMIT ?",
            (*entity_ids, *params, k),
        ).fetchall()
        return [int(r[0]) for r in rows]
    # Turns: linked through `turn_entities` (m013: the user's own words, by `embed_turn` and
    # the nightly enrichment), or naming the entity (or an alias) in their text: Lo-Bug's
    # replies, a guest's words and turns from before m013 are never linked, so the name match
    # stays beside the links.
    counts: dict[int, int] = {}
    for entity_id in entity_ids:
        linked = conn.execute(
            f"SELECT d.id FROM turn_entities te JOIN turns d ON d.id = te.turn_id"
            f" WHERE te.entity_id = ? AND {where}",
            (entity_id, *params),
        ).fetchall()
        names = _names(conn, entity_id)
        query_text = " OR ".join('"' + n.replace('"', '""') + '"' for n in names)
        matched = (
            bm25_ranks(conn, query_text, VEC_MAX_K, corpus=corpus, flt=flt)
            if (fts_available(conn, corpus.fts))
            else text_ranks(conn, " ".join(names), VEC_MAX_K, corpus=corpus, flt=flt)
        )
        for turn_id in {int(r[0]) for r in linked} | set(matched):
            counts[turn_id] = counts.get(turn_id, 0) + 1
    # Newest first among equals: ids grow with time in the turns table.
    return sorted(counts, key=lambda t: (-counts[t], -t))[:k]


def _names(conn: Any, entity_id: int) -> list[str]:
    row = conn.execute(
        "SELECT canonical_name, aliases FROM entities WHERE id = ?", (entity_id,)
    ).fetchone()
    return list(dict.fromkeys([row["canonical_name"], *json.loads(row["aliases"] or "[]")]))


def ranked_lists(
    conn: Any,
    text: str,
    query_vec: Sequence[float] | None,
    *,
    corpus: Corpus = MEMORIES,
    flt: Reach | None = None,
    weights: ScoringWeights | None = None,
    depth: int = 50,
    lists: Sequence[str] | None = None,
    min_similarity: float | None = None,
    question: QuestionWords | None = None,
    reads: Reads | None = None,
) -> dict[str, list[int]]:
    """The ranked lists (ids, best first) for `lists` — separable, so a caller may compute the
    vector list and the lexical ones on two connections at once.

    min_similarity: a floor for the vector list (1 − cosine distance); the lexical and entity
    lists have their own bar (shared words, a named entity). question: the search's words
    over the turns, for the context list (`context.QuestionWords`). reads: what the search
    has read (`corpus.Reads`).
    """
    weights = weights or ScoringWeights()
    reads = reads or Reads()
    flt = flt or Reach()
    lists = corpus.lists if lists is None else lists
    ranked: dict[str, list[int]] = {}
    nearest: list[tuple[int, float]] = []
    context = "context" in lists and corpus is TURNS
    if ("vector" in lists or context) and query_vec is not None and has_table(conn, corpus.vectors):
        max_distance = None if min_similarity is None else 1.0 - min_similarity
        # One KNN for both lists: the context list reads deeper into the same neighbours.
        deep = max(depth, CONTEXT.depth) if context else depth
        nearest = vector_knn(
            conn, query_vec, deep, corpus=corpus, flt=flt, max_distance=max_distance, reads=reads
        )
        if "vector" in lists:
            ranked["vector"] = [i for i, _ in nearest[:depth]]
    if "bm25" in lists:
        ranked["bm25"] = text_ranks(
            conn, text, depth, corpus=corpus, flt=flt, min_words=weights.bm25_min_words, reads=reads
        )
    if "entity" in lists:
        ranked["entity"] = entity_ranks(conn, text, depth, corpus=corpus, flt=flt)
    if context:
        ranked["context"] = context_ranks(
            conn, text, nearest, depth, flt=flt, question=question, reads=reads
        )
    return ranked


def fuse_and_rescore(
    conn: Any,
    ranked: Mapping[str, list[int]],
    *,
    corpus: Corpus = MEMORIES,
    weights: ScoringWeights | None = None,
    now: float | None = None,
    reads: Reads | None = None,
) -> tuple[list[SearchHit], Mapping[int, Any]]:
    """RRF over the lists; with `now`, re-scored by each row's own signals (rows returned)."""
    weights = weights or ScoringWeights()
    # A fixed list order: the fused order of equal scores must not depend on which list was
    # computed first (explain recomputes the lists in one go, a query in parallel).
    ordered = {name: list(ranked[name]) for name in sorted(ranked, key=LIST_ORDER.index)}
    fused = fuse(ordered, weights.rrf_k, weights.list_weights)
    if now is None:
        return [SearchHit(f.id, f.rrf_norm, f) for f in fused], {}
    hits, rows = rescored(conn, fused, corpus=corpus, weights=weights, now=now, reads=reads)
    # Stable: equal scores keep the fused order, so explain can reproduce a ranking exactly.
    hits.sort(key=lambda h: -h.score)
    return hits, rows


def rescored(
    conn: Any,
    fused: Sequence[Fused],
    *,
    corpus: Corpus,
    weights: ScoringWeights,
    now: float,
    reads: Reads | None = None,
) -> tuple[list[SearchHit], Mapping[int, Any]]:
    """Each fused row of one corpus re-scored by its own signals, in the fused order (rows
    returned; a row gone since it was ranked is scored as empty: the caller drops it)."""
    rows = (reads or Reads()).rows(conn, corpus, [f.id for f in fused])
    ids = [f.id for f in fused]
    related = relations.max_related_strength(conn, ids, now) if corpus.table == "memories" else {}
    hits = []
    for f in fused:
        why = (rows.get(f.id, {}), weights, now, related.get(f.id, 0.0))
        hits.append(SearchHit(f.id, rescored_score(f, *why), f, why))
    return hits, rows
