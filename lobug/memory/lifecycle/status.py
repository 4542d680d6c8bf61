"""A memory's status change: one UPDATE, the vector drop and one history row, for every path.

Soft delete, restore, archive (by the GC, by capacity, by a superseding fact) all come here, in
the caller's write transaction. `memory_vectors` holds live (active and archived) memories, so a
soft-deleted memory loses its vector here too; restoring one needs a re-embed (the caller
enqueues it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lobug.memory.table.rows import MemoryRow, add_history
from lobug.memory.vectors.knn import VECTOR_STATUSES, drop_memory_vector

# The history row's default old/new values: the status before and after.
STATUS: Any = object()


@dataclass(frozen=True)
class Sql:
    """A column set by an SQL expression over the row (`?` bound to `params`), not a value."""

    expr: str
    params: tuple[Any, ...] = ()


def change_status(
    conn: Any,
    row: Any,
    status: str,
    *,
    now: float,
    event: str,
    actor: str,
    meta: dict[str, Any] | None = None,
    old_value: Any = STATUS,
    new_value: Any = STATUS,
    **columns: Any,
) -> None:
    """Set `status` (and `columns`, values or `Sql`) of the memory `row` (a `memories` row or
    a `MemoryRow`), drop its vector unless it is still live, and write the `event` history row:
    old/new value the statuses unless given, `meta` as given."""
    memory_id, user_id, old_status = _identity(row)
    assignments = {"status": status, **columns}
    sql: list[str] = []
    params: list[Any] = []
    for column, value in assignments.items():
        if isinstance(value, Sql):
            sql.append(f"{column} = {value.expr}")
            params.extend(value.params)
        else:
            sql.append(f"{column} = ?")
            params.append(value)
    conn.execute(f"UPDATE memories SET {', '.join(sql)} WHERE id = ?", [*params, memory_id])
    if status not in VECTOR_STATUSES:
        drop_memory_vector(conn, memory_id)
    add_history(
        conn,
        user_id=user_id,
        memory_id=memory_id,
        event=event,
        actor=actor,
        now=now,
        old_value=old_status if old_value is STATUS else old_value,
        new_value=status if new_value is STATUS else new_value,
        meta=meta,
    )


def _identity(row: Any) -> tuple[int, str, str]:
    if isinstance(row, MemoryRow):
        return row.id, row.user_id, row.status
    return row["id"], row["user_id"], row["status"]
