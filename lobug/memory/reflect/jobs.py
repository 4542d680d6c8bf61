"""The background-thinking jobs and their schedule: reflection, insights, an early base memory.

A periodic check (`schedule`, persisted in `periodic_runs`: after downtime it runs once) enqueues
one job per user and task that is due; the job queue runs them off the hot path, visible in
`lobug jobs`. Each job checks again that it is still due (jobs are idempotent), spends one call
of the day's LLM budget (none left: it waits for the next day without spending an attempt),
asks, and writes in one transaction. An Ollama outage is RetryLater (the job waits, loses
nothing); nonsense twice fails the job loudly and the task rests for a day.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, NoReturn, TypeVar

from lobug.config import MemoryConfig, ReflectionConfig
from lobug.llm.ask import MAX_TOKENS, InvalidOutput, ask
from lobug.llm.client import LLMClient, LLMUnavailable, OutputSchema
from lobug.memory import enqueue, instructions
from lobug.memory.reflect import insights, marks, reflection
from lobug.memory.reflect import instructions as thinking
from lobug.memory.settings import WritePolicy
from lobug.memory.summaries import base_memory, distill, early_base
from lobug.memory.table import rows as store
from lobug.memory.upkeep import budget
from lobug.storage.database import Database
from lobug.workers.periodic import Slot
from lobug.workers.queue import Job
from lobug.workers.runner import Handler, NotReady, PermanentFailure, RetryLater

log = logging.getLogger(__name__)
T = TypeVar("T")

REFLECT = "reflect"
INSIGHTS = "insights"
BASE_FROM_FACTS = "base_from_facts"
BUDGET = "thinking"  # upkeep.budget: reflection.llm_calls_per_day, per user


class Thinking:
    def __init__(
        self,
        *,
        db: Database,
        llm: LLMClient,
        memory: MemoryConfig,
        config: ReflectionConfig,
        clock: Callable[[], float],
        on_base_written: Callable[[str], None],
        query_vector: Callable[[str], Awaitable[list[float] | None]],
        policy: WritePolicy,
    ) -> None:
        self.db = db
        self.llm = llm
        self.memory = memory
        self.config = config
        self.clock = clock
        self.on_base_written = on_base_written
        self.query_vector = query_vector  # the early base memory's broad KNN query
        self.policy = policy  # how an insight's profile field is written

    def handlers(self) -> dict[str, Handler]:
        return {REFLECT: self.reflect, INSIGHTS: self.insights, BASE_FROM_FACTS: self.base}

    # -- the schedule ----------------------------------------------------------------------------
    async def schedule(self) -> list[int]:
        """Enqueue the due jobs (the periodic task); returns their ids."""
        if not self.config.enabled:
            return []
        return await self.db.write(partial(self.enqueue_due, now=self.clock()))

    def enqueue_due(self, conn: Any, *, now: float) -> list[int]:
        cfg, ids = self.config, []
        for user_id in marks.users(conn):
            due = {
                REFLECT: reflection.due(
                    conn,
                    user_id,
                    now=now,
                    slot=Slot.parse(cfg.reflection_at).latest(now),
                ),
                INSIGHTS: insights.due(
                    conn, user_id, now=now, every_hours=cfg.insights_every_hours
                ),
                BASE_FROM_FACTS: early_base.due(conn, user_id)
                and not marks.quiet(conn, BASE_FROM_FACTS, user_id, now, budget.DAY_S),
            }
            for kind in (k for k, is_due in due.items() if is_due):
                ids.append(enqueue.per_user(conn, kind, user_id=user_id, now=now))
        return ids

    # -- handlers --------------------------------------------------------------------------------
    async def reflect(self, job: Job) -> None:
        user_id, cfg = _user(job), self.config
        now = self.clock()
        slot = Slot.parse(cfg.reflection_at).latest(now)
        check = partial(reflection.due, now=now, slot=slot)
        if not await self.db.read(check, user_id):
            return
        read = await self.db.read(reflection.inputs, user_id, self.clock())
        messages = thinking.reflection_messages(read.facts, read.episodes)
        text = await self._ask(
            job, reflection.TASK, messages, reflection.parse, thinking.REFLECT_REMINDER
        )
        memory_id = await self.db.write(
            partial(
                reflection.store_reflection,
                now=self.clock(),
                slot=slot,
                facts=len(read.facts),
                sources=read.source_ids,
            ),
            user_id,
            text,
        )
        log.info("weekly reflection #%s for %s from %d facts", memory_id, user_id, len(read.facts))

    async def insights(self, job: Job) -> None:
        user_id = _user(job)
        check = partial(
            insights.due, now=self.clock(), every_hours=self.config.insights_every_hours
        )
        if not await self.db.read(check, user_id):
            return
        facts, activity, snippet = await self.db.read(insights.inputs, user_id, self.clock())
        messages = thinking.insight_messages(facts, activity, snippet)
        found = await self._ask(
            job,
            insights.TASK,
            messages,
            insights.parse,
            thinking.INSIGHT_REMINDER,
            temperature=0.0,
            schema=insights.SCHEMA,
            max_tokens=insights.MAX_TOKENS,
        )
        ids = await self.db.write(
            partial(
                insights.store_insights,
                now=self.clock(),
                cfg=self.memory,
                policy=self.policy,
            ),
            user_id,
            found,
        )
        log.info("theory-of-mind insights for %s: %s", user_id, ids or "none")

    async def base(self, job: Job) -> None:
        user_id = _user(job)
        if not await self.db.read(early_base.due, user_id):
            return
        current = await self.db.read(base_memory.get_base, user_id)
        vector = await self.query_vector(early_base.query(current))
        current, facts, count = await self.db.read(early_base.inputs, user_id, vector)
        max_words = self.memory.base_memory_max_words
        messages = instructions.distill_base_memory_messages(current, [], facts, max_words)
        content = await self._ask(
            job,
            BASE_FROM_FACTS,
            messages,
            distill.distill_parser(max_words),
            instructions.DISTILL_REMINDER,
        )
        written = await self.db.write(
            partial(early_base.store_base, count=count, now=self.clock()), user_id, content
        )
        if written:
            self.on_base_written(user_id)
            log.info("base memory of %s distilled from %d facts", user_id, count)

    # -- one budgeted LLM call -------------------------------------------------------------------
    async def _ask(
        self,
        job: Job,
        task: str,
        messages: Sequence[dict[str, str]],
        parse: Callable[[str], T],
        reminder: str,
        *,
        temperature: float = 0.3,
        schema: OutputSchema | None = None,
        max_tokens: int = MAX_TOKENS,
    ) -> T:
        now, limit = self.clock(), self.config.llm_calls_per_day
        if not await self.db.write(budget.take, BUDGET, _user(job), now, limit):
            raise NotReady(
                f"today's budget of {limit} background-thinking LLM calls is spent"
                " (reflection.llm_calls_per_day); waiting for tomorrow",
                budget.next_day_in(now),
            )
        try:
            return await ask(
                self.llm,
                messages,
                parse,
                reminder=reminder,
                what=job.kind,
                timeout_s=self.memory.llm_timeout_s,
                temperature=temperature,
                schema=schema,
                max_tokens=max_tokens,
            )
        except LLMUnavailable as exc:
            raise RetryLater(f"LLM unavailable: {exc}") from None
        except InvalidOutput as exc:
            if not exc.raw.strip():  # no answer at all: an outage, not nonsense
                raise RetryLater(f"LLM gave an empty answer: {exc}") from None
            await self._give_up(job, task, exc)

    async def _give_up(self, job: Job, task: str, exc: InvalidOutput) -> NoReturn:
        """Nonsense twice: count it, let the task rest a day, fail the job (`lobug jobs`)."""

        def record(conn: Any) -> None:
            store.bump_counter(conn, f"{job.kind}_invalid_total")
            marks.put(conn, task, _user(job), self.clock())

        await self.db.write(record)
        log.warning(
            "%s #%d: the model's output was invalid twice; the task rests for a day (%s)",
            job.kind,
            job.id,
            exc,
        )
        raise PermanentFailure(f"invalid model output after a reminder: {exc}")


def _user(job: Job) -> str:
    return str(job.payload.get("user_id") or "default")
