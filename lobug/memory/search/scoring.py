"""Ranking arithmetic: reciprocal-rank fusion and the re-score (docs/search.md, the whole
search on one page).

Formulas (weights in `ScoringWeights`, constants rather than settings: issue 24; ages in days,
computed from an explicit `now`):

    fusion (seed 003, weighted RRF)
        rrf(d) = Σ_lists  w_list / (k + rank_list(d))          ranks from 1, k = 60
        rrf_norm(d) = rrf(d) / Σ_answering lists w_list/(k + 1)   1.0 = first in every list
        weights: `LIST_WEIGHTS`; a BM25 hit joins only if it shares bm25_min_words (2) of the
        query's words

    re-score (architecture "re-scored by importance, recency, frequency, confidence and
    relation strength"; seed 001 §2 for the relation boost)
        memory_norm = s / s_most      the memory's own score (seed 000, `table.salience`) with
                                      λ = rescore_lambda (0.01/day), over its most
        R           = exp(−decay_rate·age_days)   retrievability (table.strength); a turn
                                      fades like an ordinary memory (`ORDINARY_RATE`)
        conf_mult   = confidence_floor + (1 − confidence_floor)·confidence
        relevance   = rrf_norm + w_memory·memory_norm + w_strength·R
        final       = (relevance·conf_mult + w_rel·max_related_strength)·status_mult
        a question about what happened (search.when.asks_past): no recency prior
        (`ScoringWeights.timeless`)
        status_mult = `DEMOTED` (0.5) for a replaced fact, an insight, a turn that only asks
        the lead (runner.lead): a turn among the first context_top (30) results, said within
        the period the question names if any, gains w_context (0.5) × its context score by its
        size (search.context.context_scores): rank fusion keeps only the order of each list,
        this decides the first places by how much better a turn matches

    max_related_strength: the strongest `related_to` or `supersedes` edge to any live (active
    or archived) memory (seed 001 §2; graph.relations.max_related_strength). Relevance
    (rrf_norm) dominates; the memory score and the strength only reorder near-equals and never
    bury clearly better evidence. Decay ranks, it never deletes (issue 10).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from lobug.memory.search.asking import only_asks
from lobug.memory.search.context import FIRST
from lobug.memory.table.salience import SALIENCE, Salience, ScoreBreakdown
from lobug.memory.table.salience import field_of as _field
from lobug.memory.table.strength import ORDINARY_RATE, retrievability

# A list that finds on its own weighs 1: `vector` (meaning) and `context` (words and meaning
# together, a reply credited with the question it answers: search.context). One that
# corroborates weighs `CORROBORATES`: `bm25` (the question's words), `entity` (the memories
# linked to an entity it names), `dated` (for "When…", the context list's turns that tell a
# time: runner.answering). `when` and `who` rank the rows within the period (search.when) or
# among the turns of the speaker (search.who) the question names, and weigh what the three
# lists within the scope they replaced added up to (by meaning 1, by context 1, by words
# `CORROBORATES`). `latest`: for a question about how things stand now, the newest of the
# context list's first. Each measured: docs/search.md.
CORROBORATES = 0.5
LIST_WEIGHTS = {
    "vector": 1.0,
    "bm25": CORROBORATES,
    "entity": CORROBORATES,
    "context": 1.0,
    "when": 2.0 + CORROBORATES,
    "who": 2.0 + CORROBORATES,
    "dated": CORROBORATES,
    "latest": 2.0,
}


@dataclass(frozen=True)
class ScoringWeights:
    """Every knob of the ranking formulas: the values the daemon ranks with (`WEIGHTS`);
    scripts/eval_retrieval.py and eval_conversations.py vary them for their sensitivity runs."""

    salience: Salience = SALIENCE  # the memory's own score (seed 000), one feature below
    rrf_k: int = 60
    list_weights: Mapping[str, float] = field(default_factory=lambda: dict(LIST_WEIGHTS))
    bm25_min_words: int = 2  # query words a lexical hit must share to join the fusion
    w_memory: float = 0.15
    # Retrieval's recency prior must tell a fact said in March from one said in May; the GC's
    # λ (0.05/day) has flattened both to ~0 by then, so the re-score uses a slower one.
    rescore_lambda: float = 0.01
    w_rel: float = 0.1
    confidence_floor: float = 0.5  # a memory of confidence 0 still counts half, never zero
    w_strength: float = 0.1  # retrievability's share: what is in use first among near-equals
    # The first results, by the size of their context score (`search.context.context_scores`):
    # what decides first place among turns that every list ranks near the top, and brings a
    # turn from 11th–30th place into the first ten. The same first 30 rows of the context
    # lists' word and meaning lists bring their replies in (`context.context_ranks`).
    w_context: float = 0.5
    context_top: int = FIRST

    def changed(self, changes: Mapping[str, float]) -> ScoringWeights:
        """A copy with fields, seed 000's weights (`Salience`) or list weights by list name
        ("bm25") changed: what the eval scripts' `--set` varies."""
        lists = dict(self.list_weights)
        knobs: dict[str, Any] = {}
        seed: dict[str, Any] = {}
        ints = ("rrf_k", "bm25_min_words", "hits_cap", "context_top")
        for name, value in changes.items():
            number = int(value) if name in ints else float(value)
            if name in lists:
                lists[name] = float(value)
            elif name in {f.name for f in fields(Salience)}:
                seed[name] = number
            elif name in {f.name for f in fields(self)} - {"list_weights", "salience"}:
                knobs[name] = number
            else:
                raise ValueError(f"no scoring weight or list named {name!r}")
        return replace(self, list_weights=lists, salience=replace(self.salience, **seed), **knobs)

    def timeless(self) -> ScoringWeights:
        """The weights for a question about what happened (`when.asks_past`): no recency
        prior, neither the memory score's recency nor retrievability."""
        return replace(self, salience=replace(self.salience, w_recency=0.0), w_strength=0.0)


