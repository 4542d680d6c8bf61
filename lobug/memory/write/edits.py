"""Explicit memory edits (the /v1 API, the CLI): remember, forget, restore, confirm — DB side.

Each runs inside one write transaction with its history events and delta bumps; vectors are
made by an `embed_memory` job enqueued in the same transaction, so the call never waits on an
embedder.
"""

from __future__ import annotations

from typing import Any

from lobug.memory import enqueue
from lobug.memory.lifecycle import forgetting
from lobug.memory.lifecycle.purge import purge_memory
from lobug.memory.settings import WritePolicy
from lobug.memory.table import delta
from lobug.memory.table import rows as store
from lobug.memory.vectors.knn import VECTOR_KINDS
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.reconcile import Origin, reconcile

# What the caller sees: an exact repeat is a merge too.
ACTIONS = {"added": "added", "merged": "merged", "repeated": "merged", "superseded": "superseded"}
# Delta bullets of deletions carry no text (the text is what the user asked to forget).
ERASED = "a memory was erased"
FORGOTTEN = "a memory was forgotten"


def remember(
    conn: Any,
    cand: Candidate,
    *,
    origin: Origin,
    policy: WritePolicy,
    now: float,
    expires_at: float | None = None,
) -> dict[str, Any]:
    """Reconcile a memory the user (or an agent) asks to keep; returns its row and the action.

    A new row records its writer (`origin.agent_id`, `run_id`, `actor_id`); a merge keeps the
    writer of the memory it merges into (the history event of the merge names who said it
    again). `expires_at` (seed 002): a new row is kept until then; a memory merged into keeps
    its own expiry unless it had one (said again: it lasts as long as this write asks)."""
    outcome = reconcile(conn, cand, None, origin=origin, policy=policy, now=now)
    only_dated = "" if outcome.action in ("added", "superseded") else " AND expires_at IS NOT NULL"
    conn.execute(
        f"UPDATE memories SET expires_at = ? WHERE id = ?{only_dated}",
        (expires_at, outcome.memory_id),
    )
    if outcome.action in ("added", "superseded") and cand.kind in VECTOR_KINDS:
        enqueue.embed_memory(conn, outcome.memory_id, now=now)
    if outcome.action in ("merged", "repeated") and origin.pinned:
        # Asking to remember a known fact as pinned pins the fact that is kept.
        conn.execute("UPDATE memories SET pinned = 1 WHERE id = ?", (outcome.memory_id,))
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (outcome.memory_id,)).fetchone()
    data = store.row_dict(row)
    data["action"] = ACTIONS[outcome.action]
    data["replaced_id"] = outcome.replaced_id
    return data


def forget(
    conn: Any, memory_id: int, *, purge: bool, actor: str, now: float, purge_after_days: float
) -> bool:
    """Soft delete (purged after purge_after_days), or purge now; False when there is no such
    memory. Forgetting a soft-deleted memory again without purge changes nothing."""
    row = store.get_memory(conn, memory_id)
    if row is None:
        return False
    if purge:
        purge_memory(conn, memory_id, actor, now=now, reason="forget")
        meta = {"summary": ERASED, "category": row.category, "store": row.store}
        delta.bump(conn, None, None, "deleted", meta, now, row.user_id)
        return True
    if forgetting.soft_delete(conn, memory_id, now, purge_after_days, actor=actor):
        # No text: a forgotten memory must not come back into the prompt through the header.
        meta = {"summary": FORGOTTEN, "category": row.category, "store": row.store}
        delta.bump(conn, None, memory_id, "soft_deleted", meta, now, row.user_id)
    return True


def restore(conn: Any, memory_id: int, *, actor: str, now: float) -> bool:
    """Archived or soft-deleted → active again, valid again, re-embedded; False when there is
    no such memory (restoring an active memory changes nothing)."""
    row = store.get_memory(conn, memory_id)
    if row is None:
        return False
    if not forgetting.restore(conn, memory_id, now, actor):
        return True
    conn.execute(
        "UPDATE memories SET valid_until = NULL, updated_at = ? WHERE id = ?", (now, memory_id)
    )
    if row.kind in VECTOR_KINDS:
        enqueue.embed_memory(conn, memory_id, now=now)
    delta.bump(conn, None, memory_id, "restored", _meta(row), now, row.user_id)
    return True


def confirm(conn: Any, memory_id: int, *, actor: str, now: float) -> bool:
    """Protect a memory for good (seed 003 confirm_fact): confidence 1, decay_rate 0; False
    when there is no such memory. History UPDATE (by lifecycle), delta `updated`."""
    row = store.get_memory(conn, memory_id)
    if row is None or not forgetting.confirm(conn, memory_id, now, actor):
        return False
    conn.execute("UPDATE memories SET updated_at = ? WHERE id = ?", (now, memory_id))
    delta.bump(conn, None, memory_id, "updated", _meta(row), now, row.user_id)
    return True


def _meta(row: store.MemoryRow) -> dict[str, Any]:
    return {
        "content": row.content,
        "category": row.category,
        "importance": row.importance,
        "store": row.store,
    }
