"""Proposals for the /v1 API and `lobug memory proposals|accept|reject`: access-checked.

A proposal is a profile fact for the `private` store: it is visible (else 404, like a memory)
to whoever reads that store and the proposal's category (seed 002 trust, seed 001 §5
allowlists). The decisions themselves are `consent.accept` and `consent.reject`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lobug import errors
from lobug.access import UNCATEGORIZED, CategoryPolicy, Principal, can_read_store
from lobug.memory.settings import WritePolicy
from lobug.memory.write.consent import (
    STORE,
    USER,
    accept,
    proposal_dict,
    proposal_row,
    reject,
)
from lobug.storage.database import Database
from lobug.storage.sqlite import placeholders


class Proposals:
    """Listing and deciding proposals for a principal: a proposal is visible (else 404) to
    whoever reads the `private` store and the proposal's category (seed 002, seed 001 §5)."""

    def __init__(
        self,
        db: Database,
        categories: CategoryPolicy,
        *,
        policy: WritePolicy,
        clock: Callable[[], float],
        wake: Callable[[], None] | None = None,
    ) -> None:
        self.db = db
        self.categories = categories
        self.policy = policy
        self.clock = clock
        self.wake = wake or (lambda: None)

    def visible(self, principal: Principal, category: str | None) -> bool:
        return can_read_store(principal, STORE) and self.categories.allows(principal, category)

    async def listing(
        self,
        principal: Principal,
        *,
        status: str | None = "pending",
        limit: int = 100,
        user_id: str = USER,
    ) -> dict[str, Any]:
        """Newest first; `status` None: every status. Pending means not yet expired."""
        now = self.clock()

        def read(conn: Any) -> list[Any]:
            sql = "SELECT * FROM proposals WHERE user_id = ?"
            params: list[Any] = [user_id]
            if status is not None:
                sql += " AND status = ?"
                params.append(status)
            if status == "pending":
                sql += " AND expires_at > ?"
                params.append(now)
            allowed = self.categories.allowed(principal)
            if not can_read_store(principal, STORE) or allowed == frozenset():
                return []
            if allowed is not None:
                names = sorted(allowed)
                sql += f" AND COALESCE(category, ?) IN ({placeholders(names)})"
                params += [UNCATEGORIZED, *names]
            return list(conn.execute(sql + " ORDER BY id DESC LIMIT ?", [*params, limit]))

        found = [proposal_dict(r) for r in await self.db.read(read)]
        return {"proposals": found, "count": len(found)}

    async def accept(
        self, principal: Principal, proposal_id: int, *, user_id: str = USER
    ) -> dict[str, Any]:
        decided = await self._decide(principal, proposal_id, user_id, "accept")
        self.wake()  # the new fact's embedding
        return decided

    async def reject(
        self, principal: Principal, proposal_id: int, *, user_id: str = USER
    ) -> dict[str, Any]:
        return await self._decide(principal, proposal_id, user_id, "reject")

    async def _decide(
        self, principal: Principal, proposal_id: int, user_id: str, what: str
    ) -> dict[str, Any]:
        actor = f"{principal.via}:{principal.agent}"

        def write(conn: Any) -> dict[str, Any]:
            row = proposal_row(conn, proposal_id)
            if (
                row is None
                or row["user_id"] != user_id
                or not self.visible(principal, row["category"])
            ):
                raise errors.not_found(f"no proposal {proposal_id}")
            now = self.clock()
            if what == "accept":
                return accept(conn, proposal_id, actor=actor, now=now, policy=self.policy,
                              user_id=user_id)  # fmt: skip
            return reject(conn, proposal_id, actor=actor, now=now, user_id=user_id)

        return await self.db.write(write)
