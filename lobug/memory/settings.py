"""The memory's tuning from the config file: scoring weights and GC parameters."""

from __future__ import annotations

from dataclasses import dataclass

from lobug.config import Config, LifecycleConfig, ScoringConfig
from lobug.memory.lifecycle.policies import GcParams
from lobug.memory.search.scoring import ScoringWeights
from lobug.memory.store.strength import DEFAULT as DEFAULT_STRENGTH
from lobug.memory.store.strength import Strength


def scoring_weights(cfg: ScoringConfig) -> ScoringWeights:
    return ScoringWeights(
        w_freq=cfg.w_freq,
        w_recency=cfg.w_recency,
        w_importance=cfg.w_importance,
        decay_lambda=cfg.decay_lambda,
        rrf_k=cfg.rrf_k,
        list_weights={
            "vector": cfg.w_vector,
            "bm25": cfg.w_bm25,
            "entity": cfg.w_entity,
            "when_vector": cfg.w_when,
            "when_words": cfg.w_when * cfg.w_bm25,
            "who_vector": cfg.w_who,
            "who_words": cfg.w_who * cfg.w_bm25,
        },
        bm25_min_words=cfg.bm25_min_words,
        w_fused=cfg.w_fused,
        w_memory=cfg.w_memory,
        rescore_lambda=cfg.rescore_lambda,
        w_rel=cfg.w_rel,
        confidence_floor=cfg.confidence_floor,
        w_strength=cfg.w_strength,
        superseded_weight=cfg.superseded_weight,
        hits_cap=cfg.hits_cap,
    )


def gc_params(cfg: LifecycleConfig, weights: ScoringWeights) -> GcParams:
    return GcParams(
        weights=weights,
        purge_after_days=cfg.purge_after_days,
        promote_hits=cfg.promote_hits,
        promote_seen_within_days=cfg.promote_seen_within_days,
        archive_score_below=cfg.archive_score_below,
        archive_idle_days=cfg.archive_idle_days,
        mid_capacity=cfg.mid_capacity,
        ttl_idle_days=cfg.ttl_idle_days,
        ttl_importance_below=cfg.ttl_importance_below,
    )


@dataclass(frozen=True)
class WritePolicy:
    """How a new memory meets the stored ones (reconcile) and links to them (relations)."""

    duplicate_distance: float = 0.15  # cosine distance below which a new fact merges
    near_jaccard: float = 0.75
    link_min: float = 0.55
    link_k: int = 3
    decay_rate: float = 0.1  # for importance 0; see decay_rate_for
    strength: Strength = DEFAULT_STRENGTH  # how a repeat reinforces the stored fact
    # The heuristic judge (write/judge.py): a new statement with a state-change marker ("now",
    # "no longer", "switched to" …) updates a stored fact it overlaps this much, marker words
    # left out and a content word shared ("now drives a Tesla" → "drives a Honda": 0.67).
    update_jaccard: float = 0.5

    def decay_rate_for(self, importance: float) -> float:
        """Important memories fade slower: rate·(1 − importance), never quite zero (only a
        confirmed or pinned memory is protected for good)."""
        return round(max(MIN_DECAY_RATE, self.decay_rate * (1.0 - importance)), 6)


MIN_DECAY_RATE = 0.002  # per day: importance 1.0 still fades, over years


def write_policy(config: Config) -> WritePolicy:
    m = config.memory
    return WritePolicy(
        m.duplicate_distance,
        m.near_duplicate_jaccard,
        m.link_min,
        m.link_k,
        config.lifecycle.decay_rate,
        strength(config.lifecycle),
    )


def strength(cfg: LifecycleConfig) -> Strength:
    return Strength(gain=cfg.reinforce_gain, max_days=cfg.max_strength_days)
