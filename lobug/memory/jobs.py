"""Job handlers for memory work: embed turns and memories, extract facts, run the cascades.

Every handler is idempotent (a job that was running when the process died runs again) and maps
an outage (Ollama, embedder) to RetryLater, so the runner backs off and nothing is dropped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from lobug.config import Config
from lobug.conversation import CONVERSATION_TURN
from lobug.llm.ask import InvalidOutput
from lobug.llm.client import LLMClient, LLMUnavailable
from lobug.llm.embedders import Embedder, EmbeddingUnavailable
from lobug.memory import enqueue
from lobug.memory.extract.job import ExtractJob
from lobug.memory.graph import enrich, ner_llm, relations
from lobug.memory.reflect.jobs import Thinking
from lobug.memory.settings import WritePolicy
from lobug.memory.summaries.cascades import Cascades
from lobug.memory.table import rows as store
from lobug.memory.upkeep import events
from lobug.memory.upkeep.jobs import UpkeepJobs
from lobug.memory.vectors import knn, replies
from lobug.memory.vectors.gate import VectorGate
from lobug.memory.vectors.knn import VECTOR_KINDS, VECTOR_STATUSES
from lobug.memory.vectors.query import RecentVectors
from lobug.storage.database import Database
from lobug.storage.sqlite import placeholders
from lobug.workers.queue import Job
from lobug.workers.runner import Handler, NotReady, PermanentFailure, RetryLater

log = logging.getLogger(__name__)

# Vector jobs wait (without spending attempts) while a reembed or free disk space is needed.
VECTORS_WAIT_S = 300.0
IN_FLIGHT_WAIT_S = 5.0
IN_FLIGHT_MAX_S = 120.0  # older than this without a reply: the turn's reply is not coming


class MemoryJobs:
    def __init__(
        self,
        *,
        db: Database,
        llm: LLMClient,
        embedder: Embedder,
        gate: VectorGate,
        config: Config,
        clock: Callable[[], float],
        cascades: Cascades,
        policy: WritePolicy,
        recent: RecentVectors,
    ) -> None:
        self.db = db
        self.llm = llm
        self.embedder = embedder
        self.gate = gate
        memory = config.memory
        self.batch_size = config.embedding.batch_size
        self.clock = clock
        self.cascades = cascades
        self.policy = policy
        self.recent = recent
        self.extract = ExtractJob(
            db=db,
            llm=llm,
            config=memory,
            policy=policy,
            embed=self.embed,
            vectors_on=self._vectors_for_extraction,
            clock=clock,
        )
        # Consolidation, session facts, entities (issue 12): scheduled upkeep in the queue.
        self.upkeep = UpkeepJobs(
            db=db,
            llm=llm,
            cfg=config.upkeep,
            policy=policy,
            clock=clock,
            timeout_s=memory.llm_timeout_s,
            vectors_on=self._vectors_for_extraction,
            # Seed 003's accurate NER for the nightly enrichment only: the memory model,
            # unless extraction keeps it out of memory work (`heuristic`).
            ner=ner_llm.load(
                llm,
                timeout_s=memory.llm_timeout_s,
                use_llm=memory.extraction_mode != "heuristic",
            ),
        )
        # Weekly reflection, theory-of-mind insights, the early base memory (issue 12).
        self.thinking = Thinking(
            db=db,
            llm=llm,
            memory=memory,
            config=config.reflection,
            clock=clock,
            on_base_written=cascades.on_base_written,
            query_vector=cascades.query_vector,
            policy=policy,
        )

    def handlers(self) -> dict[str, Handler]:
        """Every memory job, its runs counted with their latency in `op_events` (/v1/stats)."""
        handlers: dict[str, Handler] = {
            enqueue.EMBED_TURN: self.embed_turn,
            enqueue.EXTRACT: self.extract,
            enqueue.EMBED_MEMORY: self.embed_memory,
            enqueue.CASCADE_SHORT: partial(
                self._cascade, run=self.cascades.run_short, counter="summary_invalid_total"
            ),
            enqueue.CASCADE_LONG: partial(
                self._cascade, run=self.cascades.run_long, counter="distill_invalid_total"
            ),
            **self.upkeep.handlers(),
            **self.thinking.handlers(),
        }
        return {kind: events.timed(self.db, self.clock, kind, h) for kind, h in handlers.items()}

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The jobs' embeddings: in the LLM lane like their chat calls (on a Pi they share the
        CPU with the reply being written); the turn's own query embedding does not wait."""
        try:
            vectors = await self.llm.lane.call(lambda: self.embedder.embed(texts))
        except EmbeddingUnavailable as exc:
            self.gate.error = str(exc)
            raise RetryLater(f"embedder unavailable: {exc}") from None
        self.gate.error = None
        return vectors

    def _wait_for_vectors(self) -> None:
        if self.gate.waiting:
            raise NotReady(f"vectors are off: {self.gate.problem}", VECTORS_WAIT_S)

    def _vectors_for_extraction(self) -> bool:
        """Extraction waits while vectors are off for a reason a reembed fixes (so its facts
        get vectors); without sqlite-vec at all it runs on words alone."""
        self._wait_for_vectors()
        return self.gate.enabled

    # -- embed_turn: this turn plus the other pending ones, in one embedder call ----------------
    async def embed_turn(self, job: Job) -> None:
        """The turn's vector, and its entities (seed 003: an episode is entity-linked when
        saved, by the fast strategy, here off the hot path; vectors or not)."""
        turn_id = int(job.payload["turn_id"])
        await self.db.write(partial(enrich.link_turns_fast, now=self.clock()), [turn_id])
        self._wait_for_vectors()
        if not self.gate.enabled:
            return  # no sqlite-vec: nothing to store vectors in
        if await self.db.read(awaiting_reply, turn_id, self.clock()):
            # The query vector of this very text is being computed for the prompt right now;
            # the reply's embed job picks this turn up with it, from RecentVectors.
            raise NotReady("the turn awaits its reply", IN_FLIGHT_WAIT_S)
        todo, others = await self.db.read(turns_to_embed, turn_id, self.batch_size)
        if not todo:
            return
        known = [self.recent.get(text) for _, text in todo]
        missing = [text for (_, text), vector in zip(todo, known, strict=True) if vector is None]
        keyed = await self.db.read(replies.keys_of, todo)  # a reply: with its question too
        texts = missing + [key for _, key in keyed]
        embedded = await self.embed(texts) if texts else []
        fresh = iter(embedded[: len(missing)])
        vectors = [vector if vector is not None else next(fresh) for vector in known]
        await self.db.write(
            partial(store_turn_vectors, now=self.clock()),
            todo,
            vectors,
            others,
            keyed,
            embedded[len(missing) :],
        )

    # -- embed_memory: a vector for a memory written without one (remember, restore) ----------
    async def embed_memory(self, job: Job) -> None:
        self._wait_for_vectors()
        if not self.gate.enabled:
            return
        try:
            memory_id = int(job.payload["memory_id"])
        except (KeyError, TypeError, ValueError):
            raise PermanentFailure(f"bad embed_memory payload {job.payload!r}") from None
        row = await self.db.read(store.get_memory, memory_id)
        if row is None or row.status not in VECTOR_STATUSES or row.kind not in VECTOR_KINDS:
            return  # gone, soft-deleted, or a kind KNN does not index
        (vector,) = await self.embed([row.content])
        await self.db.write(
            partial(store_memory_vector, policy=self.policy, now=self.clock()), row, vector
        )

    # -- cascades ---------------------------------------------------------------------------------
    async def _cascade(self, job: Job, *, run: Callable[[str], Any], counter: str) -> None:
        user_id = str(job.payload.get("user_id") or "default")
        try:
            await run(user_id)
        except LLMUnavailable as exc:
            raise RetryLater(f"LLM unavailable: {exc}") from None
        except InvalidOutput as exc:
            if not exc.raw.strip():
                # No answer at all (Ollama loading or unloading the model, a runner that
                # died mid-call) is an outage, not nonsense: wait for it like one.
                raise RetryLater(f"LLM gave an empty answer: {exc}") from None
            # A model that keeps answering nonsense is given up on loudly: count, log, fail.
            await self.db.write(store.bump_counter, counter)
            log.warning(
                "%s #%d: the model's output was invalid twice; giving up (%s). "
                "`lobug jobs retry %d` runs it again.",
                job.kind,
                job.id,
                exc,
                job.id,
            )
            raise PermanentFailure(f"invalid model output after a reminder: {exc}") from exc


