"""The weekly reflection (seed 003): a paragraph looking back over the week's facts.

Due when the user's last reflection is at least `reflection_every_days` old (or there is none)
and at least `reflection_min_facts` facts were learned in the last 7 days. Stored as a memory of
kind `reflection`, tagged `weekly`, with `decay_rate` 0 (it never fades); the prompt shows the
latest one (`notes`).
"""

from __future__ import annotations

import re
from typing import Any

from lobug.llm.ask import InvalidOutput, plain_text
from lobug.memory import enqueue
from lobug.memory.reflect import marks
from lobug.memory.store import rows as store
from lobug.memory.write.validator import validate_fact

TASK = "reflection"
ACTOR = "reflection"
WEEK_S = 7 * 86400.0
MAX_FACTS = 40  # a small model's context: the week's most important facts
MAX_SUMMARIES = 5
GIVE_UP_S = 86400.0  # after nonsense twice, the next try waits a day
_LABEL = re.compile(r"^(?:weekly )?reflection\s*:\s*", re.IGNORECASE)


def latest(conn: Any, user_id: str) -> store.MemoryRow | None:
    row = conn.execute(
        "SELECT * FROM memories WHERE user_id = ? AND kind = 'reflection' AND status = 'active'"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        (user_id,),
    ).fetchone()
    return None if row is None else store.MemoryRow.from_row(row)


def new_facts(conn: Any, user_id: str, now: float, limit: int = MAX_FACTS) -> list[str]:
    rows = conn.execute(
        "SELECT content FROM memories WHERE user_id = ? AND kind = 'fact' AND status = 'active'"
        " AND created_at >= ? ORDER BY importance DESC, created_at DESC LIMIT ?",
        (user_id, now - WEEK_S, limit),
    )
    return [str(r[0]) for r in rows]


def week_summaries(conn: Any, user_id: str, now: float) -> list[str]:
    rows = conn.execute(
        "SELECT content FROM memories WHERE user_id = ? AND kind = 'summary'"
        " AND status = 'active' AND created_at >= ? ORDER BY id DESC LIMIT ?",
        (user_id, now - WEEK_S, MAX_SUMMARIES),
    )
    return [str(r[0]) for r in rows][::-1]


def due(conn: Any, user_id: str, *, now: float, every_days: float, min_facts: int) -> bool:
    if marks.quiet(conn, TASK, user_id, now, GIVE_UP_S):
        return False
    last = latest(conn, user_id)
    if last is not None and now - last.created_at < every_days * 86400.0:
        return False
    count = conn.execute(
        "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = 'fact' AND status = 'active'"
        " AND created_at >= ?",
        (user_id, now - WEEK_S),
    ).fetchone()[0]
    return int(count) >= min_facts


def inputs(conn: Any, user_id: str, now: float) -> tuple[list[str], list[str]]:
    return new_facts(conn, user_id, now), week_summaries(conn, user_id, now)


def parse(raw: str) -> str:
    text = _LABEL.sub("", plain_text(raw)).strip()
    if len(text) < 40 or text[0] in "[{":
        raise InvalidOutput("not a reflection paragraph", raw)
    result = validate_fact(text, "reflection")
    if not result.ok:
        raise InvalidOutput(f"reflection rejected: {result.reason}", raw)
    return result.text


def store_reflection(
    conn: Any,
    user_id: str,
    content: str,
    *,
    now: float,
    every_days: float,
    facts: int,
    max_attempts: int,
) -> int | None:
    """Write the reflection unless another run wrote one meanwhile; its vector is a job."""
    last = latest(conn, user_id)
    if last is not None and now - last.created_at < every_days * 86400.0:
        return None
    memory_id = store.insert_memory(
        conn,
        user_id=user_id,
        kind="reflection",
        content=content,
        now=now,
        actor=ACTOR,
        importance=0.6,
        decay_rate=0.0,  # seed 003: a reflection never decays
        tags=("weekly",),
        history_meta={"facts": facts},
    )
    enqueue.embed_memory(conn, memory_id, now=now, max_attempts=max_attempts)
    return memory_id
