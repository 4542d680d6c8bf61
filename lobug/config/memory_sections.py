"""The memory subsystem's config sections ([memory], [reflection], [scoring], [lifecycle],
[upkeep]); the rest, and the rules every section follows, are in lobug.config.models."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.dataclasses import dataclass

from lobug.config.fields import SECTION


@dataclass(frozen=True, config=SECTION)
class MemoryConfig:
    enabled: bool = True
    top_k: int = Field(default=5, ge=1, le=100, description="memories added to each prompt")
    min_similarity: float = Field(
        default=0.3, ge=0, le=1, description="0..1; weaker matches are left out"
    )
    duplicate_distance: float = Field(
        default=0.15, description="vector distance under which a new fact merges into an old one"
    )
    short_term_threshold: int = Field(
        default=30, description="unsummarised messages that trigger a summary..."
    )
    short_term_keep: int = Field(
        default=10, description="...of all but this many newest (must be below the threshold)"
    )
    long_term_threshold: int = Field(
        default=20, description="unincorporated summaries that trigger a base-memory rewrite..."
    )
    long_term_keep: int = Field(
        default=10, description="...keeping this many newest (must be below the threshold)"
    )
    extraction_mode: Literal["heuristic", "llm", "hybrid"] = Field(
        default="hybrid",
        description="heuristic | llm | hybrid"
        " (with Ollama down, heuristic facts are stored at once)",
    )
    base_memory_max_words: int = 400
    llm_timeout_s: float = Field(
        default=120.0,
        description="background LLM calls (extraction, summaries, distillation) are longer than a"
        " chat reply and nobody waits on them; on a Pi a 20-turn summary can take a minute",
    )
    user_first: bool = Field(
        default=True,
        description="memory work (extraction, summaries, reflection, their embeddings) waits"
        " for a quiet conversation and gives the model up to a turn at once; false: it runs"
        " as soon as it is queued, between turns",
    )
    quiet_s: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        description="with user_first: seconds after the last turn before memory work may"
        " call the model (on a Pi, longer than the pause between two turns of a conversation)",
    )
    near_duplicate_jaccard: float = Field(
        default=0.75, ge=0, le=1, description="word overlap at which a new fact merges"
    )
    link_min: float = Field(
        default=0.55, ge=0, le=1, description="similarity for a relation edge to a neighbour"
    )
    link_k: int = Field(
        default=3, description="neighbours considered for relation edges per new fact"
    )
    hit_flush_s: float = Field(
        default=5.0, gt=0, description="retrieval hits are counted in memory and written this often"
    )
    max_writes_per_turn: int = Field(
        default=3, ge=1, le=100, description="new memories per exchange at most (seed 001 §13)..."
    )
    max_writes_per_day: int = Field(
        default=100,
        ge=1,
        le=1_000_000,
        description="...and per user and store per rolling day (a stranger spends its own)",
    )
    judge_k: int = Field(
        default=3,
        ge=0,
        le=20,
        description="stored facts each new fact is judged against (same/update/...);"
        " 0 = heuristics only",
    )
    consent_days: float = Field(
        default=7.0,
        ge=0.01,
        le=365,
        description='name, pronouns, city, language heard by voice wait this long for a "yes"',
    )
    consent_signals: int = Field(
        default=2,
        ge=1,
        le=100,
        description="a benign profile field (tone, goals) heard this often is applied without one",
    )


@dataclass(frozen=True, config=SECTION)
class ReflectionConfig:
    """Background thinking over what memory holds: the weekly reflection (seed 003),
    theory-of-mind insights (seed 001 §3) and the base memory distilled from facts for a new
    user."""

    enabled: bool = True
    check_interval_s: float = Field(
        default=3600.0,
        description="how often the persisted schedule looks for due background thinking",
    )
    reflection_min_facts: int = Field(
        default=3, description="the weekly reflection needs this many new facts in 7 days..."
    )
    reflection_every_days: float = Field(
        default=6.0, description="...and runs at most once in this many days"
    )
    insights_every_hours: float = Field(
        default=24.0,
        description="theory-of-mind insights (how the user communicates) at most this often",
    )
    base_from_facts_min: int = Field(
        default=8,
        description="a new user's base memory is distilled from facts once this many exist",
    )
    llm_calls_per_day: int = Field(
        default=12,
        description="budget of LLM calls per day and user for these tasks (jobs wait for the"
        " next day)",
    )


@dataclass(frozen=True, config=SECTION)
class ScoringConfig:
    """The ranking formulas' knobs (lobug/memory/search/scoring.py explains each)."""

    w_freq: float = 1.0
    w_recency: float = 1.0
    w_importance: float = 2.0
    decay_lambda: float = 0.05
    rrf_k: int = 60
    w_vector: float = 1.0
    w_bm25: float = 0.5
    w_entity: float = 0.5
    w_when: float = Field(
        default=1.0, description='the question names a period ("last spring"): what was said then'
    )
    w_who: float = Field(
        default=1.0, description="the question names a speaker of imported turns: what they said"
    )
    bm25_min_words: int = 2
    w_fused: float = 1.0
    w_memory: float = 0.15
    rescore_lambda: float = 0.01
    w_rel: float = 0.1
    confidence_floor: float = 0.5
    w_strength: float = 0.1
    superseded_weight: float = 0.5
    hits_cap: int = 20


