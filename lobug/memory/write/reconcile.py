"""Reconcile one candidate with what is stored: repeat, merge, supersede, or add.

In order, inside the caller's write transaction:

1. **exact duplicate** — same `dedup.content_hash` as an active memory of the same kind: one
   more mention and hit, history MERGE.
2. **contradiction** — a fact with the same subject and attribute (`fact_keys`) as active facts
   but another value ("lives in Portland", then "moved to Seattle"): the old ones are archived
   with `valid_until`, the new row records `supersedes`, history ARCHIVE (old) and ADD (new).
   Values are compared by their head ("Denver with her cats" claims Denver); the same claim
   again goes on to step 3. Pinned facts are the user's word: never archived by a
   contradiction, the new fact is added beside them.
3. **near duplicate** — word overlap (Jaccard) ≥ `near_jaccard` with an active memory found
   by BM25 or KNN, or cosine distance < `duplicate_distance`: merged into it (MERGE).
4. otherwise **added**.

A new row gets its PII tags, the heuristic rules that matched, entity links (regex NER) and,
when it has a vector, relation edges to its neighbours. Every outcome bumps the delta log.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lobug.memory.graph import relations
from lobug.memory.graph.entities import extract_entities, link_entities
from lobug.memory.lifecycle.status import change_status
from lobug.memory.search.corpus import SearchFilter
from lobug.memory.search.lexical import text_ranks
from lobug.memory.settings import WritePolicy
from lobug.memory.store import delta
from lobug.memory.store import rows as store
from lobug.memory.store.dedup import content_hash, jaccard, normalize
from lobug.memory.vectors import knn
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.fact_keys import key_string, parse_fact
from lobug.memory.write.pii import pii_tags

ACTOR = "extractor"
LEXICAL_POOL = 20  # BM25 neighbours checked for word overlap
NEAR_K = 5  # vector neighbours checked for the distance band
# Where a value's head ends: "Denver and her email is …", "a house in Portland near the river".
_VALUE_TAIL = re.compile(r"\b(?:and|with|near|where|because|since|who|which|but|so)\b")


@dataclass(frozen=True)
class Outcome:
    action: str  # added | merged | superseded | repeated
    memory_id: int
    replaced_id: int | None = None
    distance: float | None = None
    jaccard: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Origin:
    """Who and what a candidate comes from, and where a new row goes."""

    user_id: str = "default"
    session_id: str | None = None
    turn_ids: Sequence[int] = ()
    actor: str = ACTOR
    job_id: int | None = None
    store: str = "private"
    pinned: bool = False
    tags: Sequence[str] = ()
    source: str = "llm"  # llm | heuristic | user
    meta: dict[str, Any] = field(default_factory=dict)

    def history_meta(self) -> dict[str, Any]:
        return {"turns": list(self.turn_ids), "job": self.job_id, **self.meta}


def reconcile(
    conn: Any,
    cand: Candidate,
    vector: Sequence[float] | None,
    *,
    origin: Origin,
    policy: WritePolicy,
    now: float,
) -> Outcome:
    # Reconciliation stays inside the writer's store: a write must never merge into, supersede
    # or link to a memory in a store its writer may not see (trust gating, seed 002).
    same = store.active_by_hash(
        conn, origin.user_id, content_hash(cand.content), cand.kind, store=origin.store
    )
    if same is not None:
        _merge(conn, same, cand, origin, policy, now, {"reason": "exact_duplicate"})
        return Outcome("repeated", same.id)
    key = key_string(cand.content) if cand.kind == "fact" else None
    if key is not None:
        outcome = _against_key(conn, cand, key, vector, origin, policy, now)
        if outcome is not None:
            return outcome
    neighbours: list[tuple[store.MemoryRow, float]] = []
    if vector is not None and cand.kind == "fact":
        # One KNN scan serves the near-duplicate check and the relation edges.
        k = max(NEAR_K, policy.link_k + 1)
        neighbours = [
            (row, distance)
            for row, distance in knn.nearest_facts(conn, vector, user_id=origin.user_id, k=k)
            if row.store == origin.store
        ]
    near = _near_duplicate(conn, cand, neighbours, origin, policy)
    if near is not None:
        row, score, distance = near
        meta = {"reason": "near_duplicate", "jaccard": score, "distance": distance}
        _merge(conn, row, cand, origin, policy, now, meta)
        return Outcome("merged", row.id, distance=distance, jaccard=score)
    memory_id = _add(
        conn, cand, key, vector, origin, policy, now, supersedes=None, neighbours=neighbours
    )
    return Outcome("added", memory_id)


def _against_key(
    conn: Any,
    cand: Candidate,
    key: str,
    vector: Sequence[float] | None,
    origin: Origin,
    policy: WritePolicy,
    now: float,
) -> Outcome | None:
    """Supersede the active facts this one contradicts; None when it contradicts none."""
    rows = conn.execute(
        "SELECT * FROM memories WHERE user_id = ? AND fact_key = ? AND kind = 'fact'"
        " AND status = 'active' AND store = ? ORDER BY id DESC",
        (origin.user_id, key, origin.store),
    ).fetchall()
    claim = _claim(cand.content)
    olds = [store.MemoryRow.from_row(r) for r in rows]
    if not olds or claim is None or any(_claim(m.content) == claim for m in olds):
        return None  # the same claim again: the near-duplicate check decides
    negated, value = claim
    if negated:
        # "no longer lives in Portland" retires only a Portland fact.
        olds = [m for m in olds if _claim(m.content) == (False, value)]
    replaced = [m for m in olds if not m.pinned]
    if not replaced:
        return None
    memory_id = _add(conn, cand, key, vector, origin, policy, now, supersedes=replaced[0].id)
    for old in replaced:
        # Kept for history, no longer active (nor in KNN: a restore re-embeds it).
        change_status(
            conn,
            old,
            "archived",
            now=now,
            event="ARCHIVE",
            actor=origin.actor,
            old_value=old.content,
            new_value=cand.content,
            meta={**origin.history_meta(), "superseded_by": memory_id, "fact_key": key},
            valid_until=now,
            updated_at=now,
        )
    return Outcome("superseded", memory_id, replaced[0].id)


def _claim(fact: str) -> tuple[bool, str] | None:
    """(negated, the value's head): "lives in Denver with her cats" claims Denver, as does
    "lives in Denver and works at a bakery" — two such facts do not contradict each other."""
    key = parse_fact(fact)
    if key is None or key.value is None:
        return None
    head = _VALUE_TAIL.split(normalize(key.value), maxsplit=1)[0].strip()
    return key.negated, head


def _near_duplicate(
    conn: Any,
    cand: Candidate,
    neighbours: Sequence[tuple[store.MemoryRow, float]],
    origin: Origin,
    policy: WritePolicy,
) -> tuple[store.MemoryRow, float, float | None] | None:
    """The most overlapping active memory of the kind, if near enough by words or vector."""
    flt = SearchFilter(user_id=origin.user_id, kinds=(cand.kind,))
    lexical = text_ranks(conn, cand.content, LEXICAL_POOL, flt=flt)
    pool: dict[int, float | None] = dict.fromkeys(lexical, None)
    for neighbour, near in neighbours[:NEAR_K]:
        pool[neighbour.id] = near
    best: tuple[store.MemoryRow, float, float | None] | None = None
    for memory_id, distance in pool.items():
        row = store.get_memory(conn, memory_id)
        if row is None or row.status != "active" or row.store != origin.store:
            continue
        overlap = jaccard(cand.content, row.content)
        close = distance is not None and distance < policy.duplicate_distance
        if (overlap >= policy.near_jaccard or close) and (best is None or overlap > best[1]):
            best = (row, round(overlap, 4), None if distance is None else round(distance, 4))
    return best


def _merge(
    conn: Any,
    row: store.MemoryRow,
    cand: Candidate,
    origin: Origin,
    policy: WritePolicy,
    now: float,
    meta: dict[str, Any],
) -> None:
    said = None if cand.content == row.content else cand.content
    store.mention_again(
        conn,
        row,
        now=now,
        actor=origin.actor,
        meta={**origin.history_meta(), **meta},
        said=said,
        strength=policy.strength,
    )
    store.link_sources(conn, row.id, origin.turn_ids)
    delta.bump(
        conn,
        origin.session_id,
        row.id,
        "merged",
        _delta_meta(row.content, row.category, row.importance, row.store),
        now,
        origin.user_id,
    )


def _add(
    conn: Any,
    cand: Candidate,
    key: str | None,
    vector: Sequence[float] | None,
    origin: Origin,
    policy: WritePolicy,
    now: float,
    *,
    supersedes: int | None,
    neighbours: Sequence[tuple[store.MemoryRow, float]] | None = None,
) -> int:
    memory_id = store.insert_memory(
        conn,
        user_id=origin.user_id,
        kind=cand.kind,
        content=cand.content,
        category=cand.category,
        importance=cand.importance,
        supersedes=supersedes,
        session_id=origin.session_id,
        now=now,
        actor=origin.actor,
        attributes={"source": origin.source},
        history_meta={**origin.history_meta(), "supersedes": supersedes},
        store=origin.store,
        pinned=origin.pinned,
        tags=origin.tags,
        pii=pii_tags(cand.content),
        rules=cand.rules,
        fact_key=key,
        decay_rate=policy.decay_rate_for(cand.importance),
    )
    store.link_sources(conn, memory_id, origin.turn_ids)
    link_entities(conn, memory_id, extract_entities(cand.content), origin.user_id, now)
    if vector is not None and cand.kind == "fact":
        knn.put_memory_vector(conn, memory_id, vector)
        relations.link_neighbours(
            conn,
            memory_id,
            vector,
            user_id=origin.user_id,
            link_min=policy.link_min,
            k=policy.link_k,
            now=now,
            actor=origin.actor,
            found=neighbours,
        )
    event = "created" if supersedes is None else "updated"
    meta = _delta_meta(cand.content, cand.category, cand.importance, origin.store)
    delta.bump(conn, origin.session_id, memory_id, event, meta, now, origin.user_id)
    return memory_id


def _delta_meta(
    content: str, category: str | None, importance: float, where: str
) -> dict[str, Any]:
    return {"content": content, "category": category, "importance": importance, "store": where}
