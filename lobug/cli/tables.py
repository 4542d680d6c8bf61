"""Plain-text tables and field lists for people (the `--json` output is for programs)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

Column = tuple[str, str, int]  # key, heading, max width (0: no limit, for the last column)


def cell(value: Any, width: int = 0) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float):
        text = f"{value:.3g}" if abs(value) < 1e6 else when(value)
    elif isinstance(value, list | dict):
        text = json.dumps(value, ensure_ascii=False) if value else "-"
    else:
        text = " ".join(str(value).split())
    if width and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], empty: str) -> str:
    if not rows:
        return empty
    cells = [[cell(row.get(key), width) for key, _, width in columns] for row in rows]
    widths = [
        max(len(heading), *(len(line[i]) for line in cells))
        for i, (_, heading, _) in enumerate(columns)
    ]
    lines = [[heading for _, heading, _ in columns], *cells]
    return "\n".join(
        "  ".join(text.ljust(w) for text, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def fields(data: Mapping[str, Any], keys: Sequence[str] | None = None) -> str:
    keys = keys or list(data)
    width = max((len(k) for k in keys), default=0)
    out = []
    for key in keys:
        value = data.get(key)
        text = when(value) if key.endswith(("_at", "_from", "_until", "accessed")) else cell(value)
        out.append(f"{key.ljust(width)}  {text if value is not None else '-'}")
    return "\n".join(out)


MEMORY_COLUMNS: list[Column] = [
    ("id", "ID", 8),
    ("kind", "KIND", 10),
    ("category", "CATEGORY", 14),
    ("store", "STORE", 7),
    ("status", "STATUS", 12),
    ("importance", "IMP", 5),
    ("content", "CONTENT", 0),
]
HISTORY_COLUMNS: list[Column] = [
    ("id", "ID", 8),
    ("event", "EVENT", 11),
    ("actor", "ACTOR", 18),
    ("when", "WHEN (UTC)", 19),
    ("new_value", "VALUE", 0),
]
ENTITY_COLUMNS: list[Column] = [
    ("id", "ID", 6),
    ("type", "TYPE", 12),
    ("mention_count", "MENTIONS", 8),
    ("canonical_name", "NAME", 30),
    ("aliases", "ALIASES", 0),
]
