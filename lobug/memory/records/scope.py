"""Who sees which rows (`Scope`), the SQL that says so, and rows as the /v1 API's dicts.

A dict carries the columns its response model (`lobug.memory.shapes`) names, so the shape is
written once, in the model that also writes the OpenAPI document.

One visibility rule for every door (HTTP, CLI): a memory is visible when its store is one the
principal's trust reads (seed 002) and its category (uncategorised counts as `general`) is in
the agent's allowlist (seed 001 §5). Conversation turns belong to the `private` store and count
as uncategorised. A row the caller may not see is reported as missing (404), never as
forbidden, so ids do not reveal what exists; asking for a store or category outright is 403.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from lobug import errors
from lobug.access import STORES, UNCATEGORIZED, CategoryPolicy, Principal, visible_stores
from lobug.memory.shapes.catalog import Entity
from lobug.memory.shapes.memories import Memory
from lobug.memory.shapes.reports import HistoryEvent
from lobug.memory.shapes.retrieval import Turn
from lobug.memory.table.delta import Change
from lobug.memory.table.rows import loads, row_dict
from lobug.storage.sqlite import placeholders

TURN_STORE = "private"


def _columns(model: type[BaseModel], *computed: str) -> tuple[str, ...]:
    """The model's fields that are columns of its table (`computed` ones are not)."""
    return tuple(name for name in model.model_fields if name not in computed)


MEMORY_KEYS = _columns(Memory, "etag", "action")
_HISTORY_KEYS = _columns(HistoryEvent, "meta")
_ENTITY_KEYS = _columns(Entity, "aliases")
_TURN_KEYS = _columns(Turn)
# What an ETag covers: what a person edits or the lifecycle moves, not the hit counters that
# every retrieval bumps (those would turn every read-modify-write into a false conflict).
ETAG_KEYS = (
    "content", "category", "importance", "tags", "pinned", "store", "status", "layer", "kind",
    "valid_until", "supersedes", "expires_at",
)  # fmt: skip


@dataclass(frozen=True)
class Scope:
    """What one principal may see: stores by trust, categories by the agent's allowlist."""

    principal: Principal
    stores: tuple[str, ...]
    categories: frozenset[str] | None  # None: every category
    # Seed 002: a memory past its `expires_at` is hidden from every read at this time (the
    # GC pass then soft-deletes it). None: no expiry check (a scope without a clock).
    now: float | None = None

    @classmethod
    def of(cls, principal: Principal, policy: CategoryPolicy, *, now: float | None = None) -> Scope:
        return cls(principal, visible_stores(principal), policy.allowed(principal), now)

    @property
    def actor(self) -> str:
        """For history rows: how the caller came in and as whom (never a token)."""
        return f"{self.principal.via}:{self.principal.agent}"

    @property
    def unrestricted(self) -> bool:
        return self.categories is None and set(self.stores) == set(STORES)

    @property
    def reads_turns(self) -> bool:
        return TURN_STORE in self.stores and self.allows_category(None)

    def allows_category(self, category: str | None) -> bool:
        return self.categories is None or (category or UNCATEGORIZED) in self.categories

    def sees(self, row: Mapping[str, Any]) -> bool:
        return (
            row["store"] in self.stores
            and self.allows_category(row["category"])
            and not expired(row, self.now)
        )

    def sees_change(self, change: Change) -> bool:
        return (change.store or TURN_STORE) in self.stores and self.allows_category(change.category)

    def where(self, alias: str = "m") -> tuple[str, list[Any]]:
        """SQL condition (and its parameters) selecting the memories this scope sees."""
        if not self.stores or self.categories == frozenset():
            return "0", []
        clause = f"{alias}.store IN ({placeholders(self.stores)})"
        params: list[Any] = list(self.stores)
        if self.categories is not None:
            names = sorted(self.categories)
            clause += (
                f" AND COALESCE({alias}.category, '{UNCATEGORIZED}') IN ({placeholders(names)})"
            )
            params += names
        if self.now is not None:
            clause += (
                f" AND ({alias}.expires_at IS NULL OR {alias}.expires_at > ?"
                f" OR {alias}.status = 'soft_deleted')"
            )
            params.append(self.now)
        return clause, params

    def readable(self, stores: Iterable[str] | None) -> tuple[str, ...] | None:
        """The stores a request names, each one this trust reads (seed 002 intersects a
        search's stores with the accessible ones); 403 for one it may not read, as a write to
        it is (`access.check_write_store`). None when it names none (every store it reads)."""
        if stores is None:
            return None
        named = set(stores)
        for store in STORES:
            if store in named and store not in self.stores:
                readable = ", ".join(self.stores) or "none"
                raise errors.ApiError(
                    403,
                    "forbidden",
                    f"trust '{self.principal.trust}' may not read the '{store}' store "
                    f"(readable: {readable})",
                    details={"store": store, "trust": self.principal.trust},
                )
        return tuple(store for store in self.stores if store in named)

    def require_turns(self) -> None:
        if not self.reads_turns:
            raise errors.forbidden(
                f"{self.principal.describe()} may not read or write conversation turns "
                f"(they belong to the '{TURN_STORE}' store)"
            )

    def require_unrestricted(self, what: str) -> None:
        if not self.unrestricted:
            raise errors.forbidden(
                f"{what} needs full trust and access to every category; "
                f"{self.principal.describe()} has less"
            )


