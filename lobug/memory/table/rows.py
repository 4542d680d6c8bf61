"""Memory rows with their history events and provenance links, the base memory, and counters."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any

from lobug.memory.table.dedup import content_hash
from lobug.memory.table.strength import DEFAULT as DEFAULT_STRENGTH
from lobug.memory.table.strength import Strength, reinforce_row

FACT_TYPES = ("personal", "preference", "knowledge", "event")
# The JSON columns of `memories` and what each holds when empty or unreadable.
JSON_COLUMNS: dict[str, Callable[[], Any]] = {
    "tags": list,
    "pii": list,
    "rules": list,
    "attributes": dict,
}


@dataclass(frozen=True)
class MemoryRow:
    id: int
    user_id: str
    kind: str
    content: str
    category: str | None
    status: str
    importance: float
    mention_count: int
    created_at: float
    updated_at: float
    valid_until: float | None
    supersedes: int | None
    pinned: bool
    source_from: int | None
    source_to: int | None
    store: str = "private"

    @classmethod
    def from_row(cls, row: Any) -> MemoryRow:
        values = {f.name: row[f.name] for f in fields(cls)}
        return cls(**{**values, "pinned": bool(values["pinned"])})


def loads(text: str | None, default: Any) -> Any:
    """A JSON column's value; `default` when it is empty, unreadable or of another type."""
    try:
        value = json.loads(text) if text else default
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def unexpired(alias: str = "") -> str:
    """SQL, one `?` for now: not past its `expires_at` (seed 002: a memory past it is hidden
    from every read at once; the GC soft-deletes it later)."""
    col = f"{alias}.expires_at" if alias else "expires_at"
    return f"({col} IS NULL OR {col} > ?)"


def row_dict(row: Any) -> dict[str, Any]:
    """A memories row (or some of its columns) for callers outside the DB layer: JSON columns
    decoded, flags as bools."""
    data = dict(row)
    for key, empty in JSON_COLUMNS.items():
        if key in data:
            data[key] = loads(data[key], empty())
    for key in ("pinned", "incorporated"):
        if key in data:
            data[key] = bool(data[key])
    return data


# -- memory rows -------------------------------------------------------------------------------
def insert_memory(
    conn: Any,
    *,
    user_id: str,
    kind: str,
    content: str,
    now: float,
    actor: str,
    category: str | None = None,
    importance: float = 0.5,
    supersedes: int | None = None,
    session_id: str | None = None,
    source_from: int | None = None,
    source_to: int | None = None,
    attributes: dict[str, Any] | None = None,
    history_meta: dict[str, Any] | None = None,
    store: str = "private",
    pinned: bool = False,
    tags: Iterable[str] = (),
    pii: Iterable[str] = (),
    rules: Iterable[str] = (),
    fact_key: str | None = None,
    decay_rate: float | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    actor_id: str | None = None,
) -> int:
    """A new memory row and its ADD event, in the caller's transaction. agent_id, run_id and
    actor_id say who wrote it (seed 001 §6.1): the agent, its run, the person speaking."""
    cur = conn.execute(
        "INSERT INTO memories (user_id, kind, content, category, importance, created_at,"
        " updated_at, valid_from, supersedes, hash, session_id, source_from, source_to,"
        " attributes, store, pinned, tags, pii, rules, fact_key, decay_rate,"
        " agent_id, run_id, actor_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
        " COALESCE(?, 0.1), ?, ?, ?)",
        (
            user_id,
            kind,
            content,
            category,
            importance,
            now,
            now,
            now,
            supersedes,
            content_hash(content),
            session_id,
            source_from,
            source_to,
            json.dumps(attributes or {}),
            store,
            int(pinned),
            json.dumps(list(tags)),
            json.dumps(list(pii)),
            json.dumps(list(rules)),
            fact_key,
            decay_rate,
            agent_id,
            run_id,
            actor_id,
        ),
    )
    memory_id = int(cur.lastrowid)
    add_history(
        conn,
        user_id=user_id,
        memory_id=memory_id,
        event="ADD",
        new_value=content,
        actor=actor,
        now=now,
        meta=history_meta,
    )
    return memory_id


def mention_again(
    conn: Any,
    memory: MemoryRow,
    *,
    now: float,
    actor: str,
    meta: dict[str, Any] | None = None,
    said: str | None = None,
    strength: Strength = DEFAULT_STRENGTH,
) -> None:
    """The same fact was stated again (seed 000): one more mention and hit, seen now, its
    strength reinforced (`strength`), and a MERGE event with what was said (`said`, when the
    words differed)."""
    row = conn.execute(
        "SELECT id, decay_rate, last_accessed, created_at FROM memories WHERE id = ?",
        (memory.id,),
    ).fetchone()
    old_rate, new_rate = reinforce_row(conn, row, at=now, strength=strength)
    conn.execute(
        "UPDATE memories SET mention_count = mention_count + 1, hits = hits + 1,"
        " last_accessed = ?, updated_at = ? WHERE id = ?",
        (now, now, memory.id),
    )
    meta = {**(meta or {}), "decay_rate": [old_rate, new_rate]}
    add_history(
        conn,
        user_id=memory.user_id,
        memory_id=memory.id,
        event="MERGE",
        old_value=memory.content,
        new_value=said or memory.content,
        actor=actor,
        now=now,
        meta={"reason": "exact_duplicate", **meta},
    )


