"""A memory's strength: Ebbinghaus retrievability that slows its decay each time it is used.

    retrievability  R = exp(−rate · days since last seen)        (seed 003's curve)
    strength        S = 1 / rate  (days for R to fall to 1/e)    rate 0 = confirmed: R = 1

Every use — a retrieval into a prompt or a /v1/query result (counted by `search.hits`), or the
user saying it again (`rows.mention_again`) — is a spaced repetition:

    rate' = max(1 / max_strength_days, rate / (1 + gain · (1 − R)))

so the gain is largest when the memory was nearly forgotten and ~0 when it was used a moment
ago (twenty retrievals in one evening count about as much as one). A fact used every week keeps
R near 1 and its strength grows toward years; a fact said once fades in rank. Retrievability is
a *ranking* term (`search.scoring.rescore`): it never deletes anything (issue 10; seed 004 makes
what the user told us permanent).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

DAY = 86_400.0
# What a memory of importance 0.5 fades like at the default rate (`lifecycle.decay_rate` 0.1 ×
# (1 − 0.5)); a raw turn, which has no importance, fades so too (`search.scoring`).
ORDINARY_RATE = 0.05


@dataclass(frozen=True)
class Strength:
    """How a use reinforces a memory (the formula is in the module docstring)."""

    gain: float = 1.0
    max_days: float = 3650.0

    def reinforce(self, rate: float, days_since_seen: float) -> float:
        """The decay rate after one more use `days_since_seen` after the last one."""
        if rate <= 0:
            return 0.0  # confirmed: protected already
        r = retrievability(rate, days_since_seen)
        return max(1.0 / self.max_days, rate / (1.0 + self.gain * (1.0 - r)))


def retrievability(rate: float, days: float) -> float:
    if rate <= 0:
        return 1.0
    return math.exp(-rate * max(0.0, days))


def strength_days(rate: float) -> float | None:
    """Days for retrievability to fall to 1/e; None for a confirmed memory (never fades)."""
    return None if rate <= 0 else 1.0 / rate


def seen_at(row: Any) -> float:
    """When a memory row was last used: its last access, else its creation."""
    return float(row["last_accessed"] or row["created_at"])


def reinforce_row(conn: Any, row: Any, *, at: float, strength: Strength) -> tuple[float, float]:
    """Lower the row's decay rate for a use at `at` (caller's transaction); (old, new) rate."""
    old = float(row["decay_rate"])
    new = strength.reinforce(old, (at - seen_at(row)) / DAY)
    if new != old:
        conn.execute("UPDATE memories SET decay_rate = ? WHERE id = ?", (round(new, 9), row["id"]))
    return old, new


DEFAULT = Strength()