@dataclass(frozen=True, config=SECTION)
class LifecycleConfig:
    """Memory upkeep policies (lobug.memory.lifecycle)."""

    gc_interval_s: float = Field(
        default=3600.0,
        ge=0,
        description="the GC pass (0 = never); decay only lowers rank, it never deletes",
    )
    decay_rate: float = Field(
        default=0.1,
        description="Ebbinghaus rate (per day) of a memory of importance 0; a memory's own rate is"
        " this times (1 - importance), so what matters fades slower (0.5 -> 0.05/day: a strength"
        " of 20 days). Decay lowers rank only; every use divides the rate.",
    )
    reinforce_gain: float = Field(
        default=1.0,
        ge=0,
        le=100,
        description="how much each use slows a memory's fading (spaced repetition)",
    )
    max_strength_days: float = Field(default=3650.0, ge=1, le=1_000_000)
    purge_after_days: float = Field(
        default=30.0, description="a soft-deleted memory is purged after this (restore before)"
    )
    promote_hits: int = 3
    promote_seen_within_days: float = 7.0
    archive_score_below: float = 0.5
    archive_idle_days: float = 30.0
    mid_capacity: int = 500
    ttl_idle_days: float = Field(
        default=60.0,
        description="the only automatic soft delete: idle this long AND importance below...",
    )
    ttl_importance_below: float = Field(
        default=0.5, description="...this AND never used, never said again, mid layer, not pinned"
    )


@dataclass(frozen=True, config=SECTION)
class UpkeepConfig:
    """Background upkeep jobs (lobug.memory.upkeep). Each interval is persisted: after downtime a
    job runs once, not once per missed slot; 0 = never. Their LLM calls share one daily budget."""

    consolidate_interval_s: float = Field(
        default=86400.0, description="daily consolidation of near-duplicate facts"
    )
    enrich_interval_s: float = Field(
        default=86400.0, description="nightly entity pass: aliases merged, profiles filled"
    )
    llm_calls_per_day: int = Field(
        default=40,
        description="per user, all upkeep jobs together; past it they wait for the next day",
    )
    pool_hours: float = Field(
        default=72.0, description="facts new or changed this recently are checked for duplicates..."
    )
    pool_importance: float = Field(
        default=0.6, description="...and facts at least this important, and the most retrieved"
    )
    band_low: float = Field(default=0.6, description="similarity from which a pair is worth a look")
    recency_days: float = Field(
        default=90.0, description="pairs whose older fact changed longer ago are left alone"
    )
    pairs_per_prompt: int = Field(default=8, description="pairs judged per LLM call (5-10)")
    pairs_per_day: int = Field(default=50, description="pairs per user per day sent to the model")
    fingerprint_days: float = Field(
        default=14.0, description="a judged pair is not judged again for this long"
    )
    session_consolidation: bool = Field(
        default=True,
        description="a session left for another (or idle past chat.session_idle_minutes) has its"
        " exchanges turned into facts once",
    )
