"""The weekly reflection (seed 003; docs/seeds.md, rows 244-246): a paragraph looking back over
the week's facts.

Due once a week (`reflection.reflection_at`, Sunday 03:00 local time): when the user's last
reflection is from before that slot (or there is none), and at least `MIN_FACTS` facts were
learned in the last 7 days. Stored as a memory of kind `reflection`, tagged `weekly`, with
`decay_rate` 0 (it never fades); the prompt shows the latest one (`notes`). Its input, the
week's facts and episodes, is fitted to `INPUT_CHARS`: the seed's 200 items would overflow the
whole context of the small model a Pi runs. The facts and summaries it read are its sources
(seed 003's `source_ids`): a `derived_from` edge to each (`graph.relations.link_derived`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lobug.conversation import CONVERSATION_TURN, OWNER_TURN
from lobug.llm.ask import InvalidOutput, plain_text
from lobug.memory import enqueue
from lobug.memory.graph import relations
from lobug.memory.reflect import marks
from lobug.memory.table import rows as store
from lobug.memory.write.validator import validate_fact

TASK = "reflection"
ACTOR = "reflection"
WEEK_S = 7 * 86400.0
MAX_ITEMS = 200  # facts and episodes of the week, at most (seed 003)
INPUT_CHARS = 8000  # of them all, what a 4k-token context holds beside the prompt and answer
TURN_CHARS = 300  # of one thing the user said
GIVE_UP_S = 86400.0  # after nonsense twice, the next try waits a day
MIN_FACTS = 3  # new facts in 7 days the reflection needs
_LABEL = re.compile(r"^(?:weekly )?reflection\s*:\s*", re.IGNORECASE)


def latest(conn: Any, user_id: str) -> store.MemoryRow | None:
    row = conn.execute(
        "SELECT * FROM memories WHERE user_id = ? AND kind = 'reflection' AND status = 'active'"
        " ORDER BY created_at DESC, id DESC LIMIT 1",
        (user_id,),
    ).fetchone()
    return None if row is None else store.MemoryRow.from_row(row)


def week_memories(conn: Any, user_id: str, now: float, kind: str) -> list[tuple[int, str]]:
    """The week's memories of `kind` (id, content): facts most important first, summaries
    newest first."""
    order = "importance DESC, created_at DESC" if kind == "fact" else "id DESC"
    rows = conn.execute(
        "SELECT id, content FROM memories WHERE user_id = ? AND kind = ? AND status = 'active'"
        f" AND created_at >= ? AND {store.unexpired()} ORDER BY {order} LIMIT ?",
        (user_id, kind, now - WEEK_S, now, MAX_ITEMS),
    )
    return [(int(r[0]), str(r[1])) for r in rows]


def week_said(conn: Any, user_id: str, now: float) -> list[str]:
    """What the user said this week in their own sessions, newest first (a lower-trust
    caller's words never reach a reflection)."""
    rows = conn.execute(
        f"SELECT text FROM turns WHERE user_id = ? AND role = 'user' AND ts >= ?"
        f" AND {CONVERSATION_TURN} AND {OWNER_TURN} ORDER BY id DESC LIMIT ?",
        (user_id, now - WEEK_S, MAX_ITEMS),
    )
    return [f'The user said: "{_clip(str(r[0]))}"' for r in rows]


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TURN_CHARS else text[: TURN_CHARS - 1] + "…"


def fit(facts: list[str], episodes: list[str]) -> tuple[list[str], list[str]]:
    """The facts and episodes the prompt can hold: each list in its order, up to half of
    INPUT_CHARS each and MAX_ITEMS in all, then what one leaves to the other."""
    chars = INPUT_CHARS
    taken: list[list[str]] = [[], []]
    used = [0, 0]
    for share in (chars // 2, chars):  # first each its half, then the rest to either
        for side, source in enumerate((facts, episodes)):
            for text in source[len(taken[side]) :]:
                cost = len(text) + 3  # "- " and the line break
                if sum(used) + cost > chars or used[side] + cost > share:
                    break
                if len(taken[0]) + len(taken[1]) >= MAX_ITEMS:
                    break
                taken[side].append(text)
                used[side] += cost
    return taken[0], taken[1]


def due(conn: Any, user_id: str, *, now: float, slot: float) -> bool:
    """`slot`: when this week's reflection came due (`reflection.reflection_at`, Sunday at
    03:00 local time): one reflection after it, the first check that can run it (a daemon
    that was off on Sunday reflects once when it is back)."""
    if marks.quiet(conn, TASK, user_id, now, GIVE_UP_S):
        return False
    last = latest(conn, user_id)
    if last is not None and last.created_at >= slot:
        return False
    count = conn.execute(
        "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = 'fact' AND status = 'active'"
        " AND created_at >= ?",
        (user_id, now - WEEK_S),
    ).fetchone()[0]
    return int(count) >= MIN_FACTS


@dataclass(frozen=True)
class Inputs:
    """What one reflection reads: the prompt's facts and episodes, and the ids of the memories
    among them (the facts, then the summaries; the user's words are the conversation log's)."""

    facts: list[str]
    episodes: list[str]
    source_ids: list[int]


def inputs(conn: Any, user_id: str, now: float) -> Inputs:
    """The week's facts and episodes (summaries, then the user's words) for the reflection
    prompt, fitted to INPUT_CHARS; the episodes oldest first, as a week is told."""
    summaries = week_memories(conn, user_id, now, "summary")
    facts = week_memories(conn, user_id, now, "fact")
    texts, episodes = fit(
        [text for _, text in facts],
        [text for _, text in summaries] + week_said(conn, user_id, now),
    )
    kept = min(len(episodes), len(summaries))  # `episodes` is a prefix of both lists joined
    # `fit` keeps a prefix of each list: the ids read are those of the prefixes.
    ids = [i for i, _ in facts[: len(texts)]] + [i for i, _ in summaries[:kept]]
    return Inputs(texts, episodes[:kept][::-1] + episodes[kept:][::-1], ids)


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
    slot: float,
    facts: int,
    sources: Sequence[int] = (),
) -> int | None:
    """Write the reflection unless another run wrote this week's meanwhile (`due`'s `slot`),
    linked to the memories it was written from (`sources`, `Inputs.source_ids`); its vector
    is a job."""
    last = latest(conn, user_id)
    if last is not None and last.created_at >= slot:
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
    relations.link_derived(conn, memory_id, sources, user_id=user_id, now=now)
    enqueue.embed_memory(conn, memory_id, now=now)
    return memory_id
