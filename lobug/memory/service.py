"""MemoryService: long-term memory behind the chat turn's MemoryHooks and the /v1 API.

Inline (per turn): embed the user's words, hybrid search over facts, the cached base memory.
In the turn's transactions: enqueue the durable jobs (embed, extract, cascade checks). In the
background: jobs (JobRunner), retrieval hits and delta seen-marks flushed every
`HIT_FLUSH_S`, and the periodic GC. The API's calls (query, why, remember, forget,
restore, gc) are thin: the work is in `search`, `write` and `lifecycle`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from lobug import errors
from lobug.access import STORES, CategoryPolicy
from lobug.config import Config
from lobug.conversation import TurnRecord, session_trust
from lobug.llm.client import LLMClient
from lobug.llm.embedders import Embedder
from lobug.memory import enqueue, settings
from lobug.memory.jobs import MemoryJobs
from lobug.memory.lifecycle.gc import gc_pass
from lobug.memory.query import EPISODE, InvalidMemory, QueryRequest, QueryResult
from lobug.memory.reflect import notes
from lobug.memory.search import explain, prompt_context, runner, when, who
from lobug.memory.search.hits import HitBuffer, SeenMarks, apply_hits, apply_seen
from lobug.memory.search.scoring import WEIGHTS
from lobug.memory.summaries import base_memory
from lobug.memory.summaries.cascades import Cascades, short_cascade_due
from lobug.memory.table import memory_events
from lobug.memory.table.strength import Strength
from lobug.memory.upkeep import retention, sessions
from lobug.memory.vectors.gate import VectorGate
from lobug.memory.vectors.query import QueryVectors, RecentVectors
from lobug.memory.write import consent, consent_chat, edits
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.proposals import Proposals
from lobug.memory.write.reconcile import Origin
from lobug.memory.write.validator import checked, count_rejection
from lobug.storage.database import Database
from lobug.workers.periodic import Periodic, Slot, Task
from lobug.workers.runner import JobRunner

log = logging.getLogger(__name__)
# Constants (issue 24): retrieval hits are counted in memory and written this often (one
# transaction, not one per query); the persisted reflection schedule is looked at this often.
HIT_FLUSH_S = 5.0
INDEX_RETRY_S = 60.0  # a failed load of the in-memory vectors is tried again this often
REFLECTION_CHECK_S = 3600.0


class MemoryService:
    def __init__(
        self,
        *,
        db: Database,
        llm: LLMClient,
        embedder: Embedder,
        config: Config,
        clock: Callable[[], float] = time.time,
        categories: CategoryPolicy | None = None,
    ) -> None:
        self.db = db
        # Context modes per category (seed 001 §5): the daemon passes its AccessControl's
        # policy; the CLI's service loads the same file.
        self.categories = categories or CategoryPolicy.load(config.api.categories_file)
        self._asked = consent.AskedOnce()  # consent proposals the prompt already asked about
        self.llm = llm
        self.embedder = embedder
        self.config = config
        self.memory = config.memory
        self.clock = clock
        self.weights = WEIGHTS
        self.policy = settings.write_policy(config)
        self.hits = HitBuffer()
        self.searches = memory_events.SearchEvents()  # written with the hits
        self.seen = SeenMarks()
        self.speakers = who.Speakers()  # the names a query leaves out of what it embeds
        gc_at = Slot.parse(config.lifecycle.gc_at) if config.lifecycle.gc_at else None
        self.periodic = Periodic(
            db, clock, [Task("gc", config.lifecycle.gc_interval_s, self._gc, at=gc_at)]
        )
        self._flusher: asyncio.Task[None] | None = None
        self.indexing: asyncio.Task[int | None] | None = None  # the in-memory vectors loading
        self._index_retry_at = 0.0
        self.gate = VectorGate(
            backend=config.embedding.backend, model=embedder.name, dim=embedder.dim
        )
        self.base_cache = base_memory.BaseMemoryCache()
        recent = RecentVectors()
        self.vectors = QueryVectors(
            db, embedder, self.gate, timeout_s=config.embedding.timeout_s, recent=recent
        )
        self.cascades = Cascades(
            db,
            llm,
            config.memory,
            clock=clock,
            on_base_written=self.base_cache.invalidate,
            embedder=embedder,  # the distillation's facts: a broad KNN query (seed 004 §7.2)
            gate=self.gate,
        )
        self.jobs = MemoryJobs(
            db=db,
            llm=llm,
            embedder=embedder,
            gate=self.gate,
            config=config,
            clock=clock,
            cascades=self.cascades,
            policy=self.policy,
            recent=recent,
        )
        # The upkeep jobs' schedule (issue 12) next to the GC's: persisted, caught up once.
        self.periodic.tasks.extend(t for t in self.jobs.upkeep.tasks() if t.interval_s > 0)
        if config.reflection.enabled:
            self.periodic.tasks.append(Task("reflection", REFLECTION_CHECK_S, self._think))
        self._wake: Callable[[], None] = lambda: None
        self._warm: asyncio.Task[None] | None = None
        self._dates: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Never fails the daemon's start: without vectors, memory still works (and says so)."""
        try:
            await self.db.write(self.gate.setup)
        except Exception as exc:  # noqa: BLE001 - e.g. disk full; retried by QueryVectors.recheck
            self.gate.setup_failed(exc)
        index = self.db.vector_index
        if index is not None:
            # The daemon's in-memory vectors load in the background; search scans sqlite-vec
            # until they are ready.
            self._index_retry_at = time.monotonic() + INDEX_RETRY_S
            self.indexing = asyncio.create_task(self.db.read(index.build), name="lobug-vectors")
            self.indexing.add_done_callback(_index_failed)
        if self.config.embedding.backend == "local" and self.gate.enabled:
            # Loading the ONNX model takes a second; the first turn should not pay it.
            self._warm = asyncio.create_task(self._warm_up())
        self._flusher = asyncio.create_task(self._flush_loop(), name="lobug-memory-hits")
        # dateparser loads its language data on first use (2 s): not on the first question.
        self._dates = asyncio.create_task(asyncio.to_thread(when.warm), name="lobug-dates")

    def start_periodic(self) -> None:
        """The daemon's periodic upkeep (GC); the CLI does not run it."""
        self.periodic.start()

    def register(self, runner: JobRunner) -> None:
        for kind, handler in self.jobs.handlers().items():
            runner.register(kind, handler)
        self._wake = runner.wake

    async def close(self) -> None:
        await self.periodic.stop()
        if self.indexing is not None:
            with contextlib.suppress(Exception):
                await self.indexing
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        with contextlib.suppress(Exception):  # best effort: the DB may be gone (disk full)
            await self.flush_hits()
        if self._dates is not None:
            with contextlib.suppress(Exception):
                await self._dates
        if self._warm is not None:
            self._warm.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._warm

    async def _warm_up(self) -> None:
        try:
            await self.embedder.embed(["warm up"])
            log.info("embedder %s loaded", self.embedder.name)
        except Exception as exc:  # noqa: BLE001 - reported on /health, retried by every use
            self.gate.error = str(exc)
            log.warning("embedder %s could not load: %s", self.embedder.name, exc)

    # -- MemoryHooks ------------------------------------------------------------------------------
    async def prompt_sections(
        self,
        *,
        user_id: str,
        session_id: str,
        text: str,
        stores: tuple[str, ...] = STORES,
        categories: frozenset[str] | None = None,
        window_start: float | None = None,
    ) -> prompt_context.Sections:
        """[Long-term memory], what is always known (context `all`), the delta header,
        [Relevant memories], consent proposals to confirm, split into the stable sections and
        this turn's (`prompt_context.Sections`); never raises or waits long. The chat's
        `turn_memory`: what it showed counts as used, the header and proposals as shown."""
        got = await self.turn_memory(
            user_id=user_id,
            session_id=session_id,
            text=text,
            stores=stores,
            categories=categories,
            window_start=window_start,
            record=True,
        )
        return got.sections

    async def turn_memory(
        self,
        *,
        user_id: str,
        session_id: str,
        text: str,
        stores: tuple[str, ...] = STORES,
        categories: frozenset[str] | None = None,
        window_start: float | None = None,
        k: int | None = None,
        record: bool = False,
    ) -> prompt_context.PromptMemory:
        """The prompt's memory for `text` in a session: the sections and what they show, by the
        one function the chat (`prompt_sections`, `record`: the uses and the seen marks kept)
        and GET /v1/context (without) both call, so the API shows exactly what a prompt gets.

        `stores`: what the caller's device may draw on (lobug.api.auth). The base memory, the
        delta header and the proposals are distilled from everything, the private store
        included, so only the owner's devices get them; a device of lower trust gets the
        facts of its stores, and one with none (a stranger on the LAN) no memory at all.
        `categories`: the caller's allowlist (None: every category); a caller held to some
        categories is not the owner either, and gets only the facts of those (issue 25)."""
        if not stores or categories == frozenset():
            return prompt_context.PromptMemory(prompt_context.Sections([], []))
        k = self.memory.top_k if k is None else k
        owner = set(STORES) <= set(stores) and categories is None
        generation = self.base_cache.generation
        base = self.base_cache.get(user_id) if owner else ""
        header = None
        try:
            now = self.clock()
            plan = prompt_context.context_plan(
                text,
                user_id=user_id,
                session_id=session_id,
                k=k,
                min_similarity=self.memory.min_similarity,
                weights=self.weights,
                window_start=window_start,
                now=now,
                stores=stores,
                categories=categories,
            )
            shown = self.seen.shown(user_id, session_id) if owner else None

            def read(
                conn: Any, vector: Any, words: Any
            ) -> tuple[prompt_context.TurnMemory, notes.Notes, list[tuple[int, str]]]:
                """One reader round trip after the embedding: the memories, and for the owner
                the reflection, the procedures (insights rank with the facts) and the
                proposals to confirm."""
                got = prompt_context.read_context(
                    conn, plan, vector, words, now=now, k=k,
                    policy=self.categories, want_base=base is None, shown=shown,
                )  # fmt: skip
                if not owner:
                    return got, notes.Notes(), []
                asks = consent.to_confirm(conn, user_id=user_id, session_id=session_id, now=now)
                return got, notes.read(conn, user_id=user_id, text=text), asks

            # The word lists need no vector: they run while the query is being embedded.
            words = await runner.while_embedding(self.db, plan, await self.vectors.later(text))
            got, thoughts, asks = await self.db.read(read, words.vector, await words.lists)
            if base is None:
                base = got.base or ""
                self.base_cache.put(user_id, base, generation)
            header = got.news.header if owner else None
            memories = [s.result for s in got.found if s.result.kind != EPISODE]
            if record:
                if owner:
                    # Shown now, written later with the hits: the hot path stays free of writes.
                    self.seen.mark(user_id, session_id, got.news.rev)
                # Both sections are uses: a fact always in the prompt (context `all`) is in
                # use and must not be archived as idle. A turn is no memory to strengthen.
                self.hits.add([r.id for r in memories] + [a.id for a in got.always], now)
                self.searches.searched(user_id, session_id, memories, now)
                confirm = self._asked.first_time(session_id, asks)
            else:
                confirm = self._asked.not_yet(session_id, asks)
            sections = prompt_context.sections(
                base,
                [s.text for s in got.found] + [r.text for r in got.related],
                header,
                always=[a.text for a in got.always],
                confirm=confirm,
                notes=thoughts.stable(),
                turn_notes=thoughts.for_turn(),
            )
            return prompt_context.PromptMemory(sections, got.found, got.always)
        except Exception:  # noqa: BLE001 - a retrieval failure costs memories, not the reply
            if record:
                self.searches.searched(user_id, session_id, None, self.clock())
            log.warning("memory retrieval failed; answering without it", exc_info=True)
            return prompt_context.PromptMemory(prompt_context.sections(base or "", [], header))

    def on_user_turn(self, conn: Any, turn: TurnRecord, *, now: float) -> None:
        with _guarded(conn, "user turn", turn.id):
            enqueue.embed_turn(conn, turn.id, now=now)
        # "yes, remember that" decides pending proposals (seed 001 §10), said by the owner only
        if turn.role == "user" and session_trust(conn, turn.session_id) == "full":
            with _guarded(conn, "consent in user turn", turn.id):
                consent_chat.on_user_turn(conn, turn, now=now, policy=self.policy)
        if turn.role == "user" and self.config.upkeep.session_consolidation:
            # A switch to this session ends the device's others: consolidate them (seed 003).
            with _guarded(conn, "session switch", turn.id):
                sessions.enqueue_ended(conn, turn, now=now)

    def on_exchange(
        self, conn: Any, user: TurnRecord, assistant: TurnRecord | None, *, now: float
    ) -> None:
        with _guarded(conn, "exchange", user.id):
            if assistant is not None:
                enqueue.embed_turn(conn, assistant.id, now=now)
            enqueue.extract(
                conn,
                user_id=user.user_id,
                user_turn_id=user.id,
                assistant_turn_id=assistant.id if assistant else None,
                now=now,
            )
            if short_cascade_due(conn, user.user_id):
                enqueue.per_user(
                    conn,
                    enqueue.CASCADE_SHORT,
                    user_id=user.user_id,
                    now=now,
                )

    def wake(self) -> None:
        self._wake()

    def proposals(self) -> Proposals:
        """The consent proposals service (/v1/proposals and the memory browser)."""
        return Proposals(
            self.db,
            self.categories,
            policy=self.policy,
            clock=self.clock,
            wake=self.wake,
        )

    # -- /health ---------------------------------------------------------------------------------
    async def embedding_status(self) -> dict[str, Any]:
        await self.vectors.recheck()
        return self.gate.report()

    # -- the /v1 interface -----------------------------------------------------------------------
    async def query(self, req: QueryRequest) -> list[QueryResult]:
        """Hybrid search with filters, floors and budget; hits are counted off the request
        path. Works without vectors (BM25 + entities), except under `req.threshold`: that is a
        similarity floor (seed 001 §6), so without the query's vector it is 503, not ignored.
        `req.min_score` floors the final fused score."""
        now = self.clock()

        async def embed(names: tuple[str, ...]) -> Awaitable[list[float] | None]:
            vector = await self.vectors.later(who.without_speakers(req.query, names))
            if req.threshold is not None:
                return self._query_vector_for_threshold(vector)
            return vector

        def plan(names: tuple[str, ...]) -> runner.Plan:
            return runner.Plan.at(req, self.weights, now, speakers=names)

        results = await runner.run_asked(
            self.db, self.speakers, plan, embed, user_id=req.reach.user_id, now=now
        )
        self.hits.add([r.id for r in results if r.kind != EPISODE], now)
        return results

    async def _query_vector_for_threshold(
        self, pending: Awaitable[list[float] | None]
    ) -> list[float]:
        vector = await pending
        if vector is None:
            problem = self.gate.problem or "vector search is off"
            raise errors.unavailable(
                f"'threshold' is a similarity floor and needs the query's embedding, which is "
                f"unavailable: {problem}. Retry later, or leave out 'threshold' ('min_score' "
                f"floors the final score without vectors)"
            )
        return vector

    async def why(
        self,
        memory_id: int,
        *,
        query: str | None = None,
        user_id: str = "default",
        stores: tuple[str, ...] | None = None,
        categories: tuple[str, ...] | None = None,
    ) -> dict[str, Any] | None:
        """Score terms, list ranks, rules, history; None when there is no such memory. The rank
        is among the memories of `stores` and `categories` (None: all), the caller's scope."""
        vector = await self.vectors.now(query) if query is not None else None
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
                stores=stores,
                categories=categories,
            )
        )

    async def gc(self, *, actor: str = "api") -> dict[str, int]:
        """One GC pass (scores, promotion, archive, TTL, purge, vectors owed) and the consent
        proposals past their time, in the writer."""
        now = self.clock()
        gc = partial(gc_pass, now=now, cfg=self.config.lifecycle, actor=actor)
        result = await self.db.write(gc)
        result["proposals_expired"] = await self.db.write(partial(consent.expire_due, now=now))
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
        agent_id: str | None = None,
        run_id: str | None = None,
        actor_id: str | None = None,
        expires_at: float | None = None,
    ) -> dict[str, Any]:
        """Validate, reconcile like an extracted fact, embed later; the row plus `action`
        (added | merged | superseded). Raises InvalidMemory (a ValueError) with the reason.
        agent_id, run_id, actor_id: who wrote it (seed 001 §6.1), kept on a new row;
        expires_at: kept until then (seed 002, `edits.remember`)."""
        if store not in STORES:
            raise InvalidMemory("bad_store", f"store must be one of {', '.join(STORES)}")
        if not 0.0 <= float(importance) <= 1.0:
            raise InvalidMemory("bad_importance", "importance must be between 0 and 1")
        try:
            text = checked(content, kind)
        except InvalidMemory as exc:
            await self.db.write(count_rejection, exc.reason)
            raise
        cand = Candidate(text, category, float(importance), (), kind)
        origin = Origin(
            user_id=user_id,
            session_id=session_id,
            actor=actor,
            store=store,
            pinned=pinned,
            tags=tuple(tags),
            source="user",
            agent_id=agent_id,
            run_id=run_id,
            actor_id=actor_id,
        )
        row = await self.db.write(
            partial(
                edits.remember,
                origin=origin,
                policy=self.policy,
                now=self.clock(),
                expires_at=expires_at,
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
                purge_after_days=self.config.lifecycle.purge_after_days,
            ),
            memory_id,
        )

    async def restore(self, memory_id: int, *, actor: str) -> bool:
        """Archived or soft-deleted → active; its vector is remade by a job."""
        restored = await self.db.write(
            partial(edits.restore, actor=actor, now=self.clock()),
            memory_id,
        )
        self._wake()
        return restored

    async def confirm(self, memory_id: int, *, actor: str) -> bool:
        """Protect a memory for good (confidence 1, decay_rate 0): history, delta `updated`."""
        return await self.db.write(partial(edits.confirm, actor=actor, now=self.clock()), memory_id)

    async def flush_hits(self) -> int:
        """Write the retrieval hits counted so far, the delta revisions sessions were shown
        and the context searches' event rows (one transaction); returns the memories touched."""
        pending, seen = self.hits.take(), self.seen.take()
        searches = self.searches.take()
        if not pending and not seen and not searches:
            return 0
        try:
            return await self.db.write(
                partial(_flush, now=self.clock(), strength=self.policy.strength, searches=searches),
                pending,
                seen,
            )
        except Exception:
            self.hits.put_back(pending)
            self.seen.put_back(seen)
            self.searches.put_back(searches)
            raise

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(HIT_FLUSH_S)
            self._keep_index()
            try:
                await self.flush_hits()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - kept for the next flush
                log.warning("could not write retrieval hits (%s); retrying", exc)

    def _keep_index(self) -> None:
        """Load the in-memory vectors again, in the background, when a search found the
        tables replaced (`lobug memory reembed`), a load failed, or the tables appeared since
        (`VectorIndex.refresh`); searches scan sqlite-vec meanwhile. A failed load is tried
        again after `INDEX_RETRY_S`."""
        index = self.db.vector_index
        if index is None or index.ready:
            return
        if self.indexing is not None and not self.indexing.done():
            return
        if self.indexing is not None and not self.indexing.cancelled():
            if self.indexing.exception() is not None and time.monotonic() < self._index_retry_at:
                return
        self._index_retry_at = time.monotonic() + INDEX_RETRY_S
        self.indexing = asyncio.create_task(self.db.read(index.refresh), name="lobug-vectors")
        self.indexing.add_done_callback(_index_failed)

    async def _gc(self) -> None:
        """The nightly pass: the GC, then what only grows is forgotten (`upkeep/retention.py`),
        then fresh planner statistics."""
        await self.gc(actor="scheduler")
        index = self.db.vector_index
        # The change log only has to reach the index; what it applied can go.
        applied = index.applied if index is not None and index.ready else None
        pruned = await self.db.write(
            partial(retention.prune, now=self.clock(), applied_changes=applied)
        )
        log.info("nightly retention: %s", pruned)
        await self.db.optimize()

    async def _think(self) -> None:
        """Enqueue the due reflection, insight and early-base-memory jobs (reflect.jobs)."""
        if await self.jobs.thinking.schedule():
            self._wake()


def _index_failed(task: asyncio.Task[int | None]) -> None:
    """Say when the in-memory vectors could not load (issue 25, item 20): search still works,
    scanning sqlite-vec, only slower."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.error(
            "the in-memory vector index could not load (%s: %s); vector search scans the"
            f" database instead, slower, and the load is tried again in {INDEX_RETRY_S:.0f} s",
            type(exc).__name__,
            exc,
            exc_info=exc,
        )


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


def _flush(
    conn: Any,
    pending: dict[int, tuple[int, float]],
    seen: dict[tuple[str, str], int],
    *,
    now: float,
    strength: Strength,
    searches: list[dict[str, Any]],
) -> int:
    apply_seen(conn, seen)
    memory_events.write(conn, searches)
    return apply_hits(conn, pending, now=now, strength=strength)
