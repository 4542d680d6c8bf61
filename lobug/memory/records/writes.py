"""The write transactions behind the /v1 memory routes and `lobug memory` edits.

Each function runs inside the caller's write transaction (`Database.write`), checks what the
scope may touch on the row it reads there (so a check and its write cannot be split by another
writer), writes the row, its `history` event and its delta change (seed 001 §1, §8).
"""

from __future__ import annotations

import json
from typing import Any

from lobug import errors
from lobug.access import check_write_store
from lobug.memory import enqueue
from lobug.memory.graph import entities
from lobug.memory.records.scope import Scope, etag, memory_row, visible_memory
from lobug.memory.table import delta
from lobug.memory.table import rows as store
from lobug.memory.vectors import knn
from lobug.memory.vectors.knn import VECTOR_KINDS
from lobug.memory.write.fact_keys import key_string
from lobug.memory.write.pii import pii_tags
from lobug.memory.write.validator import checked

STATUS_EVENTS = {"archived": ("ARCHIVE", "deleted"), "active": ("RESTORE", "restored")}


def change_meta(row: Any, **overrides: Any) -> dict[str, Any]:
    """What a delta bullet shows about a memory (content, category, importance, store)."""
    meta = {k: row[k] for k in ("content", "category", "importance", "store")}
    return {**meta, **overrides}


def check_category(scope: Scope, category: str | None) -> None:
    """A write may only put a memory where its writer can still read it (seed 001 §5)."""
    if not scope.allows_category(category):
        allowed = ", ".join(sorted(scope.categories or ())) or "none"
        raise errors.ApiError(
            403,
            "forbidden",
            f"{scope.principal.describe()} may not write category {category or 'general'} "
            f"(allowed: {allowed})",
            details={"agent": scope.principal.agent, "categories": [category or "general"]},
        )


def update(
    conn: Any,
    scope: Scope,
    memory_id: int,
    changes: dict[str, Any],
    *,
    if_match: str | None,
    user_id: str,
    now: float,
) -> None:
    """PATCH: only the given fields; 409 when `if_match` is not the memory's current ETag;
    InvalidMemory when new content breaks the writing constraints of the memory's kind."""
    row = visible_memory(conn, scope, memory_id, user_id)
    if "content" in changes:
        changes = {**changes, "content": checked(changes["content"], row["kind"])}
    if if_match is not None and if_match not in ("*", etag(row)):
        raise errors.conflict(
            f"memory {memory_id} changed since you read it (ETag {etag(row)}, not {if_match}); "
            "read it again and reapply your change"
        )
    if row["status"] == "soft_deleted":
        raise errors.conflict(f"memory {memory_id} is soft-deleted; restore it first")
    if "store" in changes:
        check_write_store(scope.principal, changes["store"])
    if "category" in changes:
        check_category(scope, changes["category"])
    old = store.row_dict({key: row[key] for key in changes})  # tags decoded, pinned a bool
    columns = dict(changes)
    if "tags" in columns:
        columns["tags"] = json.dumps(columns["tags"])
    if "pinned" in columns:
        columns["pinned"] = int(columns["pinned"])
    content = changes.get("content", row["content"])
    if "content" in changes:
        columns["hash"] = store.content_hash(content)
        columns["pii"] = json.dumps(pii_tags(content))
        if "fact_key" in row.keys():  # lets reconciliation find what a later fact contradicts
            columns["fact_key"] = key_string(content) if row["kind"] == "fact" else None
    status = changes.get("status", row["status"])
    if status != row["status"]:
        columns["valid_until"] = now if status == "archived" else None
    assignments = ", ".join(f"{key} = ?" for key in columns)
    conn.execute(
        f"UPDATE memories SET {assignments}, updated_at = ? WHERE id = ?",
        [*columns.values(), now, memory_id],
    )
    if "content" in changes:
        conn.execute("DELETE FROM memory_entities WHERE memory_id = ?", (memory_id,))
        entities.link_entities(conn, memory_id, entities.extract_entities(content), user_id, now)
    if row["kind"] in VECTOR_KINDS and ("content" in changes or status != row["status"]):
        # The old vector no longer says what the memory says (or the memory left `active`):
        # drop it now; an active memory gets a new one from an embed_memory job.
        knn.drop_memory_vector(conn, memory_id)
        if status == "active":
            enqueue.embed_memory(conn, memory_id, now=now)
    event, change = STATUS_EVENTS.get(status, ("UPDATE", "updated"))
    if status == row["status"]:
        event, change = "UPDATE", "updated"
    store.add_history(
        conn,
        user_id=user_id,
        memory_id=memory_id,
        event=event,
        old_value=row["content"],
        new_value=content,
        actor=scope.actor,
        now=now,
        meta={"changed": {key: [old[key], changes[key]] for key in changes}},
    )
    new = memory_row(conn, memory_id, user_id)
    delta.bump(conn, None, memory_id, change, change_meta(new), now, user_id)
