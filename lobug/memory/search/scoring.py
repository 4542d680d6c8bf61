"""Ranking arithmetic: the seed-000 memory score, reciprocal-rank fusion, Ebbinghaus decay.

Formulas (weights in `ScoringWeights`, constants rather than settings: issue 24; ages in days,
computed from an explicit `now`):

    memory score (seed 000)
        s = w_freq·ln(1 + hits) + w_recency·exp(−λ·age_days) + w_importance·importance
        importance ∈ [0, 1]; age_days = now − (last_accessed or created_at)

    fusion (seed 003, weighted RRF)
        rrf(d) = Σ_lists  w_list / (k + rank_list(d))          ranks from 1, k = 60
        rrf_norm(d) = rrf(d) / Σ_answering lists w_list/(k + 1)   1.0 = first in every list
        weights: vector 1.0, bm25 0.5, entity 0.5, context 1.0 (turns: search.context),
        dated 0.5, placed 1, counted 1 (a question asking when, where, how many:
        runner.answering), latest 2 (one asking about now), echo 0.5 (search.echo);
        a BM25 hit joins only if it shares bm25_min_words (2) of the query's words — why:
        docs/retrieval-eval.md

    final re-score (architecture "re-scored by importance, recency, frequency, confidence and
    relation strength"; seed 001 §2 for the relation boost)
        memory_norm = s' / s_max,  s' = s with λ = rescore_lambda (0.01/day)
                                   s_max = w_freq·ln(1 + hits_cap) + w_recency + w_importance
        R           = exp(−decay_rate·age_days)   retrievability (store.strength); a turn
                                              fades like an ordinary memory (rate 0.05/day)
        conf_mult   = confidence_floor + (1 − confidence_floor)·confidence
        relevance   = w_fused·rrf_norm + w_memory·memory_norm + w_strength·R
        a question about what happened (search.when.asks_past: "When did…", "What was…",
        not "now", "still" or "last"): w_recency = w_strength = 0, no recency prior (LoCoMo
        1–5 hit@1 0.528 -> 0.534, 6–10 0.486 unchanged; the synthetic eval's MRR 0.723 -> 0.728)
        status_mult = superseded_weight (0.5) for a fact a newer statement replaced, 0.5 for
                      an insight and for a turn that only asks (`only_asks`), else 1
        final = (relevance·conf_mult + w_rel·max_related_strength)·status_mult
        a turn among the first context_top (30) results, said within the period the
        question names if any: final += w_context (0.5)·context, its context score by its size
        (search.context.context_scores: 0.5·bm25/best of two shared words + 0.5·cosine, plus
        0.8 of the same for the question it answers); rank fusion keeps only the order of
        each list, this decides the first places by how much better a turn matches
        (runner.lead)

    max_related_strength: the strongest `related_to` or `supersedes` edge to any live (active
    or archived) memory, a candidate of the same search or not (seed 001 §2; graph.relations
    .max_related_strength); soft-deleted ends, and ends past their `expires_at`, do not count.
    Relevance (rrf_norm) dominates; the memory score and the strength only reorder near-equals
    (the newer of two equally relevant statements first, the fact in use before the one said
    once and forgotten) and never bury clearly better evidence.

    Decay ranks, it never deletes (issue 10): a memory used often has a small decay_rate
    (every use divides it: store.strength) and keeps R ≈ 1; one said once and never used
    loses up to w_strength; an archived one ranks like any other (the prompt admits it only
    as the best match: search.prompt_context), and a replaced one still answers when it is clearly
    the best match.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from lobug.memory.search.asking import only_asks
from lobug.memory.table.strength import retrievability

DAY = 86_400.0
ORDINARY_DECAY_RATE = 0.05  # a memory of importance 0.5; what a raw turn fades like
# Vector similarity leads; the lexical and entity lists corroborate (see docs/retrieval-eval.md).
# context: the turns scored with the question they answer (search.context).
# dated, placed, counted: the context list's turns that tell a time, name a place, tell an
# amount, for a question asking when, where, how many (runner.answering, search.answer).
# echo: the question widened with the words of its first answers (search.echo).
# when_*, who_*: the same lists within the period (search.when) or among the turns of the
# speaker (search.who) the question names, if it names one.
LIST_WEIGHTS = {
    "vector": 1.0,
    "bm25": 0.5,
    "entity": 0.5,
    "context": 1.0,
    "when_vector": 1.0,
    "when_words": 0.5,
    "when_context": 1.0,
    "who_vector": 1.0,
    "who_words": 0.5,
    "who_context": 1.0,
    "dated": 0.5,
    "placed": 1.0,
    "counted": 1.0,
    "latest": 2.0,
    "echo": 0.5,
}


@dataclass(frozen=True)
class ScoringWeights:
    """Every knob of the ranking formulas: the seed defaults are the values the daemon ranks
    with (`WEIGHTS`); scripts/eval_retrieval.py varies them for its sensitivity runs."""

    w_freq: float = 1.0
    w_recency: float = 1.0
    w_importance: float = 2.0
    decay_lambda: float = 0.05  # per day: a memory idle for 14 days keeps half its recency
    rrf_k: int = 60
    list_weights: Mapping[str, float] = field(default_factory=lambda: dict(LIST_WEIGHTS))
    bm25_min_words: int = 2  # query words a lexical hit must share to join the fusion
    w_fused: float = 1.0
    w_memory: float = 0.15
    # Retrieval's recency prior must tell a fact said in March from one said in May; the GC's
    # λ (0.05/day) has flattened both to ~0 by then, so the re-score uses a slower one.
    rescore_lambda: float = 0.01
    w_rel: float = 0.1
    confidence_floor: float = 0.5  # a memory of confidence 0 still counts half, never zero
    w_strength: float = 0.1  # retrievability's share: what is in use first among near-equals
    superseded_weight: float = 0.5  # a newer statement replaced it: after the current value
    hits_cap: int = 20  # ln(1 + hits) saturates here for normalisation; hits beyond add little
    # The first results, by the size of their context score (`search.context.context_scores`):
    # what decides first place among turns that every list ranks near the top, and brings a
    # turn from 11th–30th place into the first ten (LoCoMo 1–5 recall_any@10 0.829 -> 0.854
    # over 20, 0.859 over 30, 40 and 50 alike; with the question's words read once per search,
    # `context.QuestionWords`, 30 costs no more than 20 at 10k turns).
    w_context: float = 0.5
    context_top: int = 30

    def changed(self, changes: Mapping[str, float]) -> ScoringWeights:
        """A copy with fields, or list weights by list name ("bm25"), changed: what the eval
        scripts' `--set` varies (scripts/eval_retrieval.py, scripts/eval_conversations.py)."""
        lists = dict(self.list_weights)
        knobs: dict[str, Any] = {}
        for name, value in changes.items():
            if name in lists:
                lists[name] = float(value)
            elif name in ("rrf_k", "bm25_min_words", "hits_cap", "context_top"):
                knobs[name] = int(value)
            elif name in {f.name for f in fields(self)} - {"list_weights"}:
                knobs[name] = float(value)
            else:
                raise ValueError(f"no scoring weight or list named {name!r}")
        return replace(self, list_weights=lists, **knobs)

    def timeless(self) -> ScoringWeights:
        """The weights for a question about what happened (`when.asks_past`): no recency
        prior, neither the memory score's recency nor retrievability."""
        return replace(self, w_recency=0.0, w_strength=0.0)

    @property
    def memory_max(self) -> float:
        return self.w_freq * math.log1p(self.hits_cap) + self.w_recency + self.w_importance