def get_memory(conn: Any, memory_id: int) -> MemoryRow | None:
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return None if row is None else MemoryRow.from_row(row)


def active_by_hash(
    conn: Any, user_id: str, digest: str, kind: str = "fact", store: str | None = None
) -> MemoryRow | None:
    sql = "SELECT * FROM memories WHERE user_id = ? AND hash = ? AND kind = ? AND status = 'active'"
    params: list[Any] = [user_id, digest, kind]
    if store is not None:
        sql += " AND store = ?"
        params.append(store)
    row = conn.execute(sql + " ORDER BY id LIMIT 1", params).fetchone()
    return None if row is None else MemoryRow.from_row(row)


def top_facts(conn: Any, user_id: str, limit: int) -> list[MemoryRow]:
    """The facts most worth keeping in view: important, often mentioned, recent."""
    rows = conn.execute(
        "SELECT * FROM memories WHERE user_id = ? AND kind = 'fact' AND status = 'active'"
        " ORDER BY pinned DESC, importance DESC, mention_count DESC, updated_at DESC LIMIT ?",
        (user_id, limit),
    ).fetchall()
    return [MemoryRow.from_row(r) for r in rows]


# -- history and provenance --------------------------------------------------------------------
def add_history(
    conn: Any,
    *,
    user_id: str,
    memory_id: int | None,
    event: str,
    actor: str,
    now: float,
    old_value: str | None = None,
    new_value: str | None = None,
    meta: dict[str, Any] | None = None,
) -> None:
    """The one writer of `history` rows: every event, with or without a memory (memory_id None
    for per-run summaries and the base memory); `meta` as JSON with sorted keys."""
    conn.execute(
        "INSERT INTO history (user_id, memory_id, event, old_value, new_value, actor, meta, ts)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            user_id,
            memory_id,
            event,
            old_value,
            new_value,
            actor,
            json.dumps(meta or {}, sort_keys=True),
            now,
        ),
    )


def link_sources(
    conn: Any, memory_id: int, turn_ids: Iterable[int], reason: str = "extracted"
) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO memory_sources (memory_id, turn_id, reason) VALUES (?, ?, ?)",
        [(memory_id, turn_id, reason) for turn_id in turn_ids],
    )


def extracted_from(conn: Any, turn_id: int) -> bool:
    """Whether an extraction already recorded facts from this turn (re-runs must not repeat)."""
    row = conn.execute(
        "SELECT 1 FROM memory_sources WHERE turn_id = ? AND reason = 'extracted' LIMIT 1",
        (turn_id,),
    ).fetchone()
    return row is not None


# -- counters (in `meta`, so they survive restarts and the CLI can read them) -----------------
def meta_add(conn: Any, key: str, n: int = 1) -> None:
    """Add n to the integer kept in `meta` under `key` (0 when absent)."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET"
        " value = CAST(CAST(value AS INTEGER) + ? AS TEXT)",
        (key, str(n), n),
    )


def bump_counter(conn: Any, name: str, n: int = 1) -> None:
    meta_add(conn, f"counter.{name}", n)


def counters(conn: Any) -> dict[str, int]:
    rows = conn.execute("SELECT key, value FROM meta WHERE key LIKE 'counter.%'").fetchall()
    return {r[0].removeprefix("counter."): int(r[1]) for r in rows}


DAY_S = 86400.0


def figures(conn: Any, now: float, where: str = "1", params: Iterable[Any] = ()) -> dict[str, Any]:
    """Seed 000's memory metrics over the memories `m` that `where` admits: how many were made
    in the last day, and the active ones' mean stored score (the daily upkeep's, None before
    its first pass) and mean age in days; and seed 003's latest record: when the newest was
    made (None: none)."""
    row = conn.execute(
        "SELECT SUM(m.created_at >= ?),"
        " AVG(CASE WHEN m.status = 'active' THEN json_extract(m.attributes, '$.score') END),"
        " AVG(CASE WHEN m.status = 'active' THEN (? - m.created_at) / ? END), MAX(m.created_at)"
        f" FROM memories m WHERE {where}",
        [now - DAY_S, now, DAY_S, *params],
    ).fetchone()
    return {
        "created_last_day": int(row[0] or 0),
        "mean_score": None if row[1] is None else round(float(row[1]), 4),
        "mean_age_days": None if row[2] is None else round(float(row[2]), 4),
        "latest_at": None if row[3] is None else float(row[3]),
    }
