"""Reconcile one extracted fact with what is stored: repeat, replace a near-duplicate, or add.

Seed 004 §9: the nearest active fact by cosine distance; below `duplicate_distance` the new fact
supersedes it ("I moved to Seattle" replaces "lives in Portland"). Unlike the seed nothing is
deleted: the old row is archived with `valid_until`, history records both sides, and the
provenance of both stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lobug.memory import knn, store
from lobug.memory.extraction import Candidate

ACTOR = "extractor"
IMPORTANCE = {"personal": 0.7, "preference": 0.6, "event": 0.5, "knowledge": 0.5}


@dataclass(frozen=True)
class Outcome:
    action: str  # added | superseded | repeated
    memory_id: int
    replaced_id: int | None = None
    distance: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def reconcile(
    conn: Any,
    candidate: Candidate,
    vector: Sequence[float] | None,
    *,
    user_id: str,
    session_id: str | None,
    turn_ids: Sequence[int],
    now: float,
    duplicate_distance: float,
    job_id: int | None = None,
) -> Outcome:
    """Store one candidate (inside the caller's write transaction)."""
    meta = {"turns": list(turn_ids), "job": job_id}
    same = store.active_by_hash(conn, user_id, store.content_hash(candidate.content))
    if same is not None:
        store.mention_again(conn, same, now=now, actor=ACTOR, meta=meta)
        store.link_sources(conn, same.id, turn_ids)
        return Outcome("repeated", same.id)

    nearest: tuple[store.MemoryRow, float] | None = None
    if vector is not None:
        found = knn.nearest_facts(
            conn, vector, user_id=user_id, k=1, max_distance=duplicate_distance
        )
        if found and found[0][1] < duplicate_distance and not found[0][0].pinned:
            nearest = found[0]  # pinned facts are the user's word: never replaced silently

    memory_id = store.insert_memory(
        conn,
        user_id=user_id,
        kind="fact",
        content=candidate.content,
        category=candidate.category,
        importance=IMPORTANCE.get(candidate.category, 0.5),
        supersedes=nearest[0].id if nearest else None,
        session_id=session_id,
        now=now,
        actor=ACTOR,
        attributes={"source": "llm"},
        history_meta={**meta, "supersedes": nearest[0].id if nearest else None},
    )
    store.link_sources(conn, memory_id, turn_ids)
    if vector is not None:
        knn.put_memory_vector(conn, memory_id, vector)
    if nearest is None:
        return Outcome("added", memory_id)

    old, distance = nearest
    store.archive_memory(
        conn,
        old,
        now=now,
        actor=ACTOR,
        new_value=candidate.content,
        meta={**meta, "superseded_by": memory_id, "distance": round(distance, 4)},
    )
    knn.drop_memory_vector(conn, old.id)  # KNN sees active facts only; a restore re-embeds
    return Outcome("superseded", memory_id, old.id, distance)