WEIGHTS = ScoringWeights()


@dataclass(frozen=True)
class ScoreBreakdown:
    """The seed-000 score and each of its terms (for `explain`)."""

    freq: float
    recency: float
    importance: float
    total: float
    hits: int
    age_days: float

    def as_dict(self) -> dict[str, float | int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Fused:
    """One document after reciprocal-rank fusion: its score and its rank in each list."""

    id: int
    rrf: float
    rrf_norm: float
    ranks: dict[str, int]


@dataclass(frozen=True)
class RescoreBreakdown:
    """Every term of the final score, so a result can say why it ranked where it did."""

    rrf: float
    rrf_norm: float
    ranks: dict[str, int]
    memory: ScoreBreakdown
    memory_norm: float
    confidence: float
    retrievability: float
    strength: float  # w_strength·retrievability: what it added (0 for a question about the past)
    confidence_mult: float
    related_strength: float
    relation_boost: float
    status_mult: float
    final: float
    context: float = 0.0  # w_context·context score, for the first results (runner.lead)

    def as_dict(self) -> dict[str, Any]:
        # By hand, not dataclasses.asdict: its deep copy cost 6 ms per prompt of 20 results.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["ranks"] = dict(self.ranks)
        data["memory"] = self.memory.as_dict()
        return data


def age_days(row: Mapping[str, Any], now: float) -> float:
    """Days since the row was last seen: last access if any, else creation (never negative)."""
    seen = now
    for key in ("last_accessed", "created_at", "ts"):  # turns carry only `ts`
        value = _field(row, key)
        if value is not None:
            seen = float(value)
            break
    return max(0.0, (now - float(seen)) / DAY)


def memory_score(
    row: Mapping[str, Any], weights: ScoringWeights, now: float, lam: float | None = None
) -> ScoreBreakdown:
    """The seed-000 score of a memory row (missing columns take neutral defaults)."""
    hits = int(_field(row, "hits") or 0)
    importance = float(_field(row, "importance", 0.5))
    age = age_days(row, now)
    freq = weights.w_freq * math.log1p(max(0, hits))
    lam = weights.decay_lambda if lam is None else lam  # rescore passes its slower λ
    recency = weights.w_recency * math.exp(-lam * age)
    imp = weights.w_importance * importance
    return ScoreBreakdown(
        freq=freq,
        recency=recency,
        importance=imp,
        total=freq + recency + imp,
        hits=hits,
        age_days=age,
    )


def rrf(
    lists: Mapping[str, list[int]], k: int = 60, weights: Mapping[str, float] | None = None
) -> dict[int, float]:
    """Weighted reciprocal-rank fusion: Σ w/(k + rank) over the lists a document appears in."""
    scores: dict[int, float] = {}
    for name, ids in lists.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        for rank, doc in enumerate(_distinct(ids), start=1):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank)
    return scores


