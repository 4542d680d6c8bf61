"""The memory subsystem's config sections ([memory], [reflection], [lifecycle], [upkeep]); the
rest, and the rules every section follows, are in lobug.config.models.

Only what an owner would set lives here. The formulas' constants (ranking weights, GC
thresholds, duplicate bands, cascade sizes) are named module constants next to the formula
they belong to (lobug.config.load.REMOVED lists where each old key went)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.dataclasses import dataclass

from lobug.config.fields import SECTION


@dataclass(frozen=True, config=SECTION)
class MemoryConfig:
    enabled: bool = Field(
        default=True,
        description="false: no long-term memory (facts, summaries, the /v1 memory API);"
        " the chat keeps its working memory",
    )
    top_k: int = Field(default=5, ge=1, le=100, description="memories added to each prompt")
    min_similarity: float = Field(
        default=0.3, ge=0, le=1, description="0..1; weaker matches are left out"
    )
    duplicate_distance: float = Field(
        default=0.15,
        description="vector distance under which a new fact merges into an old one; distances"
        " differ by embedding model, so a new embedding.model may want another value",
    )
    extraction_mode: Literal["heuristic", "llm", "hybrid"] = Field(
        default="hybrid",
        description="heuristic | llm | hybrid"
        " (with Ollama down, heuristic facts are stored at once)",
    )
    base_memory_max_words: int = Field(
        default=400, description="length of the base memory (who the user is) in every prompt"
    )
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


@dataclass(frozen=True, config=SECTION)
class ReflectionConfig:
    """Background thinking over what memory holds: the weekly reflection (seed 003),
    theory-of-mind insights (seed 001 §3) and the base memory distilled from facts for a new
    user."""

    enabled: bool = Field(default=True, description="false: none of this background thinking")
    reflection_every_days: float = Field(
        default=6.0,
        description="unused since the weekly reflection runs at reflection_at (kept so that"
        " older config files load)",
    )
    reflection_at: str = Field(
        default="sunday 03:00",
        pattern=r"^([A-Za-z]{3,9} )?\d{1,2}:\d{2}$",
        description="the weekly reflection is due at this local time (weekday HH:MM; HH:MM:"
        " daily), at the first hourly check after it, once after downtime",
    )
    insights_every_hours: float = Field(
        default=24.0,
        description="theory-of-mind insights (how the user communicates) at most this often",
    )
    llm_calls_per_day: int = Field(
        default=12,
        description="budget of LLM calls per day and user for these tasks (jobs wait for the"
        " next day)",
    )


@dataclass(frozen=True, config=SECTION)
class LifecycleConfig:
    """Memory upkeep policies (lobug.memory.lifecycle)."""

    gc_interval_s: float = Field(
        default=3600.0,
        ge=0,
        description="the GC pass (0 = never), every this often when gc_at is empty; decay only"
        " lowers rank, it never deletes",
    )
    gc_at: str = Field(
        default="03:00",
        pattern=r"^(\d{1,2}:\d{2})?$",
        description="the nightly GC pass at this local time (HH:MM; once at start after"
        " downtime), which also forgets finished jobs and other rows that only grow; empty:"
        " every gc_interval_s",
    )
    decay_rate: float = Field(
        default=0.1,
        description="Ebbinghaus rate (per day) of a memory of importance 0; a memory's own rate is"
        " this times (1 - importance), so what matters fades slower (0.5 -> 0.05/day: a strength"
        " of 20 days). Decay lowers rank only; every use divides the rate.",
    )
    purge_after_days: float = Field(
        default=30.0, description="a soft-deleted memory is purged after this (restore before)"
    )
    archive_idle_days: float = Field(
        default=30.0,
        description="a mid-layer memory unused this long is archived (out of the prompt, still"
        " found by search and restorable)",
    )
    stranger_turn_days: float = Field(
        default=7.0,
        gt=0,
        description="a public-trust caller's (a stranger's) turns are deleted after this"
        " (docs/security.md)",
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
    session_consolidation: bool = Field(
        default=True,
        description="a session left for another (or idle past chat.session_idle_minutes) has its"
        " exchanges turned into facts once",
    )
