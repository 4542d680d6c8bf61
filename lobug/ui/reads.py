"""The few reads the pages need that /v1 has no call for, under the caller's `Scope`.

Each takes the same Scope as the /v1 service layer (`Records.scope(principal)`), so a page
shows nothing a /v1 call by the same principal would not: turns (and the sources that are
turns) only when the scope reads the private store and uncategorised memories, memories and
entities only within its stores and categories.
"""

from __future__ import annotations

from typing import Any

from lobug.memory.records.scope import (
    Scope,
    entity_dict,
    entity_visible_sql,
    memory_dict,
    turn_dict,
)
from lobug.storage.sqlite import placeholders

MAX_SESSIONS = 100
MAX_TURNS = 500


def memory_links(conn: Any, scope: Scope, memory_id: int) -> dict[str, list[dict[str, Any]]]:
    """A visible memory's sources (the turns it came from, with their sessions) and entities."""
    sources: list[dict[str, Any]] = []
    if scope.reads_turns:
        rows = conn.execute(
            "SELECT t.*, group_concat(s.reason, ', ') AS reason,"
            " se.device_id AS session_device, se.started_at"
            " FROM memory_sources s JOIN turns t ON t.id = s.turn_id"
            " LEFT JOIN sessions se ON se.id = t.session_id"
            " WHERE s.memory_id = ? GROUP BY t.id ORDER BY t.ts, t.id LIMIT 50",
            (memory_id,),
        ).fetchall()
        sources = [{**turn_dict(r), "reason": r["reason"], "started_at": r["started_at"]}
                   for r in rows]  # fmt: skip
    visible, params = entity_visible_sql(scope)
    entities = conn.execute(
        f"SELECT e.* FROM entities e JOIN memory_entities me ON me.entity_id = e.id"
        f" WHERE me.memory_id = ? AND {visible} ORDER BY e.canonical_name LIMIT 50",
        (memory_id, *params),
    ).fetchall()
    return {"sources": sources, "entities": [entity_dict(e) for e in entities]}


def sessions(conn: Any, scope: Scope, user_id: str) -> list[dict[str, Any]]:
    """Sessions newest first with their turn count and latest summary (scope permitting)."""
    if not scope.reads_turns:
        return []
    rows = conn.execute(
        "SELECT se.id, se.device_id, se.started_at, se.last_active,"
        " (SELECT COUNT(*) FROM turns t WHERE t.session_id = se.id) AS turns"
        " FROM sessions se WHERE se.user_id = ? ORDER BY se.last_active DESC LIMIT ?",
        (user_id, MAX_SESSIONS),
    ).fetchall()
    found = [dict(r) for r in rows]
    summaries = _summaries(conn, scope, user_id, [s["id"] for s in found])
    for session in found:
        mine = summaries.get(session["id"], [])
        session["summary"] = mine[-1] if mine else None
    return found


def session(conn: Any, scope: Scope, user_id: str, session_id: str) -> dict[str, Any] | None:
    """One session's turns in order and its summaries; None when there is none to show."""
    if not scope.reads_turns:
        return None
    row = conn.execute(
        "SELECT id, device_id, started_at, last_active FROM sessions WHERE id = ? AND user_id = ?",
        (session_id, user_id),
    ).fetchone()
    if row is None:
        return None
    turns = conn.execute(
        "SELECT * FROM turns WHERE session_id = ? AND user_id = ? ORDER BY ts, id LIMIT ?",
        (session_id, user_id, MAX_TURNS),
    ).fetchall()
    return {
        **dict(row),
        "turns": [turn_dict(t) for t in turns],
        "summaries": _summaries(conn, scope, user_id, [session_id]).get(session_id, []),
    }


def _summaries(
    conn: Any, scope: Scope, user_id: str, session_ids: list[str]
) -> dict[str, list[dict[str, Any]]]:
    if not session_ids:
        return {}
    where, params = scope.where("m")
    marks = placeholders(session_ids)
    # A summary covers a run of turns (cascades.store_summary links them as its sources),
    # which may span sessions: it belongs to every session it has a turn from.
    rows = conn.execute(
        f"SELECT DISTINCT t.session_id AS of_session, m.* FROM memories m"
        f" JOIN memory_sources s ON s.memory_id = m.id JOIN turns t ON t.id = s.turn_id"
        f" WHERE m.user_id = ? AND m.kind = 'summary' AND m.status != 'soft_deleted'"
        f" AND t.session_id IN ({marks}) AND {where} ORDER BY m.created_at, m.id",
        (user_id, *session_ids, *params),
    ).fetchall()
    found: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        found.setdefault(r["of_session"], []).append(memory_dict(r))
    return found


def contents(conn: Any, scope: Scope, user_id: str, ids: list[int]) -> dict[int, str]:
    """The texts of the memories among `ids` the scope sees (to name related memories)."""
    if not ids:
        return {}
    where, params = scope.where("m")
    marks = placeholders(ids)
    rows = conn.execute(
        f"SELECT m.id, m.content FROM memories m WHERE m.user_id = ? AND m.id IN ({marks})"
        f" AND {where}",
        (user_id, *ids, *params),
    ).fetchall()
    return {int(r["id"]): str(r["content"]) for r in rows}
