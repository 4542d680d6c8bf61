"""How a new memory meets the stored ones: the write path's constants, and the two settings it
takes from the config file (memory.duplicate_distance, lifecycle.decay_rate)."""

from __future__ import annotations

from dataclasses import dataclass

from lobug.config import Config
from lobug.memory.table.strength import DEFAULT as DEFAULT_STRENGTH
from lobug.memory.table.strength import Strength


@dataclass(frozen=True)
class WritePolicy:
    """How a new memory meets the stored ones (reconcile) and links to them (relations).
    Constants but duplicate_distance (memory.duplicate_distance: distances differ by embedding
    model) and decay_rate (lifecycle.decay_rate)."""

    duplicate_distance: float = 0.15  # cosine distance below which a new fact merges
    near_jaccard: float = 0.75  # word overlap at which a new fact merges
    link_min: float = 0.55  # similarity for a relation edge to a neighbour...
    link_k: int = 3  # ...among this many nearest, per new fact
    decay_rate: float = 0.1  # for importance 0 (lifecycle.decay_rate); see decay_rate_for
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
    return WritePolicy(
        duplicate_distance=config.memory.duplicate_distance,
        decay_rate=config.lifecycle.decay_rate,
    )