# -- DB side -------------------------------------------------------------------------------------
def turns_to_embed(conn: Any, turn_id: int, limit: int) -> tuple[list[tuple[int, str]], list[int]]:
    """This job's turn and those of other pending embed jobs, minus noise and done ones."""
    others: dict[int, int] = {}
    for row in conn.execute(
        "SELECT id, payload FROM jobs WHERE kind = ? AND state = 'pending' ORDER BY id LIMIT ?",
        (enqueue.EMBED_TURN, max(0, limit - 1)),
    ):
        others[row["id"]] = int(json.loads(row["payload"]).get("turn_id", 0))
    ids = list(dict.fromkeys([turn_id, *others.values()]))
    marks = placeholders(ids)
    rows = conn.execute(
        f"SELECT id, text FROM turns WHERE id IN ({marks}) AND {CONVERSATION_TURN} ORDER BY id",
        ids,
    ).fetchall()
    todo = [(r["id"], r["text"]) for r in rows if not knn.has_turn_vector(conn, r["id"])]
    return todo, list(others)


def store_turn_vectors(
    conn: Any,
    todo: list[tuple[int, str]],
    vectors: list[list[float]],
    other_jobs: list[int],
    keyed: Sequence[tuple[int, str]],
    key_vectors: Sequence[Sequence[float]],
    *,
    now: float,
) -> None:
    for (turn_id, _), vector in zip(todo, vectors, strict=True):
        if not knn.has_turn_vector(conn, turn_id):
            knn.put_turn_vector(conn, turn_id, vector)
    replies.put_keys(conn, keyed, key_vectors)
    # The other jobs' turns are done here: their entities too (this job's are linked already).
    enrich.link_turns_fast(conn, [turn_id for turn_id, _ in todo], now=now)
    for job_id in other_jobs:  # their turns are embedded now; no need to run them
        conn.execute(
            "UPDATE jobs SET state = 'done', last_error = NULL, updated_at = ?"
            " WHERE id = ? AND state = 'pending'",
            (now, job_id),
        )


def awaiting_reply(conn: Any, turn_id: int, now: float) -> bool:
    row = conn.execute("SELECT role, action, ts FROM turns WHERE id = ?", (turn_id,)).fetchone()
    return bool(
        row is not None
        and row["role"] == "user"
        and row["action"] is None
        and now - row["ts"] < IN_FLIGHT_MAX_S
    )


def store_memory_vector(
    conn: Any, memory: store.MemoryRow, vector: list[float], *, policy: WritePolicy, now: float
) -> bool:
    """Store the vector if the memory is still live with the same text; link neighbours."""
    row = store.get_memory(conn, memory.id)
    if row is None or row.status not in VECTOR_STATUSES or row.content != memory.content:
        return False
    knn.put_memory_vector(conn, row.id, vector)
    if row.kind != "fact":
        return True  # relation edges tie facts (seed 001 §2); a summary is not one
    relations.link_neighbours(
        conn,
        row.id,
        vector,
        user_id=row.user_id,
        link_min=policy.link_min,
        k=policy.link_k,
        now=now,
        actor="embedder",
        category=row.category,
    )
    return True
