"""The `extract` job: facts from one exchange, by the configured mode, reconciled in one commit.

Mode `heuristic` never calls the LLM. In `llm` and `hybrid` an unreachable LLM is retried
(RetryLater, backoff) until attempt `memory.llm_fallback_attempts`; then, like a model that
answered nonsense twice, the heuristic facts stand in for this exchange — logged at WARNING and
counted in `meta` (`lobug memory stats`), never silently.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from lobug.config import MemoryConfig
from lobug.conversation import TurnRecord, get_turn
from lobug.llm.ask import InvalidOutput
from lobug.llm.ollama_chat import LLMUnavailable, OllamaChat
from lobug.memory.extract import candidates
from lobug.memory.extract import llm as extraction
from lobug.memory.settings import WritePolicy
from lobug.memory.store import rows as store
from lobug.memory.store.dedup import content_hash
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.reconcile import ACTOR, Origin, Outcome, reconcile
from lobug.storage.database import Database
from lobug.workers import queue
from lobug.workers.queue import Job
from lobug.workers.runner import PermanentFailure, RetryLater

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], Awaitable[list[list[float]]]]


class ExtractJob:
    def __init__(
        self,
        *,
        db: Database,
        llm: OllamaChat,
        config: MemoryConfig,
        policy: WritePolicy,
        embed: Embed,
        vectors_on: Callable[[], bool],
        clock: Callable[[], float],
    ) -> None:
        self.db = db
        self.llm = llm
        self.config = config
        self.policy = policy
        self.embed = embed
        self.vectors_on = vectors_on
        self.clock = clock

    async def __call__(self, job: Job) -> None:
        vectors_on = self.vectors_on()  # raises NotReady while a reembed is needed
        try:
            user_turn_id = int(job.payload["user_turn_id"])
            assistant_id = job.payload.get("assistant_turn_id")
        except (KeyError, TypeError, ValueError):
            raise PermanentFailure(f"bad extract payload {job.payload!r}") from None
        user, assistant, done = await self.db.read(load_exchange, user_turn_id, assistant_id)
        if user is None or done:
            return
        counts: Counter[str] = Counter()
        model = await self._model_facts(job, user, assistant, counts)
        use_rules = self.config.extraction_mode != "llm" or bool(counts)
        rules = candidates.heuristic(user.text) if use_rules else []
        found, rejected = candidates.validated(candidates.merge(model, rules))
        for reason, n in rejected.items():
            counts["validator_rejected_total"] += n
            counts[f"validator_rejected.{reason}"] += n
        if rejected:
            log.info("extract #%d: validator rejected %s", job.id, dict(rejected))
        vectors = None
        if found and vectors_on:
            vectors = await self.embed([c.content for c in found])
        from_model = {content_hash(c.content) for c in model}
        outcomes = await self.db.write(
            partial(self._store, job=job, now=self.clock(), counts=counts, from_model=from_model),
            user,
            assistant,
            found,
            vectors,
        )
        if outcomes:
            log.info(
                "extract #%d (turn %d): %s",
                job.id,
                user.id,
                ", ".join(f"{o.action} #{o.memory_id}" for o in outcomes),
            )

    async def _model_facts(
        self, job: Job, user: TurnRecord, assistant: TurnRecord | None, counts: Counter[str]
    ) -> list[Candidate]:
        if self.config.extraction_mode == "heuristic":
            return []
        try:
            found = await extraction.extract(
                self.llm,
                user.text,
                assistant.text if assistant else None,
                timeout_s=self.config.llm_timeout_s,
            )
        except LLMUnavailable as exc:
            if job.attempts < self.config.llm_fallback_attempts:
                raise RetryLater(f"LLM unavailable: {exc}") from None
            counts["extraction_llm_unavailable_total"] += 1
            log.warning(
                "extract #%d: the LLM is still unreachable at attempt %d (%s); "
                "using the heuristic extractor for this exchange",
                job.id,
                job.attempts,
                exc,
            )
            return []
        except InvalidOutput as exc:
            counts["extraction_invalid_total"] += 1
            log.warning(
                "extract #%d: the model's output was invalid twice (%s); "
                "using the heuristic extractor for this exchange",
                job.id,
                exc,
            )
            return []
        return candidates.from_llm(found)

    def _store(
        self,
        conn: Any,
        user: TurnRecord,
        assistant: TurnRecord | None,
        found: list[Candidate],
        vectors: list[list[float]] | None,
        *,
        job: Job,
        now: float,
        counts: Counter[str],
        from_model: set[str],
    ) -> list[Outcome]:
        if store.extracted_from(conn, user.id):
            return []  # a previous run of this job got as far as committing
        for name, n in sorted(counts.items()):
            store.bump_counter(conn, name, n)
        if counts.get("extraction_invalid_total") or counts.get("extraction_llm_unavailable_total"):
            store.bump_counter(conn, "extraction_fallback_total")
        turn_ids = [user.id] + ([assistant.id] if assistant else [])
        outcomes = []
        for i, cand in enumerate(found):
            origin = Origin(
                user_id=user.user_id,
                session_id=user.session_id,
                turn_ids=turn_ids,
                actor=ACTOR,
                job_id=job.id,
                source="llm" if content_hash(cand.content) in from_model else "heuristic",
            )
            vector = vectors[i] if vectors else None
            outcomes.append(
                reconcile(conn, cand, vector, origin=origin, policy=self.policy, now=now)
            )
        # Done in the same transaction as the facts: a crash now cannot make them twice.
        queue.complete(conn, job.id, now=now)
        return outcomes


def load_exchange(
    conn: Any, user_turn_id: int, assistant_turn_id: int | None
) -> tuple[TurnRecord | None, TurnRecord | None, bool]:
    user = get_turn(conn, user_turn_id)
    assistant = get_turn(conn, int(assistant_turn_id)) if assistant_turn_id else None
    if assistant is not None and assistant.degraded:
        assistant = None  # an apology says nothing about the user
    return user, assistant, store.extracted_from(conn, user_turn_id)
