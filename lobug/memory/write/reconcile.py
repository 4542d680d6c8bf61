"""Reconcile one candidate with what is stored: repeat, merge, supersede, or add ("newer wins";
docs/memory.md, "Writing a memory").

Inside the caller's write transaction, `decide` then `apply`: an exact duplicate (same
`dedup.content_hash`) is one more mention; otherwise the verdict (write/judge.py) says `same`
(merge), `update` / `contradiction` (a new row retires the old ones: archived, `valid_until`,
`superseded_by`, a `supersedes` edge) or `unrelated` (add). Pinned facts, and confirmed ones
unless the owner writes, are never retired (issue 25). One exchange is one mention: a merge
from turns the row was already extracted from reinforces nothing. Every outcome bumps the
delta log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lobug.access import OWNER_STORE
from lobug.memory.graph import relations
from lobug.memory.graph.entities import extract_entities, link_entities
from lobug.memory.lifecycle.status import Sql, change_status
from lobug.memory.settings import WritePolicy
from lobug.memory.table import delta, memory_events
from lobug.memory.table import rows as store
from lobug.memory.table.dedup import content_hash
from lobug.memory.vectors import knn
from lobug.memory.write import judge
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.fact_keys import key_string
from lobug.memory.write.judge import Judgement, Verdict
from lobug.memory.write.pii import pii_tags
from lobug.storage.sqlite import placeholders

ACTOR = "extractor"
NEAR_K = judge.NEAR_K  # vector neighbours checked for the distance band


@dataclass(frozen=True)
class Outcome:
    action: str  # added | merged | superseded | repeated
    memory_id: int
    replaced_id: int | None = None
    distance: float | None = None
    jaccard: float | None = None


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
    # The user's words the candidate was extracted from: the heuristic judge reads their
    # state-change markers ("I now drive …") when the fact itself lost them.
    said: str | None = None
    # Who wrote it (seed 001 §6.1), recorded on a new row: the agent, its run, the person speaking.
    agent_id: str | None = None
    run_id: str | None = None
    actor_id: str | None = None

    def history_meta(self) -> dict[str, Any]:
        writer = {"agent_id": self.agent_id, "run_id": self.run_id, "actor_id": self.actor_id}
        return {
            "turns": list(self.turn_ids),
            "job": self.job_id,
            **{key: value for key, value in writer.items() if value is not None},
            **self.meta,
        }


@dataclass(frozen=True)
class Resolution:
    """What reconcile will do with one candidate, decided before anything is written."""

    action: str  # repeat | merge | supersede | add
    row: store.MemoryRow | None = None  # repeat, merge: the stored fact kept
    kept: Judgement | None = None  # merge: the `same` judgement
    retire: tuple[Judgement, ...] = ()  # the stored facts the candidate replaces
    neighbours: tuple[tuple[store.MemoryRow, float], ...] = ()  # KNN, for relation edges

    @property
    def adds_row(self) -> bool:
        """Whether applying it writes a new memory row (what the extraction caps count)."""
        return self.action in ("supersede", "add")


def reconcile(
    conn: Any,
    cand: Candidate,
    vector: Sequence[float] | None,
    *,
    origin: Origin,
    policy: WritePolicy,
    now: float,
) -> Outcome:
    """`decide` (by the heuristic judge) and `apply`."""
    plan = decide(conn, cand, vector, origin=origin, policy=policy)
    return apply(conn, cand, vector, plan, origin=origin, policy=policy, now=now)


def decide(
    conn: Any,
    cand: Candidate,
    vector: Sequence[float] | None,
    *,
    origin: Origin,
    policy: WritePolicy,
    verdict: Verdict | None = None,
) -> Resolution:
    # Reconciliation stays inside the writer's store: a write must never merge into, supersede
    # or link to a memory in a store its writer may not see (trust gating, seed 002).
    same = store.active_by_hash(
        conn, origin.user_id, content_hash(cand.content), cand.kind, store=origin.store
    )
    if same is not None:
        return Resolution("repeat", row=same)
    neighbours: list[tuple[store.MemoryRow, float]] = []
    if vector is not None and cand.kind == "fact":
        # One KNN scan serves the heuristic judge's distance band and the relation edges.
        k = max(NEAR_K, policy.link_k + 1)
        neighbours = [
            (row, distance)
            for row, distance in knn.nearest_facts(conn, vector, user_id=origin.user_id, k=k)
            if row.store == origin.store
        ]
    if verdict is None:
        verdict = judge.heuristic_verdict(
            conn,
            cand,
            neighbours,
            user_id=origin.user_id,
            store_name=origin.store,
            policy=policy,
            said=origin.said,
        )
    kept = verdict.same()
    retire = tuple(
        j
        for j in verdict.replacing()
        if j.row.store == origin.store
        and not _protected(conn, j.row, origin)
        and (kept is None or j.row.id != kept.row.id)
    )
    if kept is not None and kept.row.store == origin.store:
        return Resolution(
            "merge", row=kept.row, kept=kept, retire=retire, neighbours=tuple(neighbours)
        )
    if retire:
        return Resolution("supersede", retire=retire, neighbours=tuple(neighbours))
    return Resolution("add", neighbours=tuple(neighbours))


def _protected(conn: Any, row: store.MemoryRow, origin: Origin) -> bool:
    """A fact no candidate retires: a pinned one (the user's word), or a confirmed one (decay
    rate 0) unless the owner's own words replace it (issue 25: a writer below the owner never
    rewrites what the owner confirmed). The new fact is added beside it."""
    if row.pinned:
        return True
    if origin.store == OWNER_STORE:
        return False
    got = conn.execute("SELECT decay_rate FROM memories WHERE id = ?", (row.id,)).fetchone()
    return got is not None and got[0] == 0


def apply(
    conn: Any,
    cand: Candidate,
    vector: Sequence[float] | None,
    plan: Resolution,
    *,
    origin: Origin,
    policy: WritePolicy,
    now: float,
) -> Outcome:
    if plan.action == "repeat" and plan.row is not None:
        done = _merge(conn, plan.row, cand, origin, policy, now, {"reason": "exact_duplicate"})
        _event(conn, "merge", origin, now, plan.row.id, plan.row.category, 0.0, done=done)
        return Outcome("repeated", plan.row.id)
    if plan.action == "merge" and plan.row is not None and plan.kept is not None:
        kept = plan.kept
        meta = {
            "reason": "near_duplicate" if kept.judge == judge.HEURISTIC else "same_fact",
            "judge": kept.judge,
            "jaccard": kept.overlap,
            "distance": kept.distance,
        }
        done = _merge(conn, plan.row, cand, origin, policy, now, meta)
        row = plan.row
        _event(conn, "merge", origin, now, row.id, row.category, kept.distance, plan, done=done)
        for old in plan.retire:
            _retire(conn, old, plan.row.id, cand, origin, now)
        replaced = plan.retire[0].row.id if plan.retire else None
        return Outcome("merged", plan.row.id, replaced, kept.distance, kept.overlap)
    key = key_string(cand.content) if cand.kind == "fact" else None
    retired = {j.row.id for j in plan.retire}
    supersedes = plan.retire[0].row.id if plan.retire else None
    memory_id = _add(
        conn,
        cand,
        key,
        vector,
        origin,
        policy,
        now,
        supersedes=supersedes,
        neighbours=[(row, d) for row, d in plan.neighbours if row.id not in retired],
    )
    first = plan.retire[0].distance if plan.retire else None
    op = "create" if supersedes is None else "update"
    _event(conn, op, origin, now, memory_id, cand.category, first, plan)
    for old in plan.retire:
        _retire(conn, old, memory_id, cand, origin, now)
    if supersedes is not None:
        return Outcome("superseded", memory_id, supersedes)
    return Outcome("added", memory_id)


def _event(
    conn: Any,
    op: str,
    origin: Origin,
    now: float,
    memory_id: int,
    category: str | None,
    distance: float | None,
    plan: Resolution | None = None,
    *,
    done: bool = True,
) -> None:
    """The write's per-event row (seed 001 §14, node `hotpath`), in this transaction; the
    similarity is the judged row's, else the best neighbour's (`plan`), when measured. A merge
    that changed nothing (`done` False: the same exchange again) is `skipped`."""
    best = plan.neighbours[0][1] if plan is not None and plan.neighbours else None
    memory_events.emit(
        conn,
        memory_events.HOTPATH,
        op,
        user_id=origin.user_id,
        now=now,
        thread_id=origin.session_id,
        memory_id=memory_id,
        category=category,
        status=memory_events.OK if done else memory_events.SKIPPED,
        sim=memory_events.similarity(distance, best),
    )


def _retire(
    conn: Any, old: Judgement, by: int, cand: Candidate, origin: Origin, now: float
) -> None:
    meta = {**origin.history_meta(), "reason": old.label, "judge": old.judge}
    done = supersede(conn, old.row.id, by, cand.content, actor=origin.actor, meta=meta, now=now)
    row = old.row
    _event(conn, "supersede", origin, now, row.id, row.category, old.distance, done=done)


def supersede(
    conn: Any, memory_id: int, by: int, content: str, *, actor: str, meta: dict[str, Any],
    now: float,
) -> bool:  # fmt: skip
    """The stored fact `memory_id` is replaced by memory `by` (saying `content`): archived (kept
    for history) with `valid_until`, SUPERSEDE event, `supersedes` edge. An archived fact (idle,
    by the GC) that no statement replaced yet is superseded the same way; a pinned one never.
    `meta` (the reason, the judge…) goes into the history event. Returns whether it was."""
    row = store.get_memory(conn, memory_id)
    if row is None or row.pinned or row.status not in judge.COMPARED:
        return False
    if row.status != "active" and row.valid_until is not None:
        return False  # replaced already
    change_status(
        conn,
        row,
        "archived",
        now=now,
        event="SUPERSEDE",
        actor=actor,
        old_value=row.content,
        new_value=content,
        meta={**meta, "superseded_by": by},
        valid_until=now,
        updated_at=now,
        attributes=Sql(
            "json_set(CASE WHEN json_valid(attributes) THEN attributes ELSE '{}' END,"
            " '$.superseded_by', ?)",
            (by,),
        ),
    )
    relations.link_supersedes(conn, by, row.id, user_id=row.user_id, now=now, actor=actor)
    return True


def _same_exchange(conn: Any, memory_id: int, turn_ids: Sequence[int]) -> bool:
    """Whether the memory was already extracted from these turns (one exchange, one mention)."""
    if not turn_ids:
        return False
    marks = placeholders(turn_ids)
    row = conn.execute(
        f"SELECT 1 FROM memory_sources WHERE memory_id = ? AND reason = 'extracted'"
        f" AND turn_id IN ({marks}) LIMIT 1",
        (memory_id, *turn_ids),
    ).fetchone()
    return row is not None


def _merge(
    conn: Any,
    row: store.MemoryRow,
    cand: Candidate,
    origin: Origin,
    policy: WritePolicy,
    now: float,
    meta: dict[str, Any],
) -> bool:
    """Returns whether it reinforced the row (not when the same exchange said it already)."""
    if _same_exchange(conn, row.id, origin.turn_ids):
        return False  # said once: the LLM pass after the heuristic one, or two phrasings of it
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
        delta.meta(row.content, row.category, row.importance, row.store),
        now,
        origin.user_id,
    )
    return True


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
        agent_id=origin.agent_id,
        run_id=origin.run_id,
        actor_id=origin.actor_id,
    )
    store.link_sources(conn, memory_id, origin.turn_ids)
    if supersedes is not None:  # seed 000: the turns that overturned a memory, marked so
        store.link_sources(conn, memory_id, origin.turn_ids, reason="conflict")
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
            node=memory_events.HOTPATH,
            category=cand.category,
        )
    event = "created" if supersedes is None else "updated"
    meta = delta.meta(cand.content, cand.category, cand.importance, origin.store)
    delta.bump(conn, origin.session_id, memory_id, event, meta, now, origin.user_id)
    return memory_id
