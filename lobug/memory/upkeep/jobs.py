"""The upkeep jobs in the durable queue, and the persisted schedule that enqueues them.

The schedule (`tasks`, run by workers/periodic.py with its `periodic_runs` rows) only enqueues:
entity enrichment first, then consolidation, which waits while the user's enrichment is pending
(seed 003: the entities linked tonight are there when facts are judged and merged);
the work runs in the job queue, off the hot path, visible in `lobug jobs`, one pending job per
kind and user (the dedupe key). A job's LLM calls come out of the daily upkeep budget; an
Ollama outage or an empty answer makes it RetryLater, a spent budget or vectors being rebuilt
NotReady: it waits, nothing is lost.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from lobug.config import UpkeepConfig
from lobug.llm.ask import InvalidOutput
from lobug.llm.client import LLMClient, LLMUnavailable
from lobug.memory import enqueue
from lobug.memory.graph import enrich, ner_llm
from lobug.memory.graph.entities import Mention, extract_entities
from lobug.memory.graph.ner import ACCURATE, Ner
from lobug.memory.settings import WritePolicy
from lobug.memory.upkeep import budget, events, sessions
from lobug.memory.upkeep.budget import LlmBudget
from lobug.memory.upkeep.consolidate import Consolidator
from lobug.memory.upkeep.events import DAY_S
from lobug.storage.database import Database
from lobug.workers.periodic import Task
from lobug.workers.queue import Job
from lobug.workers.runner import Handler, NotReady, PermanentFailure

log = logging.getLogger(__name__)

CONSOLIDATE = "consolidate"
CONSOLIDATE_SESSION = sessions.CONSOLIDATE_SESSION
ENRICH = "enrich_entities"
ENTITY_MERGED = "entity_merge"
ENRICH_WAIT_S = 60.0  # consolidation looks again this often while enrichment is pending
ENRICH_BUDGET_SHARE = 0.5  # of the daily upkeep LLM calls, enrichment's at most


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
        vectors_on: Callable[[], bool],
        ner: Ner,
    ) -> None:
        self.db = db
        self.ner = ner
        self.cfg = cfg
        self.clock = clock
        self.vectors_on = vectors_on  # raises NotReady while vectors are being rebuilt
        self.budget = LlmBudget(db, clock, cfg.llm_calls_per_day)
        self.consolidator = Consolidator(
            db=db,
            llm=llm,
            policy=policy,
            budget=self.budget,
            clock=clock,
            timeout_s=timeout_s,
        )
        self.summarizer = sessions.SessionSummarizer(
            db=db, llm=llm, budget=self.budget, clock=clock, timeout_s=timeout_s
        )

    def handlers(self) -> dict[str, Handler]:
        return {
            CONSOLIDATE: self.consolidate,
            CONSOLIDATE_SESSION: self.consolidate_session,
            ENRICH: self.enrich_entities,
        }

    def tasks(self) -> list[Task]:
        # Enrichment first (seed 003): on the same check its job is queued before
        # consolidation's, and `consolidate` waits for it.
        return [
            Task(ENRICH, self.cfg.enrich_interval_s, self.schedule_enrichment),
            Task(CONSOLIDATE, self.cfg.consolidate_interval_s, self.schedule_consolidation),
        ]

    # -- the schedule ----------------------------------------------------------------------------
    async def schedule_consolidation(self) -> list[int]:
        jobs = list(await self.db.write(self._enqueue_per_user, CONSOLIDATE))
        if self.cfg.session_consolidation:  # the sessions no switch consolidated (seed 003)
            jobs += await self.db.write(
                lambda c: sessions.enqueue_idle(c, now=self.clock(), idle_s=DAY_S)
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
        return [enqueue.per_user(conn, kind, user_id=u, now=self.clock()) for u in users]

    # -- the jobs --------------------------------------------------------------------------------
    async def consolidate(self, job: Job) -> None:
        user_id = _user(job)
        if await self.db.read(enrichment_pending, user_id):
            raise NotReady(f"entity enrichment of {user_id} runs first", ENRICH_WAIT_S)
        vectors = self.vectors_on()
        await self.consolidator.run(user_id, vectors=vectors)

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
                lambda c: sessions.extract_missing(c, user_id, missing, now=self.clock())
            )
        if missing or pending:
            raise NotReady(
                f"session {session_id}: {len(missing) + pending} exchange(s) not extracted yet",
                sessions.EXTRACTION_WAIT_S,
            )
        await self.summarizer.run(session_id, user_id)  # seed 002's record: one LLM call
        vectors = self.vectors_on()
        facts = await self.db.read(sessions.session_facts, session_id, user_id)
        if facts:
            await self.consolidator.run(user_id, vectors=vectors, only=facts)
        await self.db.write(lambda c: sessions.mark_consolidated(c, session_id, now=self.clock()))

    async def enrich_entities(self, job: Job) -> None:
        """Seed 003's nightly entity pass (graph/enrich.py): the accurate re-extraction when
        this install has an accurate NER (its model calls in the lane, from the upkeep
        budget), then one transaction for the rest (the regexes' look when it could not run,
        aliases, profiles)."""
        user_id = _user(job)
        relinked = None
        if self.ner.accurate_ner_available:
            relinked = await self._reextract(user_id)
        report = await self.db.write(
            partial(self._enrich, user_id=user_id, now=self.clock(), relinked=relinked)
        )
        log.info("entity enrichment for %s: %s", user_id, report)

    async def _reextract(self, user_id: str) -> int | None:
        """New links from the accurate NER over tonight's candidates, committed a call at a
        time (a preempted job goes on from there); None when it could not run at all. It never
        waits or retries, since consolidation waits for it (docs/seeds.md, row 239)."""
        found = await self.db.read(
            partial(
                enrich.candidates,
                user_id=user_id,
                strategy=ACCURATE,
                limit=enrich.ACCURATE_LIMIT,
            )
        )
        made: int | None = None
        for start in range(0, len(found), ner_llm.BATCH):
            batch = found[start : start + ner_llm.BATCH]
            if not await self._may_spend(user_id):
                log.info(
                    "entity enrichment for %s stops: its share of the budget is spent", user_id
                )
                break
            entities = await self._accurate([c.text for c in batch])
            if entities is None:
                break
            made = (made or 0) + await self.db.write(
                partial(enrich.link_found, strategy=ACCURATE, now=self.clock()),
                user_id,
                list(zip(batch, entities, strict=True)),
            )
        return made

    async def _may_spend(self, user_id: str) -> bool:
        """Take one upkeep call for enrichment while today's spending is below its share, so
        the consolidation after it (the more useful work) keeps the rest. spaCy alone costs
        no model call."""
        if "llm" not in self.ner.providers:
            return True
        cap = int(self.budget.per_day * ENRICH_BUDGET_SHARE)
        now = self.clock()
        if await self.db.read(budget.spent, budget.BUDGET, user_id, now) >= cap:
            return False
        try:
            await self.budget.take("entity enrichment", user_id)
        except NotReady:
            return False
        return True

    async def _accurate(self, texts: Sequence[str]) -> list[list[Mention]] | None:
        """One model call's entities for `texts`; None when the model is down."""
        started = time.perf_counter()
        try:
            found = await self.ner.extract_many(texts, ACCURATE)
        except LLMUnavailable as exc:
            await self._record(1, started, ok=False)
            log.info("entity enrichment: the model is unavailable (%s); the rest waits", exc)
            return None
        except InvalidOutput as exc:
            if not exc.raw.strip():
                await self._record(1, started, ok=False)
                return None
            await self._record(2, started)
            log.warning("entity enrichment: invalid answer twice (%s); regex entities", exc)
            return [extract_entities(text) for text in texts]
        await self._record(1, started)
        return found

    async def _record(self, calls: int, started: float, *, ok: bool = True) -> None:
        if "llm" in self.ner.providers:  # the model's calls, for /v1/stats
            await self.budget.record(calls, started, ok=ok)

    @staticmethod
    def _enrich(conn: Any, *, user_id: str, now: float, relinked: int | None) -> dict[str, int]:
        report = enrich.enrich(conn, user_id, now=now, relinked=relinked)
        if report["merged"]:
            events.record(conn, ENTITY_MERGED, now=now, n=report["merged"])
        return report


def enrichment_pending(conn: Any, user_id: str) -> bool:
    """Whether the user's `enrich_entities` job is queued or running (its dedupe key)."""
    row = conn.execute(
        "SELECT 1 FROM jobs WHERE dedupe_key = ? AND state IN ('pending', 'running')",
        (f"{ENRICH}:{user_id}",),
    ).fetchone()
    return row is not None


def _user(job: Job) -> str:
    user_id = job.payload.get("user_id", "default")
    if not isinstance(user_id, str) or not user_id:
        raise PermanentFailure(f"bad {job.kind} payload {job.payload!r}")
    return user_id
