"""What the templates show that the service layer does not return as such."""

from __future__ import annotations

from typing import Any

from lobug.memory.table.strength import DAY, retrievability, strength_days


def strength(memory: dict[str, Any], now: float) -> dict[str, Any]:
    """Retrievability now and strength in days (lobug.memory.table.strength's curve)."""
    rate = float(memory.get("decay_rate") or 0.0)
    seen = memory.get("last_accessed") or memory.get("created_at") or now
    days = max(0.0, (now - float(seen)) / DAY)
    return {"retrievability": retrievability(rate, days), "days": strength_days(rate)}


def with_strength(memories: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
    return [{**m, "strength": strength(m, now)} for m in memories]


def by_category(memories: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Grouped by category (uncategorised as 'general'), long-term layer first in each."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for memory in memories:
        groups.setdefault(memory.get("category") or "general", []).append(memory)
    return [
        (name, sorted(items, key=lambda m: (m.get("layer") != "long", -(m.get("importance") or 0))))
        for name, items in sorted(groups.items())
    ]


def terms(breakdown: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """A score breakdown as (term, value) rows, nested terms as `memory.recency`."""
    if not isinstance(breakdown, dict):
        return []
    rows: list[tuple[str, Any]] = []
    for key, value in breakdown.items():
        if isinstance(value, dict):
            rows += terms(value, f"{prefix}{key}.")
        elif isinstance(value, int | float | str | None) and not isinstance(value, bool):
            rows.append((f"{prefix}{key}", value))
    return rows
