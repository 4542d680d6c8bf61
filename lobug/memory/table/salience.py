"""A memory's own worth, whatever is asked (seed 000): how often it was used, how recently,
how important it was said to be.

    s = w_freq·ln(1 + hits) + w_recency·exp(−λ·age_days) + w_importance·importance
        importance ∈ [0, 1]; age_days = now − (last_accessed or created_at)

The GC archives and demotes by it (`lifecycle.policies`, λ = `decay_lambda`: a memory idle for
14 days keeps half its recency); the search takes it, normalised by its most (`most`, hits
saturating at `hits_cap`), as one feature of the re-score, with its own slower λ
(`search.scoring`). Seed 000's weights, kept as the seed wrote them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

DAY = 86_400.0


@dataclass(slots=True)  # not frozen: one per candidate, a frozen __init__ costs µs
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
class Salience:
    """Seed 000's weights (`recency` off: a question about what happened, `search.scoring`)."""

    w_freq: float = 1.0
    w_recency: float = 1.0
    w_importance: float = 2.0
    decay_lambda: float = 0.05  # per day
    hits_cap: int = 20  # ln(1 + hits) saturates here for normalisation

    @property
    def most(self) -> float:
        """The score of a memory used `hits_cap` times, just now, of importance 1."""
        return self.w_freq * math.log1p(self.hits_cap) + self.w_recency + self.w_importance

    def score(self, row: Mapping[str, Any], now: float, lam: float | None = None) -> ScoreBreakdown:
        """The score of a memory row (missing columns take neutral defaults; a turn has no
        hits, an importance of 0.5 and its `ts` as age); `lam` in place of `decay_lambda`."""
        hits = int(field_of(row, "hits") or 0)
        importance = float(field_of(row, "importance", 0.5))
        age = age_days(row, now)
        freq = self.w_freq * math.log1p(max(0, hits))
        recency = self.w_recency * math.exp(-(self.decay_lambda if lam is None else lam) * age)
        imp = self.w_importance * importance
        return ScoreBreakdown(freq, recency, imp, freq + recency + imp, hits, age)


SALIENCE = Salience()


def age_days(row: Mapping[str, Any], now: float) -> float:
    """Days since the row was last seen: last access if any, else creation (never negative)."""
    seen = now
    for key in ("last_accessed", "created_at", "ts"):  # turns carry only `ts`
        value = field_of(row, key)
        if value is not None:
            seen = float(value)
            break
    return max(0.0, (now - float(seen)) / DAY)


def field_of(row: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """row[key] for dicts and sqlite3.Row alike, default when absent or NULL."""
    if isinstance(row, dict):  # the search's rows (`corpus.Reads`): no exception per miss
        value = row.get(key)
    else:
        try:
            value = row[key]
        except (KeyError, IndexError):
            return default
    return default if value is None else value
