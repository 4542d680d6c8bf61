"""Read queries behind the memory API's lists: memories (FTS5 or newest), timeline, stats."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lobug.errors import not_found
from lobug.memory import enqueue
from lobug.memory.records.scope import Scope, entity_visible_sql, visible_memory
from lobug.memory.search.fts import build_fts_query, fts_available, like_patterns
from lobug.memory.summaries.base_memory import get_base
from lobug.memory.summaries.cascades import count_unincorporated, count_unsummarized
from lobug.memory.table import rows
from lobug.memory.table.delta import current_rev
from lobug.storage.sqlite import escape_like
from lobug.storage.vectors import embedding_state
from lobug.workers import queue

SCORE = "json_extract(m.attributes, '$.score')"
LIST_COLUMNS = ("kind", "layer", "status", "category", "store", "agent_id", "run_id", "actor_id")


def list_rows(
    conn: Any,
    *,
    scope: Scope,
    user_id: str,
    q: str | None,
    filters: Mapping[str, Any],
    limit: int,
    offset: int,
    pii: str | None = None,
    by_score: bool = False,
) -> list[Any]:
    """Newest first, by text rank with `q`; `by_score`: by the score `lifecycle.policies.
    store_scores` keeps (the daily upkeep), the unscored (made since) after, newest first."""
    where, params = scope.where("m")
    newest = "m.created_at DESC, m.id DESC"
    order = f"{SCORE} IS NULL, {SCORE} DESC, {newest}" if by_score else newest
    clauses, args = ["m.user_id = ?", where], [user_id, *params]
    for column in LIST_COLUMNS:
        value = filters.get(column)
        if value is not None:
            clauses.append(
                "COALESCE(m.category, 'general') = ?" if column == "category" else f"m.{column} = ?"
            )
            args.append(value)
    if pii == "any":
        clauses.append("json_array_length(m.pii) > 0")
    elif pii == "none":
        clauses.append("json_array_length(m.pii) = 0")
    elif pii is not None:
        clauses.append("EXISTS (SELECT 1 FROM json_each(m.pii) WHERE value = ?)")
        args.append(pii)
    sql = " AND ".join(clauses)
    if not q:
        return conn.execute(
            f"SELECT m.* FROM memories m WHERE {sql} ORDER BY {order} LIMIT ? OFFSET ?",
            [*args, limit, offset],
        ).fetchall()
    match = build_fts_query(q)
    if match is None:
        return []
    if fts_available(conn):
        return conn.execute(
            f"SELECT m.* FROM memories_fts f JOIN memories m ON m.id = f.rowid"
            f" WHERE memories_fts MATCH ? AND {sql}"
            f" ORDER BY {order if by_score else 'bm25(memories_fts), m.id DESC'} LIMIT ? OFFSET ?",
            [match, *args, limit, offset],
        ).fetchall()
    patterns = like_patterns(q)  # seed 000: LIKE where this SQLite has no FTS5
    like = " OR ".join("m.content LIKE ? ESCAPE '\\'" for _ in patterns)
    return conn.execute(
        f"SELECT m.* FROM memories m WHERE ({like}) AND {sql} ORDER BY {order} LIMIT ? OFFSET ?",
        [*patterns, *args, limit, offset],
    ).fetchall()


def timeline_rows(
    conn: Any, scope: Scope, anchor: int, before: int, after: int, user_id: str
) -> list[Any]:
    """Up to `before` older and `after` newer visible memories around the anchor, oldest first.

    Soft-deleted neighbours are left out (they are on their way to being purged); archived ones
    stay, because a timeline is history.
    """
    row = visible_memory(conn, scope, anchor, user_id)
    where, params = scope.where("m")
    base = (
        f"SELECT m.* FROM memories m WHERE m.user_id = ? AND m.status != 'soft_deleted' AND {where}"
    )
    key = (row["created_at"], row["id"])
    older = conn.execute(
        f"{base} AND (m.created_at < ? OR (m.created_at = ? AND m.id < ?))"
        " ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
        [user_id, *params, key[0], key[0], key[1], before],
    ).fetchall()
    newer = conn.execute(
        f"{base} AND (m.created_at > ? OR (m.created_at = ? AND m.id > ?))"
        " ORDER BY m.created_at, m.id LIMIT ?",
        [user_id, *params, key[0], key[0], key[1], after],
    ).fetchall()
    return [*reversed(older), row, *newer]


def stats(conn: Any, scope: Scope, user_id: str, now: float) -> dict[str, Any]:
    """Counts of what the scope may see, with seed 000's figures (made in the last day, mean
    score and age); turns count only for callers who may read them."""
    where, params = scope.where("m")

    def by(column: str) -> dict[str, int]:
        rows = conn.execute(
            f"SELECT m.{column}, COUNT(*) FROM memories m WHERE m.user_id = ? AND {where}"
            f" GROUP BY m.{column} ORDER BY m.{column}",
            [user_id, *params],
        ).fetchall()
        return {str(r[0]): int(r[1]) for r in rows}

    def count(sql: str, *args: Any) -> int:
        return int(conn.execute(sql, args).fetchone()[0])

    by_kind = by("kind")
    turns = sessions = 0
    if scope.reads_turns:
        turns = count("SELECT COUNT(*) FROM turns WHERE user_id = ?", user_id)
        sessions = count("SELECT COUNT(DISTINCT session_id) FROM turns WHERE user_id = ?", user_id)
    visible, eparams = entity_visible_sql(scope)
    ends = " AND ".join(
        f"EXISTS (SELECT 1 FROM memories m WHERE m.id = r.{end} AND {where})"
        for end in ("from_id", "to_id")
    )
    return {
        "memories": {
            "total": sum(by_kind.values()),
            "by_kind": by_kind,
            "by_status": by("status"),
            "by_layer": by("layer"),
            "by_store": by("store"),
            **rows.figures(conn, now, f"m.user_id = ? AND {where}", [user_id, *params]),
        },
        "turns": turns,
        "sessions": sessions,
        "entities": count(
            f"SELECT COUNT(*) FROM entities e WHERE e.user_id = ? AND {visible}", user_id, *eparams
        ),
        "relations": count(
            f"SELECT COUNT(*) FROM relations r WHERE r.user_id = ? AND {ends}",
            user_id,
            *params,
            *params,
        ),
        "jobs": queue.counts(conn),
        "delta_rev": current_rev(conn, user_id),
    }


def upkeep_stats(conn: Any, user_id: str, *, model: str, dim: int) -> dict[str, Any]:
    """The owner's view of the memory's machinery: fact counts, cascade backlog, counters,
    the stored embedding against the configured one, and the memory jobs still live."""

    def count(sql: str, *params: Any) -> int:
        return int(conn.execute(sql, params).fetchone()[0])

    state = embedding_state(conn, model, dim)
    fact_sql = "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = 'fact' AND status = ?"
    return {
        "facts_active": count(fact_sql, user_id, "active"),
        "facts_archived": count(fact_sql, user_id, "archived"),
        "summaries_unincorporated": count_unincorporated(conn, user_id),
        "turns_unsummarized": count_unsummarized(conn, user_id),
        "base_memory_words": len(get_base(conn, user_id).split()),
        "counters": rows.counters(conn),
        "embedding": {
            "stored_model": state.stored_model,
            "stored_dim": state.stored_dim,
            "config": f"{state.model} ({state.dim}-d)",
            "mismatch": state.mismatch,
        },
        "jobs": queue.counts_by_kind(conn, enqueue.KINDS),
    }


def entity_rows(
    conn: Any, scope: Scope, q: str | None, limit: int, user_id: str, kind: str | None = None
) -> list[Any]:
    """Entities the scope sees, by name or alias when `q`, of one type when `kind` (`person`:
    the people index, seed 002): exact names first, then the most mentioned."""
    visible, params = entity_visible_sql(scope)
    sql = f"SELECT e.* FROM entities e WHERE e.user_id = ? AND {visible}"
    args: list[Any] = [user_id, *params]
    if kind is not None:
        sql += " AND e.type = ?"
        args.append(kind)
    order = "e.mention_count DESC, e.last_mentioned DESC, e.id"
    if q:
        pattern = "%" + escape_like(q.strip()) + "%"
        sql += (
            " AND (e.canonical_name LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM"
            " json_each(e.aliases) WHERE value LIKE ? ESCAPE '\\'))"
        )
        args += [pattern, pattern]
        order = "lower(e.canonical_name) = lower(?) DESC, " + order
        args.append(q.strip())
    return conn.execute(f"{sql} ORDER BY {order} LIMIT ?", [*args, limit]).fetchall()


def entity_row(conn: Any, scope: Scope, entity_id: int, user_id: str) -> tuple[Any, list[Any]]:
    """The entity (404 unless visible) and its active memories the scope sees, newest first."""
    visible, params = entity_visible_sql(scope)
    row = conn.execute(
        f"SELECT e.* FROM entities e WHERE e.id = ? AND e.user_id = ? AND {visible}",
        (entity_id, user_id, *params),
    ).fetchone()
    if row is None:
        raise not_found(f"no entity {entity_id}")
    where, mparams = scope.where("m")
    linked = conn.execute(
        f"SELECT m.* FROM memories m JOIN memory_entities me ON me.memory_id = m.id"
        f" WHERE me.entity_id = ? AND m.status = 'active' AND {where}"
        f" ORDER BY m.created_at DESC, m.id DESC LIMIT 100",
        (entity_id, *mparams),
    ).fetchall()
    return row, linked