WEIGHTS = ScoringWeights()


@dataclass(slots=True)  # not frozen: one per candidate, a frozen __init__ costs µs
class Fused:
    """One document after reciprocal-rank fusion: its score and its rank in each list."""

    id: int
    rrf: float
    rrf_norm: float
    ranks: dict[str, int]


@dataclass(slots=True)  # not frozen: one per candidate, a frozen __init__ costs µs
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
    memory, memory_norm, confidence, kept, strength, conf_mult, boost, status, final = _terms(
        fused, memory_row, weights, now, related_strength
    )
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


def rescored_score(
    fused: Fused,
    memory_row: Mapping[str, Any],
    weights: ScoringWeights,
    now: float,
    related_strength: float = 0.0,
) -> float:
    """`rescore`'s final score alone: a search re-scores ~80 candidates and shows a few, so
    the breakdown is built for those only (`hybrid.SearchHit.breakdown`)."""
    return _terms(fused, memory_row, weights, now, related_strength)[-1]


def _terms(
    fused: Fused,
    memory_row: Mapping[str, Any],
    weights: ScoringWeights,
    now: float,
    related_strength: float,
) -> tuple[ScoreBreakdown, float, float, float, float, float, float, float, float]:
    """The re-score's terms (the formula above), the final score last."""
    seed = weights.salience
    memory = seed.score(memory_row, now, weights.rescore_lambda)
    memory_norm = min(1.0, memory.total / seed.most) if seed.most else 0.0
    confidence = min(1.0, max(0.0, float(_field(memory_row, "confidence", 1.0))))
    rate = float(_field(memory_row, "decay_rate", ORDINARY_RATE))
    kept = retrievability(rate, memory.age_days)
    floor = weights.confidence_floor
    conf_mult = floor + (1.0 - floor) * confidence
    boost = weights.w_rel * max(0.0, min(1.0, related_strength))
    status = status_weight(memory_row)
    strength = weights.w_strength * kept
    relevance = fused.rrf_norm + weights.w_memory * memory_norm + strength
    final = (relevance * conf_mult + boost) * status
    return memory, memory_norm, confidence, kept, strength, conf_mult, boost, status, final


def status_weight(row: Mapping[str, Any]) -> float:
    """1 for a current memory and a turn that says something; `DEMOTED` for what is not
    the user's word on how things stand: a memory a newer statement replaced, a
    theory-of-mind insight (seed 001 §3: surfaced "with low weight"), a turn that only asks
    (`only_asks`: what answers it is the reply); an insight since replaced, twice."""
    text = _field(row, "text")  # turns only: a memory's is `content`
    if text is not None and only_asks(str(text)):
        return DEMOTED
    kind = DEMOTED if _field(row, "kind") == "insight" else 1.0
    return kind * (DEMOTED if _field(row, "valid_until") is not None else 1.0)


# Half: after the current value, after what the user said, after the reply. Measured for the
# turn that only asks: LoCoMo 1–5 hit@1 0.508 -> 0.520 (such a turn was first for 24 questions
# it does not answer, for 1 it does), the synthetic eval's MRR 0.694 -> 0.723; 0.3–0.7 alike.
DEMOTED = 0.5


def _distinct(ids: list[int]) -> list[int]:
    # A list that repeats a document counts it at its best rank only.
    return list(dict.fromkeys(ids))