def expired(row: Mapping[str, Any], now: float | None) -> bool:
    """Live (active or archived) and past its `expires_at` at `now` (seed 002): hidden, as if
    it did not exist, until the GC pass soft-deletes it (then it shows as soft-deleted, and a
    restore keeps it for good: `lifecycle.forgetting.restore`)."""
    expires = row["expires_at"] if "expires_at" in row.keys() else None
    return (
        now is not None
        and expires is not None
        and expires <= now
        and row["status"] != "soft_deleted"
    )


def etag(row: Mapping[str, Any]) -> str:
    data = json.dumps([row[k] for k in ETAG_KEYS], ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]


def memory_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    """A `memories` row as the API's Memory object: its API columns decoded as `row_dict`
    does, and its ETag."""
    data = row_dict({key: row[key] for key in MEMORY_KEYS})
    data["etag"] = etag(row)
    return data


def history_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    return {**{k: row[k] for k in _HISTORY_KEYS}, "meta": loads(row["meta"], {})}


def entity_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    return {**{k: row[k] for k in _ENTITY_KEYS}, "aliases": loads(row["aliases"], [])}


def turn_dict(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in _TURN_KEYS}


# -- reads (on a reader connection) --------------------------------------------------------------
def memory_row(conn: Any, memory_id: int, user_id: str) -> Any:
    return conn.execute(
        "SELECT * FROM memories WHERE id = ? AND user_id = ?", (memory_id, user_id)
    ).fetchone()


def visible_memory(conn: Any, scope: Scope, memory_id: int, user_id: str) -> Any:
    """The row, or 404 when it does not exist or the scope may not see it."""
    row = memory_row(conn, memory_id, user_id)
    if row is None or not scope.sees(row):
        raise errors.not_found(f"no memory {memory_id}")
    return row


def entity_visible_sql(scope: Scope, alias: str = "e") -> tuple[str, list[Any]]:
    """An entity is visible through a visible memory that mentions it, neither forgotten
    (soft-deleted) nor past its `expires_at`; to the owner also through the conversation log
    that names it. A name whose every memory went leaves the people index with it (issue 38)."""
    where, params = scope.where("m")
    memory = (
        f"EXISTS (SELECT 1 FROM memory_entities me JOIN memories m ON m.id = me.memory_id"
        f" WHERE me.entity_id = {alias}.id AND m.status != 'soft_deleted' AND {where})"
    )
    if scope.unrestricted:
        spoken = f"EXISTS (SELECT 1 FROM turn_entities te WHERE te.entity_id = {alias}.id)"
        return f"({memory} OR {spoken})", params
    return memory, params


def within_scope(conn: Any, found: dict[str, Any], *, scope: Scope, user_id: str) -> dict[str, Any]:
    """An explanation without what the scope may not see: related memories, the memories it
    was derived from and the memory that superseded it are named only when the scope sees
    them."""
    linked = {r["id"] for r in found.get("relations") or []} | set(found.get("derived_from") or [])
    if found.get("superseded_by") is not None:
        linked.add(found["superseded_by"])
    visible: set[int] = set()
    if linked:
        where, params = scope.where("m")
        ids = sorted(linked)
        rows = conn.execute(
            f"SELECT m.id FROM memories m WHERE m.user_id = ? AND m.id IN ({placeholders(ids)})"
            f" AND {where}",
            (user_id, *ids, *params),
        ).fetchall()
        visible = {int(r[0]) for r in rows}
    return {
        **found,
        "relations": [r for r in found.get("relations") or [] if r["id"] in visible],
        "derived_from": [i for i in found.get("derived_from") or [] if i in visible],
        "superseded_by": found["superseded_by"] if found.get("superseded_by") in visible else None,
    }


def why_dict(raw: dict[str, Any]) -> dict[str, Any]:
    """`MemoryService.why` as the API's WhyResponse: `score` the final number, `terms` every
    numeric term of the breakdown (nested ones as `memory.recency`), `breakdown` as computed."""
    breakdown = raw.get("score")
    if not isinstance(breakdown, dict):
        return raw
    terms: dict[str, float] = {}
    for key, value in breakdown.items():
        if isinstance(value, dict):
            terms.update({f"{key}.{k}": v for k, v in value.items() if _number(v)})
        elif _number(value) and key != "final":
            terms[key] = value
    return {
        **raw,
        "score": float(breakdown.get("final", 0.0)),
        "terms": terms,
        "breakdown": breakdown,
        "matched_rules": raw.get("rules", []),
    }


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
