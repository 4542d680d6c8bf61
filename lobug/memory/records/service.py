"""Records: the memory API's service layer (HTTP /v1 and `lobug memory` share it).

Every method takes the calling `Principal` and enforces trust-gated stores and category
allowlists itself (see `records.scope.Scope`), so no door can skip a check. Retrieval, the
lifecycle and forgetting are `MemoryService`'s; this layer checks access, then calls it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from lobug import errors
from lobug.access import (
    CLI_AGENT,
    LOCAL_AGENT,
    MCP_AGENT,
    OWNER_TRUST,
    CategoryPolicy,
    Principal,
    check_write_store,
)
from lobug.memory.query import InvalidMemory
from lobug.memory.records import writes
from lobug.memory.records.scope import (
    Scope,
    entity_dict,
    history_dict,
    memory_dict,
    memory_row,
    visible_memory,
    why_dict,
    within_scope,
)
from lobug.memory.records.views import (
    entity_row,
    entity_rows,
    list_rows,
    stats,
    timeline_rows,
    upkeep_stats,
)
from lobug.memory.summaries.base_memory import get_base
from lobug.memory.transfer.export_file import export_chunks
from lobug.memory.upkeep import events
from lobug.memory.upkeep.sessions import read_summary
from lobug.memory.write.validator import count_rejection
from lobug.storage.database import Database

if TYPE_CHECKING:
    from lobug.memory.service import MemoryService

log = logging.getLogger(__name__)
USER = "default"  # one household per daemon (ARCHITECTURE.md); the CLI may name another
# The owner's own identities (loopback, the CLI and its MCP server, and the word itself): a
# writer below full trust may not put them on a row (issue 25, item 17).
OWNER_NAMES = frozenset({LOCAL_AGENT, CLI_AGENT, MCP_AGENT, "owner"})


class Records:
    def __init__(
        self,
        db: Database,
        policy: CategoryPolicy,
        *,
        memory: MemoryService | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.policy = policy
        self.memory = memory
        self.clock = clock

    def scope(self, principal: Principal) -> Scope:
        return Scope.of(principal, self.policy, now=self.clock())

    def service(self, what: str) -> MemoryService:
        if self.memory is None:
            raise errors.unavailable(
                f"{what} needs long-term memory, which is off (memory.enabled)"
            )
        return self.memory

    # -- reads -------------------------------------------------------------------------------------
    async def get(self, principal: Principal, memory_id: int, *, user_id: str = USER) -> dict:
        row = await self.db.read(visible_memory, self.scope(principal), memory_id, user_id)
        return memory_dict(row)

    async def list_memories(
        self,
        principal: Principal,
        *,
        q: str | None = None,
        kind: str | None = None,
        layer: str | None = None,
        status: str | None = "active",
        category: str | None = None,
        store: str | None = None,
        writers: dict[str, str | None] | None = None,
        pii: str | None = None,
        sort: str = "created",
        limit: int = 50,
        offset: int = 0,
        user_id: str = USER,
    ) -> dict[str, Any]:
        """Newest first, or by FTS5 rank with `q`; `sort="score"`: by the stored score. An
        explicit category outside the agent's allowlist is 403 (seed 001 §5); an explicit store
        the trust cannot read is simply empty (seed 002 intersects stores). `writers`:
        agent_id, run_id, actor_id to match."""
        if category is not None:
            self.policy.check_categories(principal, [category])
        rows = await self.db.read(
            partial(
                list_rows,
                scope=self.scope(principal),
                user_id=user_id,
                q=q,
                filters={"kind": kind, "layer": layer, "status": status,
                         "category": category, "store": store, **(writers or {})},
                pii=pii,
                by_score=sort == "score",
                limit=limit,
                offset=offset,
            )
        )  # fmt: skip
        memories = [memory_dict(r) for r in rows]
        return {"memories": memories, "count": len(memories)}

    async def history(
        self, principal: Principal, memory_id: int, *, limit: int = 100, user_id: str = USER
    ) -> dict[str, Any]:
        scope = self.scope(principal)

        def read(conn: Any) -> list[Any]:
            row = memory_row(conn, memory_id, user_id)
            # A purged memory leaves its PURGE event: only an unrestricted caller sees that.
            if (row is None and not scope.unrestricted) or (
                row is not None and not scope.sees(row)
            ):
                raise errors.not_found(f"no memory {memory_id}")
            events = conn.execute(
                "SELECT * FROM history WHERE memory_id = ? AND user_id = ?"
                " ORDER BY id DESC LIMIT ?",
                (memory_id, user_id, limit),
            ).fetchall()
            if not events and row is None:
                raise errors.not_found(f"no memory {memory_id}")
            return events

        events = await self.db.read(read)
        return {"memory_id": memory_id, "events": [history_dict(e) for e in events]}

    async def timeline(
        self,
        principal: Principal,
        anchor: int,
        *,
        before: int = 5,
        after: int = 5,
        user_id: str = USER,
    ) -> dict[str, Any]:
        rows = await self.db.read(
            timeline_rows, self.scope(principal), anchor, before, after, user_id
        )
        return {"anchor": anchor, "items": [memory_dict(r) for r in rows]}

    async def entities(
        self,
        principal: Principal,
        *,
        q: str | None = None,
        type: str | None = None,
        limit: int = 50,
        user_id: str = USER,
    ) -> dict[str, Any]:
        rows = await self.db.read(entity_rows, self.scope(principal), q, limit, user_id, type)
        return {"entities": [entity_dict(r) for r in rows]}

    async def entity(self, principal: Principal, entity_id: int, *, user_id: str = USER) -> dict:
        row, linked = await self.db.read(entity_row, self.scope(principal), entity_id, user_id)
        return {**entity_dict(row), "memories": [memory_dict(m) for m in linked]}

    async def session_summary(
        self, principal: Principal, session_id: str, *, user_id: str = USER
    ) -> dict[str, Any]:
        """Seed 002's record of an ended session (`upkeep.sessions`). It is made of the
        conversation, so only callers who read turns get it (403); 404 when there is none (a
        session still going, a lower-trust caller's, or one whose summary waits for the LLM)."""
        self.scope(principal).require_turns()
        found = await self.db.read(read_summary, session_id, user_id)
        if found is None:
            raise errors.not_found(
                f"no summary of session {session_id!r}: it is written once the session ends"
            )
        return found

    async def stats(self, principal: Principal, *, user_id: str = USER) -> dict[str, Any]:
        """Counts of what the caller may see, and for full trust the operations of the last
        days (counts, latencies, merges, the validator's pass rate: no memory's content, but
        when and how much the household talks, which is the owner's to know; issue 38)."""
        found = await self.db.read(stats, self.scope(principal), user_id, self.clock())
        if principal.trust != OWNER_TRUST:
            return found
        ops = await self.db.read(partial(events.operations, now=self.clock()))
        return {**found, "operations": ops}

    async def upkeep_stats(
        self, principal: Principal, *, model: str, dim: int, user_id: str = USER
    ) -> dict[str, Any]:
        """`stats` plus the machinery (cascade backlog, counters, embedding, jobs): the owner's."""
        self.scope(principal).require_unrestricted("the memory's upkeep figures")
        found = await self.db.read(stats, self.scope(principal), user_id, self.clock())
        return {**found, **await self.db.read(partial(upkeep_stats, model=model, dim=dim), user_id)}

    async def base(self, principal: Principal, *, user_id: str = USER) -> str:
        """The base memory document (always in the prompt, so only for unrestricted callers)."""
        self.scope(principal).require_unrestricted("the base memory")
        return await self.db.read(get_base, user_id)

    async def why(
        self, principal: Principal, memory_id: int, *, q: str | None = None, user_id: str = USER
    ) -> dict[str, Any]:
        """Explained within the caller's scope: ranked among the memories /v1/query would search
        for it (its stores and categories), and naming only related memories it may see, so
        `rank`, `candidates` and the links say nothing about memories hidden from it."""
        scope = self.scope(principal)
        await self.db.read(visible_memory, scope, memory_id, user_id)
        found = await self.service("why").why(
            memory_id,
            query=q,
            user_id=user_id,
            stores=scope.stores,
            categories=None if scope.categories is None else tuple(sorted(scope.categories)),
        )
        if found is None:
            raise errors.not_found(f"no memory {memory_id}")
        if not scope.unrestricted:
            found = await self.db.read(partial(within_scope, scope=scope, user_id=user_id), found)
        return why_dict(found)

    # -- writes ------------------------------------------------------------------------------------
    async def create(
        self, principal: Principal, fields: dict[str, Any], *, user_id: str = USER
    ) -> dict[str, Any]:
        scope = self.scope(principal)
        fields = {**fields, "store": check_write_store(principal, fields["store"])}
        # Seed 001 §6.1: who wrote it; the caller's own agent unless it names another.
        check_writers(principal, fields)
        fields["agent_id"] = fields.get("agent_id") or principal.agent
        writes.check_category(scope, fields["category"])
        check_expiry(fields, self.clock())
        try:
            done = await self.service("remembering").remember(
                **fields, user_id=user_id, actor=scope.actor
            )
        except InvalidMemory as exc:
            raise errors.invalid_request(str(exc), field="content", reason=exc.reason) from None
        memory_id, action = int(done["id"]), str(done.get("action") or "added")
        return {**await self.get(principal, memory_id, user_id=user_id), "action": action}

    async def update(
        self,
        principal: Principal,
        memory_id: int,
        changes: dict[str, Any],
        *,
        if_match: str | None = None,
        user_id: str = USER,
    ) -> dict[str, Any]:
        memory = self.memory
        check_expiry(changes, self.clock())
        try:
            await self.db.write(
                partial(
                    writes.update,
                    if_match=if_match,
                    user_id=user_id,
                    now=self.clock(),
                ),
                self.scope(principal),
                memory_id,
                changes,
            )
        except InvalidMemory as exc:  # new content breaks the writing constraints (as POST)
            await self.db.write(count_rejection, exc.reason)
            raise errors.invalid_request(str(exc), field="content", reason=exc.reason) from None
        if memory is not None:
            memory.wake()  # the embed job for a changed text
        return await self.get(principal, memory_id, user_id=user_id)

    async def delete(
        self, principal: Principal, memory_id: int, *, purge: bool = False, user_id: str = USER
    ) -> dict[str, Any]:
        scope = self.scope(principal)
        await self.db.read(visible_memory, scope, memory_id, user_id)
        await self.service("forgetting").forget(memory_id, purge=purge, actor=scope.actor)
        row = await self.db.read(memory_row, memory_id, user_id)
        if row is None:
            return {"id": memory_id, "status": "purged", "purge_at": None}
        return {"id": memory_id, "status": row["status"], "purge_at": row["purge_at"]}

    async def restore(
        self, principal: Principal, memory_id: int, *, user_id: str = USER
    ) -> dict[str, Any]:
        scope = self.scope(principal)
        row = await self.db.read(visible_memory, scope, memory_id, user_id)
        if row["status"] == "active":
            raise errors.conflict(f"memory {memory_id} is active; there is nothing to restore")
        await self.service("restoring").restore(memory_id, actor=scope.actor)
        return await self.get(principal, memory_id, user_id=user_id)

    async def confirm(
        self, principal: Principal, memory_id: int, *, user_id: str = USER
    ) -> dict[str, Any]:
        """Protect a memory for good (confidence 1, no decay): the user vouches for it."""
        scope = self.scope(principal)
        row = await self.db.read(visible_memory, scope, memory_id, user_id)
        if row["status"] == "soft_deleted":
            raise errors.conflict(f"memory {memory_id} is soft-deleted; restore it first")
        await self.service("confirming").confirm(memory_id, actor=scope.actor)
        return await self.get(principal, memory_id, user_id=user_id)

    async def gc(self, principal: Principal) -> dict[str, int]:
        scope = self.scope(principal)
        scope.require_unrestricted("a GC pass (it changes every memory)")
        return await self.service("gc").gc(actor=scope.actor)

    async def export_chunks(
        self, principal: Principal, *, user_id: str = USER
    ) -> AsyncGenerator[bytes, None]:
        """Everything the user owns as JSON lines; only for a caller who may see everything."""
        self.scope(principal).require_unrestricted("an export")
        async for chunk in export_chunks(self.db, user_id, self.clock()):
            yield chunk


def check_expiry(fields: dict[str, Any], now: float) -> None:
    """Seed 002's `expires_at` must be in the future: a time already past would hide the
    memory the moment it is written (400, nothing stored or changed)."""
    expires = fields.get("expires_at")
    if expires is not None and expires <= now:
        raise errors.invalid_request(
            f"expires_at {expires:.0f} is not in the future (now {now:.0f}); give a later "
            "time, or leave it out to keep the memory for good",
            field="expires_at",
        )


def check_writers(principal: Principal, fields: dict[str, Any]) -> None:
    """Below full trust a caller writes as itself: `agent_id` is its own agent (or absent) and
    `actor_id` does not name the owner. 403, like a store it may not write: a row silently
    saying something other than was sent would hide the client's mistake."""
    if principal.trust == "full":
        return
    agent, actor = fields.get("agent_id"), fields.get("actor_id")
    if agent is not None and agent != principal.agent:
        key, problem = "agent_id", f"writes as its own agent '{principal.agent}', not {agent!r}"
    elif actor is not None and actor.lower() in OWNER_NAMES:
        key, problem = "actor_id", f"may not name the owner ({actor!r}) as the actor"
    else:
        return
    raise errors.ApiError(
        403,
        "forbidden",
        f"trust '{principal.trust}' {problem} ({key})",
        details={"field": key, "trust": principal.trust},
    )
