"""Theory-of-mind insights (seed 001 §3; docs/seeds.md, rows 119-128): 1-3 third-person notes
on how the user communicates.

At most one run per user in `insights_every_hours`, counted from the last run whether or not it
found anything, and only when the user said something since. Stored as kind `insight`, category
`relationship_dynamic`; retrieval weighs them low, so one reaches the prompt only when it ranks
for the turn's words. One of importance ≥ 4 that sets a benign profile field is also written as
that fact (seed 001 §10, `consent.from_insight`).
"""

from __future__ import annotations

from typing import Any

from lobug.config import MemoryConfig
from lobug.conversation import OWNER_TURN
from lobug.llm.ask import InvalidOutput
from lobug.llm.client import OutputSchema
from lobug.memory import enqueue
from lobug.memory.graph.entities import link_entities
from lobug.memory.instructions import answer_items
from lobug.memory.reflect import marks
from lobug.memory.settings import WritePolicy
from lobug.memory.summaries.cascades import entities_of
from lobug.memory.table import rows as store
from lobug.memory.table.dedup import content_hash
from lobug.memory.write import consent
from lobug.memory.write.validator import MAX_CHARS, validate_fact

TASK = "insights"
ACTOR = "theory_of_mind"
KIND = "insight"
CATEGORY = "relationship_dynamic"
MAX_INSIGHTS = 3
MAX_TOKENS = 220  # seed 001 §3: the insight call's answer is small, and bounded
MAX_ACTIVITY = 5
MAX_FACTS = 3
SNIPPET_CHARS = 1000
DEFAULT_IMPORTANCE = 2  # of 5 (seed 001 §3)
# What the insight prompt asks for; parse also takes the other shapes small models send.
SCHEMA = OutputSchema(
    "insights",
    {
        "type": "object",
        "properties": {
            "insights": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "summary": {"type": "string", "maxLength": MAX_CHARS},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                        "importance": {"type": "integer", "minimum": 1, "maximum": 5},
                    },
                    "required": ["summary", "tags", "importance"],
                },
                "maxItems": MAX_INSIGHTS,
            }
        },
        "required": ["insights"],
    },
)


def due(conn: Any, user_id: str, *, now: float, every_hours: float) -> bool:
    if marks.quiet(conn, TASK, user_id, now, every_hours * 3600.0):
        return False
    since = marks.last(conn, TASK, user_id) or 0.0
    said = conn.execute(
        "SELECT 1 FROM turns WHERE user_id = ? AND role = 'user' AND ts > ? LIMIT 1",
        (user_id, since),
    ).fetchone()
    return said is not None


def inputs(conn: Any, user_id: str, now: float) -> tuple[list[str], list[str], str]:
    """(new facts, recent activity, conversation snippet) for one run; a memory past its
    `expires_at` at `now` is not read."""
    since = marks.last(conn, TASK, user_id) or 0.0
    facts = [
        str(r[0])
        for r in conn.execute(
            "SELECT content FROM memories WHERE user_id = ? AND kind = 'fact'"
            f" AND status = 'active' AND created_at > ? AND {store.unexpired()}"
            " ORDER BY id DESC LIMIT ?",
            (user_id, since, now, MAX_FACTS),
        )
    ]
    activity = [
        str(r[0])
        for r in conn.execute(
            "SELECT content FROM memories WHERE user_id = ? AND kind = 'summary'"
            f" AND status = 'active' AND {store.unexpired()} ORDER BY id DESC LIMIT ?",
            (user_id, now, MAX_ACTIVITY),
        )
    ]
    lines: list[str] = []
    used = 0
    for role, text in conn.execute(
        "SELECT role, text FROM turns WHERE user_id = ? AND role IN ('user', 'assistant')"
        f" AND {OWNER_TURN} ORDER BY id DESC LIMIT 20",
        (user_id,),
    ):
        line = f"{'User' if role == 'user' else 'Assistant'}: {' '.join(str(text).split())}"
        if used + len(line) > SNIPPET_CHARS:
            break
        used += len(line) + 1
        lines.append(line)
    return facts, activity, "\n".join(reversed(lines))


def parse(raw: str) -> list[tuple[str, tuple[str, ...], float]]:
    """(text, tags, importance 0..1) of each valid insight; [] is a valid "nothing stands out".
    InvalidOutput when there is no such JSON, or none of the items passes the writing rules."""
    items = answer_items(
        raw, is_item=lambda v: isinstance(v.get("summary"), str), list_keys=("insights",)
    )
    found: list[tuple[str, tuple[str, ...], float]] = []
    for item in items:
        text = item.get("summary") if isinstance(item, dict) else item
        if not isinstance(text, str):
            continue
        result = validate_fact(text, KIND)
        if not result.ok:
            continue
        tags = item.get("tags", []) if isinstance(item, dict) else []
        tags = tuple(str(t)[:40] for t in tags if isinstance(t, str))[:5]
        found.append((result.text, tags, _importance(item)))
    if items and not found:
        raise InvalidOutput(f"none of the {len(items)} item(s) is a valid insight", raw)
    return found[:MAX_INSIGHTS]


def _importance(item: Any) -> float:
    value = item.get("importance", DEFAULT_IMPORTANCE) if isinstance(item, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        value = DEFAULT_IMPORTANCE
    return max(1.0, min(5.0, float(value))) / 5.0


def store_insights(
    conn: Any,
    user_id: str,
    found: list[tuple[str, tuple[str, ...], float]],
    *,
    now: float,
    cfg: MemoryConfig,
    policy: WritePolicy,
) -> list[int]:
    """Write the new insights (an active one with the same text is not repeated), each linked
    to the entities it names, and record the run; returns the ids written. A confident one
    that sets a benign profile field (tone, goals) also writes it (`consent.from_insight`)."""
    written: list[int] = []
    for text, tags, importance in found:
        if store.active_by_hash(conn, user_id, content_hash(text), KIND) is not None:
            continue
        memory_id = store.insert_memory(
            conn,
            user_id=user_id,
            kind=KIND,
            content=text,
            now=now,
            actor=ACTOR,
            category=CATEGORY,
            importance=importance,
            tags=tags,
        )
        link_entities(conn, memory_id, entities_of(text), user_id, now)
        enqueue.embed_memory(conn, memory_id, now=now)
        written.append(memory_id)
        consent.from_insight(
            conn,
            text,
            user_id=user_id,
            importance=importance,
            insight_id=memory_id,
            cfg=cfg,
            policy=policy,
            now=now,
            actor=ACTOR,
        )
    marks.put(conn, TASK, user_id, now)
    return written
