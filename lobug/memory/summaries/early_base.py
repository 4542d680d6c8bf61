"""A base memory before the long cascade has one: distilled from the facts (seed 004 §2.1).

The long cascade needs ~20 summaries (~400 messages) before it writes a base memory; a new user
should have a profile within days. So once `MIN_FACTS` active facts exist and no summary has
been incorporated yet, the base memory is distilled from facts alone (the nearest to a broad
query about the user, as the long cascade chooses them); again each time the facts have doubled
since, until the long cascade takes over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lobug.memory.summaries import base_memory, cascades
from lobug.storage.vectors import read_meta, write_meta

ACTOR = "base_from_facts"
MAX_FACTS = 30
_MARK = "base_from_facts.facts."  # meta: the fact count of the last distillation
PROFILE_QUERY = "The user: who they are, their work, family and home, what they like, their plans."


def fact_count(conn: Any, user_id: str) -> int:
    sql = "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = 'fact' AND status = 'active'"
    return int(conn.execute(sql, (user_id,)).fetchone()[0])


def cascade_took_over(conn: Any, user_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM memories WHERE user_id = ? AND kind = 'summary' AND incorporated = 1"
        " LIMIT 1",
        (user_id,),
    ).fetchone()
    return row is not None


def distilled_at(conn: Any, user_id: str) -> int:
    return int(read_meta(conn, _MARK + user_id) or 0)


MIN_FACTS = 8  # a new user's base memory is distilled from facts once this many exist


def due(conn: Any, user_id: str) -> bool:
    if cascade_took_over(conn, user_id):
        return False
    count, before = fact_count(conn, user_id), distilled_at(conn, user_id)
    if before == 0:
        return count >= MIN_FACTS and not base_memory.get_base(conn, user_id).strip()
    return count >= 2 * before


def query(current_base: str) -> str:
    """The broad query the facts are chosen by (no summaries yet): the document so far, or
    what it will be about."""
    return current_base.strip() or PROFILE_QUERY


def inputs(conn: Any, user_id: str, vector: Sequence[float] | None) -> tuple[str, list[str], int]:
    """(current base, the MAX_FACTS facts nearest `vector` — the top facts while vectors are
    off —, fact count) for one distillation: the long cascade's choice of facts, more of them
    (they are all there is to distil)."""
    base, facts = cascades.distill_inputs(conn, user_id, vector, MAX_FACTS)
    return base, facts, fact_count(conn, user_id)


def store_base(conn: Any, user_id: str, content: str, *, count: int, now: float) -> bool:
    """Write it unless the long cascade took over or another run did this meanwhile."""
    if cascade_took_over(conn, user_id) or distilled_at(conn, user_id) >= count:
        return False
    base_memory.set_base(
        conn,
        user_id,
        content,
        now=now,
        actor=ACTOR,
        meta={"facts": count, "words": len(content.split())},
    )
    write_meta(conn, _MARK + user_id, str(count))
    return True
