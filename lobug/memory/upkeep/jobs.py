"""The upkeep jobs in the durable queue, and the persisted schedule that enqueues them.

The schedule (`tasks`, run by workers/periodic.py with its `periodic_runs` rows) only enqueues:
the work runs in the job queue, off the hot path, visible in `lobug jobs`, one pending job per
kind and user (the dedupe key). A job's LLM calls come out of the daily upkeep budget; an
Ollama outage or an empty answer makes it RetryLater, a spent budget or vectors being rebuilt
NotReady: it waits, nothing is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from lobug.config import UpkeepConfig
from lobug.llm.client import LLMClient, LLMUnavailable
from lobug.memory import enqueue
from lobug.memory.graph import enrich
from lobug.memory.settings import WritePolicy
from lobug.memory.upkeep import events, sessions
from lobug.memory.upkeep.budget import LlmBudget
from lobug.memory.upkeep.consolidate import Consolidator
from lobug.memory.upkeep.events import DAY_S
from lobug.storage.database import Database
from lobug.workers.periodic import Task
from lobug.workers.queue import Job
from lobug.workers.runner import Handler, NotReady, PermanentFailure, RetryLater

log = logging.getLogger(__name__)

CONSOLIDATE = "consolidate"
CONSOLIDATE_SESSION = sessions.CONSOLIDATE_SESSION
ENRICH = "enrich_entities"
KINDS = (CONSOLIDATE, CONSOLIDATE_SESSION, ENRICH)
ENTITY_MERGED = "entity_merge"


class UpkeepJobs:
    def __init__(
        self,
        *,
        db: Database,
        llm: LLMClient,
        cfg: UpkeepConfig,
        policy: WritePolicy,
        clock: Callable[[], float],
        timeout_s: float,
        max_attempts: int,
        vectors_on: Callable[[], bool],
    ) -> None:
        self.db = db
        self.cfg = cfg
        self.clock = clock
        self.max_attempts = max_attempts
        self.vectors_on = vectors_on  # raises NotReady while vectors are being rebuilt
        self.budget = LlmBudget(db, clock, cfg.llm_calls_per_day)
        self.consolidator = Consolidator(
            db=db,
            llm=llm,
            cfg=cfg,
            policy=policy,
            budget=self.budget,
            clock=clock,
            timeout_s=timeout_s,
        )

    def handlers(self) -> dict[str, Handler]:
        return {
            CONSOLIDATE: self.consolidate,
            CONSOLIDATE_SESSION: self.consolidate_session,
            ENRICH: self.enrich_entities,
        }

    def tasks(self) -> list[Task]:
        return [
            Task(CONSOLIDATE, self.cfg.consolidate_interval_s, self.schedule_consolidation),
            Task(ENRICH, self.cfg.enrich_interval_s, self.schedule_enrichment),
        ]

    # -- the schedule ----------------------------------------------------------------------------
    async def schedule_consolidation(self) -> list[int]:
        jobs = list(await self.db.write(self._enqueue_per_user, CONSOLIDATE))
        if self.cfg.session_consolidation:  # the sessions no switch consolidated (seed 003)
            jobs += await self.db.write(
                lambda c: sessions.enqueue_idle(
                    c, now=self.clock(), idle_s=DAY_S, max_attempts=self.max_attempts
                )
            )
        return jobs

    async def schedule_enrichment(self) -> list[int]:
        return list(await self.db.write(self._enqueue_per_user, ENRICH))

    def _enqueue_per_user(self, conn: Any, kind: str) -> list[int]:
        users = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT user_id FROM memories WHERE kind = 'fact' AND status = 'active'"
            )
        ]
        return [
            enqueue.per_user(
                conn, kind, user_id=u, now=self.clock(), max_attempts=self.max_attempts
            )
            for u in users
        ]

    # -- the jobs --------------------------------------------------------------------------------
    async def consolidate(self, job: Job) -> None:
        user_id = _user(job)
        vectors = self.vectors_on()
        try:
            await self.consolidator.run(user_id, vectors=vectors)
        except LLMUnavailable as exc:
            raise RetryLater(f"LLM unavailable: {exc}") from None

    async def consolidate_session(self, job: Job) -> None:
        """Seed 003: every exchange extracted, the session's facts consolidated, marked."""
        user_id = _user(job)
        session_id = job.payload.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            raise PermanentFailure(f"bad {job.kind} payload {job.payload!r}")
        if await self.db.read(sessions.is_consolidated, session_id):
            return
        missing, pending = await self.db.read(sessions.extraction_owed, session_id)
        if missing:
            await self.db.write(
                lambda c: sessions.extract_missing(
                    c, user_id, missing, now=self.clock(), max_attempts=self.max_attempts
                )
            )
        if missing or pending:
            raise NotReady(
                f"session {session_id}: {len(missing) + pending} exchange(s) not extracted yet",
                sessions.EXTRACTION_WAIT_S,
            )
        vectors = self.vectors_on()
        facts = await self.db.read(sessions.session_facts, session_id, user_id)
        if facts:
            try:
                await self.consolidator.run(user_id, vectors=vectors, only=facts)
            except LLMUnavailable as exc:
                raise RetryLater(f"LLM unavailable: {exc}") from None
        await self.db.write(lambda c: sessions.mark_consolidated(c, session_id, now=self.clock()))

    async def enrich_entities(self, job: Job) -> None:
        """Seed 003's nightly entity pass (graph/enrich.py): no LLM, one transaction."""
        user_id = _user(job)
        report = await self.db.write(partial(self._enrich, user_id=user_id, now=self.clock()))
        log.info("entity enrichment for %s: %s", user_id, report)

    @staticmethod
    def _enrich(conn: Any, *, user_id: str, now: float) -> dict[str, int]:
        report = enrich.enrich(conn, user_id, now=now)
        if report["merged"]:
            events.record(conn, ENTITY_MERGED, now=now, n=report["merged"])
        return report


def _user(job: Job) -> str:
    user_id = job.payload.get("user_id", "default")
    if not isinstance(user_id, str) or not user_id:
        raise PermanentFailure(f"bad {job.kind} payload {job.payload!r}")
    return user_id