def list_ranks(lists: Mapping[str, list[int]]) -> dict[int, dict[str, int]]:
    """For each document, its 1-based rank in every list that holds it (for explain)."""
    ranks: dict[int, dict[str, int]] = {}
    for name, ids in lists.items():
        for rank, doc in enumerate(_distinct(ids), start=1):
            ranks.setdefault(doc, {})[name] = rank
    return ranks


def fuse(
    lists: Mapping[str, list[int]], k: int = 60, weights: Mapping[str, float] | None = None
) -> list[Fused]:
    """RRF scores with their ranks, best first; ties keep the order of first appearance."""
    scores = rrf(lists, k, weights)
    ranks = list_ranks(lists)
    # Normalise by the best score possible with the lists that answered (first in each), so
    # rrf_norm means the same whether one list answered or three; an empty list (no entity
    # named, no vector table) must not halve everyone's relevance.
    best = sum(
        (1.0 if weights is None else float(weights.get(n, 1.0))) / (k + 1)
        for n, ids in lists.items()
        if ids
    )
    order = {doc: i for i, doc in enumerate(scores)}
    ranked = sorted(scores, key=lambda d: (-scores[d], order[d]))
    return [
        Fused(id=d, rrf=scores[d], rrf_norm=scores[d] / best if best else 0.0, ranks=ranks[d])
        for d in ranked
    ]


def rescore(
    fused: Fused,
    memory_row: Mapping[str, Any],
    weights: ScoringWeights,
    now: float,
    related_strength: float = 0.0,
) -> tuple[float, RescoreBreakdown]:
    """Combine fused relevance with the memory's own score, confidence and relation strength."""
    memory = memory_score(memory_row, weights, now, weights.rescore_lambda)
    memory_norm = min(1.0, memory.total / weights.memory_max) if weights.memory_max else 0.0
    confidence = min(1.0, max(0.0, float(_field(memory_row, "confidence", 1.0))))
    rate = float(_field(memory_row, "decay_rate", ORDINARY_DECAY_RATE))
    kept = retrievability(rate, memory.age_days)
    floor = weights.confidence_floor
    conf_mult = floor + (1.0 - floor) * confidence
    boost = weights.w_rel * max(0.0, min(1.0, related_strength))
    status = status_weight(memory_row, weights)
    strength = weights.w_strength * kept
    relevance = weights.w_fused * fused.rrf_norm + weights.w_memory * memory_norm + strength
    final = (relevance * conf_mult + boost) * status
    return final, RescoreBreakdown(
        rrf=fused.rrf,
        rrf_norm=fused.rrf_norm,
        ranks=dict(fused.ranks),
        memory=memory,
        memory_norm=memory_norm,
        confidence=confidence,
        retrievability=kept,
        strength=strength,
        confidence_mult=conf_mult,
        related_strength=related_strength,
        relation_boost=boost,
        status_mult=status,
        final=final,
    )


def status_weight(row: Mapping[str, Any], weights: ScoringWeights) -> float:
    """1 for a current memory and a turn that says something; less for a memory a newer
    statement replaced, for a theory-of-mind insight (seed 001 §3: surfaced "with low
    weight"), and for a turn that only asks (`only_asks`)."""
    text = _field(row, "text")  # turns only: a memory's is `content`
    if text is not None and only_asks(str(text)):
        return ASKING_WEIGHT
    kind = INSIGHT_WEIGHT if _field(row, "kind") == "insight" else 1.0
    if _field(row, "valid_until") is not None:
        return weights.superseded_weight * kind
    return kind


INSIGHT_WEIGHT = 0.5  # kind `insight`: an interpretation, ranked below what the user said
# A turn that only asks (`asking.only_asks`): what answers it is the reply. LoCoMo 1–5 hit@1
# 0.508 -> 0.520 (such a turn was first for 24 questions it does not answer, for 1 it does),
# the synthetic eval's MRR 0.694 -> 0.723; 6, 8 or 10 words and weights 0.3–0.7 alike.
ASKING_WEIGHT = 0.5


def _distinct(ids: list[int]) -> list[int]:
    # A list that repeats a document counts it at its best rank only.
    return list(dict.fromkeys(ids))


def _field(row: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """row[key] for dicts and sqlite3.Row alike, default when absent or NULL."""
    try:
        value = row[key]
    except (KeyError, IndexError):
        return default
    return default if value is None else value
