"""MemoryService: long-term memory behind the chat turn's MemoryHooks and the /v1 API.

Inline (per turn): embed the user's words, hybrid search over facts, the cached base memory.
In the turn's transactions: enqueue the durable jobs (embed, extract, cascade checks). In the
background: jobs (JobRunner), retrieval hits and delta seen-marks flushed every
`memory.hit_flush_s`, and the periodic GC. The API's calls (query, why, remember,
forget, restore, gc) are thin: the work is in `search`, `explain`, `edits` and `upkeep`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from lobug.config import Config
from lobug.conversation import TurnRecord
from lobug.llm.embedders import Embedder, make_embedder
from lobug.llm.ollama_chat import OllamaChat
from lobug.memory import settings
from lobug.memory.jobs import enqueue
from lobug.memory.jobs.handlers import MemoryJobs
from lobug.memory.operations import MemoryOperations
from lobug.memory.query import InvalidMemory, QueryRequest, QueryResult
from lobug.memory.search import prompt as retrieval
from lobug.memory.search.hits import HitBuffer, SeenMarks
from lobug.memory.search.prompt import BaseMemoryCache, Hit, RecentVectors
from lobug.memory.summaries.cascades import Cascades, short_cascade_due
from lobug.memory.vectors.gate import VectorGate
from lobug.storage.database import Database
from lobug.workers.periodic import Periodic, Task
from lobug.workers.runner import JobRunner

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000

__all__ = ["InvalidMemory", "MemoryService", "QueryRequest", "QueryResult"]


class MemoryService(MemoryOperations):
    def __init__(
        self,
        *,
        db: Database,
        llm: OllamaChat,
        embedder: Embedder,
        config: Config,
        clock: Callable[[], float] = time.time,
        owns_llm: bool = False,
    ) -> None:
        self.db = db
        self.llm = llm
        self.embedder = embedder
        self.config = config
        self.memory = config.memory
        self.clock = clock
        self.owns_llm = owns_llm
        self.max_attempts = config.workers.max_attempts
        self.weights = settings.scoring_weights(config.scoring)
        self.gc_params = settings.gc_params(config.lifecycle, self.weights)
        self.policy = settings.write_policy(config)
        self.hits = HitBuffer()
        self.seen = SeenMarks()
        self.periodic = Periodic(db, clock, [Task("gc", config.lifecycle.gc_interval_s, self._gc)])
        self._flusher: asyncio.Task[None] | None = None
        self.gate = VectorGate(
            backend=config.embedding.backend, model=embedder.name, dim=embedder.dim
        )
        self.base_cache = BaseMemoryCache()
        self.recent = RecentVectors()
        self.cascades = Cascades(
            db,
            llm,
            config.memory,
            clock=clock,
            max_attempts=self.max_attempts,
            on_base_written=self.base_cache.invalidate,
        )
        self.jobs = MemoryJobs(
            db=db,
            llm=llm,
            embedder=embedder,
            gate=self.gate,
            config=config.memory,
            batch_size=config.embedding.batch_size,
            clock=clock,
            cascades=self.cascades,
            policy=self.policy,
            recent=self.recent,
        )
        self._wake: Callable[[], None] = lambda: None
        self._warm: asyncio.Task[None] | None = None
        self._query_failing = False

    @classmethod
    def create(
        cls, config: Config, *, db: Database, clock: Callable[[], float] = time.time
    ) -> MemoryService:
        """The daemon's and the CLI's wiring: its own Ollama client with the background timeout
        (a minute-long summary must not count as "Ollama down" for the chat's /health)."""
        llm = OllamaChat(dataclasses.replace(config.ollama, timeout_s=config.memory.llm_timeout_s))
        embedder = make_embedder(config.embedding, config.ollama.host)
        return cls(db=db, llm=llm, embedder=embedder, config=config, clock=clock, owns_llm=True)

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Never fails the daemon's start: without vectors, memory still works (and says so)."""
        try:
            await self.db.write(self.gate.setup)
        except Exception as exc:  # noqa: BLE001 - e.g. disk full; retried by _recheck_gate
            self.gate.setup_failed(exc)
        if self.config.embedding.backend == "local" and self.gate.enabled:
            # Loading sentence-transformers takes seconds; the first turn should not pay it.
            self._warm = asyncio.create_task(self._warm_up())
        self._flusher = asyncio.create_task(self._flush_loop(), name="lobug-memory-hits")

    def start_periodic(self) -> None:
        """The daemon's periodic upkeep (GC); the CLI does not run it."""
        self.periodic.start()

    def register(self, runner: JobRunner) -> None:
        for kind, handler in self.jobs.handlers().items():
            runner.register(kind, handler)
        self._wake = runner.wake

    async def close(self) -> None:
        await self.periodic.stop()
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        with contextlib.suppress(Exception):  # best effort: the DB may be gone (disk full)
            await self.flush_hits()
        if self._warm is not None:
            self._warm.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._warm
        if self.owns_llm:
            await self.llm.close()
        client = getattr(getattr(self.embedder, "client", None), "_client", None)
        if client is not None:  # the Ollama embedder's HTTP pool
            await client.aclose()

    async def _warm_up(self) -> None:
        try:
            await self.embedder.embed(["warm up"])
            log.info("embedder %s loaded", self.embedder.name)
        except Exception as exc:  # noqa: BLE001 - reported on /health, retried by every use
            self.gate.error = str(exc)
            log.warning("embedder %s could not load: %s", self.embedder.name, exc)

    # -- MemoryHooks ------------------------------------------------------------------------------
    async def prompt_sections(self, *, user_id: str, session_id: str, text: str) -> list[str]:
        """[Long-term memory], the delta header, [Relevant memories]; never raises or waits long."""
        base = self.base_cache.get(user_id)
        header = None
        try:
            await self._recheck_gate()
            plan = retrieval.context_plan(
                text,
                user_id=user_id,
                session_id=session_id,
                k=self.memory.top_k,
                min_similarity=self.memory.min_similarity,
                weights=self.weights,
                window=self.config.chat.working_memory_size,
            )
            now = self.clock()
            shown = self.seen.shown(user_id, session_id)
            fetched, found, news = await retrieval.context(
                self.db,
                plan,
                self._embed_query(text) if self.gate.enabled else _none(),
                want_base=base is None,
                now=now,
                shown=shown,
            )
            if base is None:
                base = fetched or ""
                self.base_cache.put(user_id, base)
            header = news.header
            # Shown now, written later with the hits: the hot path stays free of writes.
            self.seen.mark(user_id, session_id, news.rev)
            self.hits.add([r.id for r in found], now)
            return retrieval.sections(base, [r.text for r in found], header)
        except Exception:  # noqa: BLE001 - a retrieval failure costs memories, not the reply
            log.warning("memory retrieval failed; answering without it", exc_info=True)
            return retrieval.sections(base or "", [], header)

    def on_user_turn(self, conn: Any, turn: TurnRecord, *, now: float) -> None:
        with _guarded(conn, "user turn", turn.id):
            enqueue.embed_turn(conn, turn.id, now=now, max_attempts=self.max_attempts)

    def on_exchange(
        self, conn: Any, user: TurnRecord, assistant: TurnRecord | None, *, now: float
    ) -> None:
        with _guarded(conn, "exchange", user.id):
            if assistant is not None:
                enqueue.embed_turn(conn, assistant.id, now=now, max_attempts=self.max_attempts)
            enqueue.extract(
                conn,
                user_id=user.user_id,
                user_turn_id=user.id,
                assistant_turn_id=assistant.id if assistant else None,
                now=now,
                max_attempts=self.max_attempts,
            )
            if short_cascade_due(conn, user.user_id, self.memory.short_term_threshold):
                enqueue.cascade(
                    conn,
                    enqueue.CASCADE_SHORT,
                    user_id=user.user_id,
                    now=now,
                    max_attempts=self.max_attempts,
                )

    def wake(self) -> None:
        self._wake()

    # -- queries (CLI, /health) -------------------------------------------------------------------
    async def search(
        self, text: str, *, user_id: str = "default", k: int | None = None
    ) -> list[Hit]:
        """KNN search as the prompt does it, without the similarity floor (for people)."""
        await self._recheck_gate()
        if not self.gate.enabled:
            return []
        vectors = await self.jobs.embed([text[:MAX_QUERY_CHARS]])
        return await self.db.read(
            partial(
                retrieval.relevant_facts,
                user_id=user_id,
                k=k or self.memory.top_k,
                min_similarity=0.0,
            ),
            vectors[0],
        )

    async def embedding_status(self) -> dict[str, Any]:
        await self._recheck_gate()
        return self.gate.report()

    async def _recheck_gate(self) -> None:
        if not self.gate.due():
            return
        if self.gate.setup_error is None:
            await self.db.read(self.gate.recheck)
            return
        try:
            await self.db.write(self.gate.setup)
        except Exception as exc:  # noqa: BLE001 - still failing: try again later
            self.gate.setup_failed(exc)

    async def _search_vector(self, text: str) -> list[float] | None:
        await self._recheck_gate()
        return await self._embed_query(text) if self.gate.enabled else None

    async def _search_vector_later(self, text: str) -> Awaitable[list[float] | None]:
        """The query's vector as an awaitable, the gate checked now: the caller starts the
        word lists before waiting for the embedder."""
        await self._recheck_gate()
        return self._embed_query(text) if self.gate.enabled else _none()

    async def _embed_query(self, text: str) -> list[float] | None:
        try:
            vectors = await asyncio.wait_for(
                self.embedder.embed([text[:MAX_QUERY_CHARS]]), self.config.embedding.timeout_s
            )
        except Exception as exc:  # noqa: BLE001 - EmbeddingUnavailable, timeout, model errors
            self.gate.error = f"{type(exc).__name__}: {exc}"
            # Once per outage at WARNING; every turn would flood the journal.
            level = logging.DEBUG if self._query_failing else logging.WARNING
            log.log(level, "cannot embed the query (%s); no relevant memories this turn", exc)
            self._query_failing = True
            return None
        if self._query_failing:
            log.info("query embedding works again")
        self._query_failing = False
        self.gate.error = None
        if len(text) <= MAX_QUERY_CHARS:
            self.recent.put(text, vectors[0])
        return vectors[0]


async def _none() -> None:
    return None


@contextlib.contextmanager
def _guarded(conn: Any, what: str, turn_id: int) -> Any:
    """Memory bookkeeping must never cost the user their turn: on a failure, undo just it."""
    conn.execute("SAVEPOINT memory_hooks")
    try:
        yield
    except Exception:  # noqa: BLE001 - logged loudly; the turn itself still commits
        conn.execute("ROLLBACK TO memory_hooks")
        log.exception("could not enqueue memory work for %s %d", what, turn_id)
    finally:
        conn.execute("RELEASE memory_hooks")
