"""Relation edges between memories (seed 001 §2): a new fact links to its nearest neighbours.

For a fact just given a vector, its top `link_k` active neighbours with similarity (1 − cosine
distance) at or above `link_min` become `relations` rows, strength = similarity, one edge per
pair whichever way round, each with a LINK history event and an op `link` row in
`memory_events` (seed 001 §14; node `worker` when the vector came from the embed job, `hotpath`
when the write had it). Retrieval adds a small
boost for a memory's strongest `related_to` edge to any live (active or archived) memory,
whether or not the other end is a candidate of the same search (`max_related_strength`), and
the prompt shows 1-2 current facts tied to the ones it picked (`related_facts`,
search.prompt_context).

A fact that replaces another ("newer wins", write/reconcile.py) gets a `supersedes` edge from
the new row to the retired one (strength 1), next to its `supersedes` column: the graph keeps
the chain of what the user used to say.

A weekly reflection gets a `derived_from` edge to each fact and summary it read (seed 003's
`source_ids`, `link_derived`): `why` names them (`derived_from`), and a purge of one removes its
edge with it (`lifecycle.purge`). Retrieval's boost and the prompt's related facts do not follow
these edges: a reflection is not a fact's neighbour.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from lobug.memory.table import memory_events
from lobug.memory.table.rows import add_history, unexpired
from lobug.memory.vectors import knn
from lobug.storage.sqlite import placeholders

RELATED_TO = "related_to"
SUPERSEDES = "supersedes"
DERIVED_FROM = "derived_from"  # a reflection → a memory it was written from
LINK_OP = "link"  # the `memory_events` op of an edge link_neighbours made


def link_neighbours(
    conn: Any,
    memory_id: int,
    vector: Sequence[float],
    *,
    user_id: str,
    link_min: float,
    k: int,
    now: float,
    actor: str,
    found: Sequence[tuple[knn.MemoryRow, float]] | None = None,
    node: str = memory_events.WORKER,
    category: str | None = None,
) -> list[tuple[int, float]]:
    """Create the edges (in the caller's transaction), each with its op `link` event row of
    `node` (the memory's `category`, the edge's strength as its similarity); returns
    (neighbour id, strength).

    found: the vector's nearest facts when the caller has them already (one KNN scan, not two).
    """
    if k <= 0:
        return []
    if found is None:
        found = knn.nearest_facts(conn, vector, user_id=user_id, k=k + 1)
    made: list[tuple[int, float]] = []
    for row, distance in found:
        if row.id == memory_id or len(made) >= k or not 1.0 - distance >= link_min:
            continue  # `not >=`: a NaN distance (a vector stored before issue 42) links nothing
        strength = round(1.0 - distance, 6)
        if link(conn, memory_id, row.id, strength, user_id=user_id, now=now, actor=actor):
            made.append((row.id, strength))
            memory_events.emit(
                conn, node, LINK_OP, user_id=user_id, now=now, memory_id=memory_id,
                category=category, sim=strength,
            )  # fmt: skip
    return made


def link(
    conn: Any,
    from_id: int,
    to_id: int,
    strength: float,
    *,
    user_id: str,
    now: float,
    actor: str,
    relation_type: str = RELATED_TO,
) -> bool:
    """One edge, unless the pair is linked already (either direction); history LINK."""
    exists = conn.execute(
        "SELECT 1 FROM relations WHERE relation_type = ? AND ((from_id = ? AND to_id = ?)"
        " OR (from_id = ? AND to_id = ?))",
        (relation_type, from_id, to_id, to_id, from_id),
    ).fetchone()
    if exists is not None or from_id == to_id:
        return False
    conn.execute(
        "INSERT INTO relations (user_id, from_id, to_id, relation_type, strength, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (user_id, from_id, to_id, relation_type, strength, now),
    )
    add_history(
        conn,
        user_id=user_id,
        memory_id=from_id,
        event="LINK",
        actor=actor,
        now=now,
        new_value=str(to_id),
        meta={"to": to_id, "type": relation_type, "strength": strength},
    )
    return True


def link_supersedes(
    conn: Any, new_id: int, old_id: int, *, user_id: str, now: float, actor: str
) -> bool:
    """The edge from a fact to the one it retired (history LINK on the new fact)."""
    return link(
        conn, new_id, old_id, 1.0, user_id=user_id, now=now, actor=actor, relation_type=SUPERSEDES
    )


def link_derived(
    conn: Any, memory_id: int, source_ids: Collection[int], *, user_id: str, now: float
) -> int:
    """A `derived_from` edge from `memory_id` to each of `source_ids` still stored (one purged
    while the model wrote is skipped, never a dangling id); no history row each: the memory's
    own ADD says how many it read. Returns how many edges were made."""
    if not source_ids:
        return 0
    ids = sorted(set(source_ids) - {memory_id})
    marks = placeholders(ids)
    return int(
        conn.execute(
            "INSERT OR IGNORE INTO relations"
            " (user_id, from_id, to_id, relation_type, strength, created_at)"
            f" SELECT ?, ?, id, ?, 1.0, ? FROM memories WHERE user_id = ? AND id IN ({marks})"
            " ORDER BY id",
            (user_id, memory_id, DERIVED_FROM, now, user_id, *ids),
        ).rowcount
    )


def derived_from(conn: Any, memory_id: int) -> list[int]:
    """The memories `memory_id` was written from (its `derived_from` edges), by id."""
    rows = conn.execute(
        "SELECT to_id FROM relations WHERE from_id = ? AND relation_type = ? ORDER BY to_id",
        (memory_id, DERIVED_FROM),
    ).fetchall()
    return [int(r[0]) for r in rows]


def strongest(conn: Any, memory_id: int) -> list[dict[str, Any]]:
    """The memory's edges, strongest first (for explain)."""
    rows = conn.execute(
        "SELECT CASE WHEN from_id = ? THEN to_id ELSE from_id END AS other, relation_type,"
        " strength FROM relations WHERE from_id = ? OR to_id = ? ORDER BY strength DESC LIMIT 10",
        (memory_id, memory_id, memory_id),
    ).fetchall()
    return [{"id": r[0], "type": r[1], "strength": r[2]} for r in rows]


LIVE_STATUSES = ("active", "archived")  # what a boost edge may lead to (not soft-deleted)


def live_edges(
    conn: Any, ids: Sequence[int], types: Sequence[str] = (RELATED_TO,), now: float | None = None
) -> dict[int, list[tuple[int, float]]]:
    """Per memory of `ids`, its edges of `types` (either direction) to live memories (and, with
    `now`, not past their `expires_at`): (other id, strength), strongest first."""
    if not ids:
        return {}
    marks = placeholders(ids)
    live = placeholders(LIVE_STATUSES)
    kinds = placeholders(types)
    other = f"o.status IN ({live})" + ("" if now is None else f" AND {unexpired('o')}")
    params = (*types, *LIVE_STATUSES, *(() if now is None else (now,)))
    rows = conn.execute(
        f"SELECT r.from_id, r.to_id, r.strength FROM relations r JOIN memories o"
        f" ON o.id = r.to_id WHERE r.from_id IN ({marks}) AND r.relation_type IN ({kinds})"
        f" AND {other}"
        f" UNION ALL SELECT r.to_id, r.from_id, r.strength FROM relations r JOIN memories o"
        f" ON o.id = r.from_id WHERE r.to_id IN ({marks}) AND r.relation_type IN ({kinds})"
        f" AND {other}",
        (*ids, *params, *ids, *params),
    ).fetchall()
    found: dict[int, list[tuple[int, float]]] = {}
    for memory_id, other, strength in rows:
        found.setdefault(int(memory_id), []).append((int(other), float(strength)))
    for edges in found.values():
        edges.sort(key=lambda e: (-e[1], e[0]))
    return found


def max_related_strength(
    conn: Any, ids: Sequence[int], now: float | None = None
) -> dict[int, float]:
    """Per candidate, its strongest edge to any live memory (seed 001 §2:
    `w_rel·max_related_strength(memory_id)`), not only to the other candidates. An update's
    `supersedes` edge counts too: a fact the user corrected is one they care about (without
    it the newest city lost to facts merely retrieved more often: bench_longevity)."""
    edges = live_edges(conn, ids, (RELATED_TO, SUPERSEDES), now)
    return {m: found[0][1] for m, found in edges.items() if found}


def related_facts(
    conn: Any,
    ids: Sequence[int],
    *,
    user_id: str,
    stores: Sequence[str],
    skip: Collection[int] = (),
    now: float | None = None,
) -> list[tuple[Any, int, float]]:
    """Current facts (active, not replaced, not expired at `now`) tied to `ids` by an edge,
    strongest edge first, none of `ids` or `skip`, within the caller's `stores`: (row, the
    picked fact it is tied to, strength); the caller applies the category rules and the count."""
    if not ids or not stores:
        return []
    edges = live_edges(conn, ids, now=now)
    best: dict[int, tuple[int, float]] = {}
    for via in ids:  # the better-ranked pick first: its neighbours win ties
        for other, strength in edges.get(via, []):
            if other in ids or other in skip:
                continue
            if other not in best or strength > best[other][1]:
                best[other] = (via, strength)
    if not best:
        return []
    marks = placeholders(best)
    rows = {
        int(r["id"]): r
        for r in conn.execute(
            f"SELECT * FROM memories WHERE id IN ({marks}) AND user_id = ? AND kind = 'fact'"
            f" AND status = 'active' AND valid_until IS NULL"
            f" AND store IN ({placeholders(stores)})",
            (*best, user_id, *stores),
        )
    }
    order = sorted(best, key=lambda m: (-best[m][1], m))
    return [(rows[m], *best[m]) for m in order if m in rows]
