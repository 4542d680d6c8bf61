"""The memory's /v1 interface (query, why, remember, forget, restore, gc), mixed into
MemoryService: thin async wrappers, the work is in `search`, `explain`, `edits`, `upkeep`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from lobug.config import Config, MemoryConfig
from lobug.memory.extract.heuristics import Candidate
from lobug.memory.lifecycle.gc import gc_pass
from lobug.memory.lifecycle.policies import GcParams
from lobug.memory.query import EPISODE, InvalidMemory, QueryRequest, QueryResult
from lobug.memory.search import explain
from lobug.memory.search import runner as search
from lobug.memory.search.hits import HitBuffer, SeenMarks, apply_hits, apply_seen
from lobug.memory.search.scoring import ScoringWeights
from lobug.memory.settings import WritePolicy
from lobug.memory.store import rows as store
from lobug.memory.write import edits
from lobug.memory.write.reconcile import Origin
from lobug.memory.write.validator import validate_fact
from lobug.storage.database import Database

log = logging.getLogger(__name__)

STORES = ("private", "shared", "social")


class MemoryOperations:
    """Needs (from MemoryService): db, clock, config, memory, weights, gc_params, policy,
    hits, max_attempts, _wake and _search_vector."""

    db: Database
    clock: Callable[[], float]
    config: Config
    memory: MemoryConfig
    weights: ScoringWeights
    gc_params: GcParams
    policy: WritePolicy
    hits: HitBuffer
    seen: SeenMarks
    max_attempts: int
    _wake: Callable[[], None]
    _search_vector: Callable[[str], Awaitable[list[float] | None]]
    _search_vector_later: Callable[[str], Awaitable[Awaitable[list[float] | None]]]

    # -- the /v1 interface -----------------------------------------------------------------------
    async def query(self, req: QueryRequest) -> list[QueryResult]:
        """Hybrid search with filters, threshold and budget; hits are counted off the request
        path. Works without vectors (BM25 + entities)."""
        vector = await self._search_vector_later(req.text)
        now = self.clock()
        plan = search.Plan(req, self.weights)
        results = await search.run_parallel(self.db, plan, vector, now=now)
        self.hits.add([r.id for r in results if r.kind != EPISODE], now)
        return results

    async def why(
        self, memory_id: int, *, query: str | None = None, user_id: str = "default"
    ) -> dict[str, Any] | None:
        """Score terms, list ranks, rules, history; None when there is no such memory."""
        vector = await self._search_vector(query) if query is not None else None
        now = self.clock()
        return await self.db.read(
            lambda conn: explain.explain(
                conn,
                memory_id,
                user_id=user_id,
                query=query,
                vector=vector,
                now=now,
                weights=self.weights,
            )
        )

    async def gc(self, *, actor: str = "api") -> dict[str, int]:
        """One GC pass (decay, scores, promotion, archive, TTL, purge) in the writer."""
        result = await self.db.write(
            partial(gc_pass, now=self.clock(), params=self.gc_params, actor=actor)
        )
        log.info("memory gc (%s): %s", actor, result)
        return result

    async def remember(
        self,
        *,
        content: str,
        kind: str = "fact",
        category: str | None = None,
        importance: float = 0.5,
        tags: tuple[str, ...] | list[str] = (),
        store: str = "private",
        pinned: bool = False,
        user_id: str = "default",
        actor: str,
        session_id: str | None = None,
    ) -> dict[str, Any]:
        """Validate, reconcile like an extracted fact, embed later; the row plus `action`
        (added | merged | superseded). Raises InvalidMemory (a ValueError) with the reason."""
        if store not in STORES:
            raise InvalidMemory("bad_store", f"store must be one of {', '.join(STORES)}")
        if not 0.0 <= float(importance) <= 1.0:
            raise InvalidMemory("bad_importance", "importance must be between 0 and 1")
        result = validate_fact(content, kind)
        if not result.ok:
            reason = result.reason or "invalid"
            await self.db.write(_count_rejection, reason)
            raise InvalidMemory(reason, f"memory rejected: {reason.replace('_', ' ')}")
        cand = Candidate(result.text, category, float(importance), (), kind)
        origin = Origin(
            user_id=user_id,
            session_id=session_id,
            actor=actor,
            store=store,
            pinned=pinned,
            tags=tuple(tags),
            source="user",
        )
        row = await self.db.write(
            partial(
                edits.remember,
                origin=origin,
                policy=self.policy,
                now=self.clock(),
                max_attempts=self.max_attempts,
            ),
            cand,
        )
        self._wake()
        return row

    async def forget(self, memory_id: int, *, purge: bool, actor: str) -> bool:
        """Soft delete (purge after `lifecycle.purge_after_days`) or purge now."""
        return await self.db.write(
            partial(
                edits.forget,
                purge=purge,
                actor=actor,
                now=self.clock(),
                purge_after_days=self.gc_params.purge_after_days,
            ),
            memory_id,
        )

    async def restore(self, memory_id: int, *, actor: str) -> bool:
        """Archived or soft-deleted → active; its vector is remade by a job."""
        restored = await self.db.write(
            partial(edits.restore, actor=actor, now=self.clock(), max_attempts=self.max_attempts),
            memory_id,
        )
        self._wake()
        return restored

    async def flush_hits(self) -> int:
        """Write the retrieval hits counted so far and the delta revisions sessions were shown
        (one transaction); returns the memories touched."""
        pending, seen = self.hits.take(), self.seen.take()
        if not pending and not seen:
            return 0
        try:
            return await self.db.write(partial(_flush, now=self.clock()), pending, seen)
        except Exception:
            self.hits.put_back(pending)
            self.seen.put_back(seen)
            raise

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.memory.hit_flush_s)
            try:
                await self.flush_hits()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - kept for the next flush
                log.warning("could not write retrieval hits (%s); retrying", exc)

    async def _gc(self) -> None:
        await self.gc(actor="scheduler")


def _flush(
    conn: Any,
    pending: dict[int, tuple[int, float]],
    seen: dict[tuple[str, str], int],
    *,
    now: float,
) -> int:
    apply_seen(conn, seen)
    return apply_hits(conn, pending, now=now)


def _count_rejection(conn: Any, reason: str) -> None:
    store.bump_counter(conn, "validator_rejected_total")
    store.bump_counter(conn, f"validator_rejected.{reason}")
