"""The `extract` job: facts from one exchange, by the configured mode, judged against the stored
ones and reconciled in one commit (docs/memory.md, "Jobs").

- One model call reads several exchanges in the background (issue 22, extract/batch.py): the
  others' jobs get their facts handed out in their payloads.
- Judging (write/judge.py): one batched LLM call per exchange, the heuristic judge for what it
  leaves out, and for everything in mode `heuristic` or when the LLM fails.
- Without the LLM the heuristic facts are stored at once and a `refine` job (`REFINE_AFTER_S`
  later, waiting out the outage) owes the exchange its LLM pass; its facts replace the
  heuristic ones they cover, and a repeat from the same turns is not a second mention.
- Trust (issue 25): the facts go to the store the turn's trust writes (`access.turn_store`);
  below the owner, profile fields become proposals.
- Idempotent: the facts, the job's completion and any refine job are one transaction.
- Caps (seed 001 §13): `memory.max_writes_per_turn` new rows per exchange and
  `memory.max_writes_per_day` per user and store; the least important candidates over them are
  dropped and counted (`extraction_capped_total`); repeats and merges are never capped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from lobug.access import OWNER_STORE, turn_store
from lobug.config import MemoryConfig
from lobug.conversation import TurnRecord, get_turn, session_trust
from lobug.llm.ask import InvalidOutput
from lobug.llm.client import LLMClient, LLMUnavailable
from lobug.memory import enqueue
from lobug.memory.extract import batch, candidates
from lobug.memory.extract import llm as extraction
from lobug.memory.settings import WritePolicy
from lobug.memory.table import rows as store
from lobug.memory.table.dedup import content_hash
from lobug.memory.upkeep import events
from lobug.memory.write import consent, judge
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.reconcile import ACTOR, Origin, Outcome, Resolution, apply, decide
from lobug.storage.database import Database
from lobug.storage.pool import BACKGROUND
from lobug.workers import queue
from lobug.workers.queue import Job
from lobug.workers.runner import PermanentFailure, RetryLater

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], Awaitable[list[list[float]]]]

EXTRACT_LLM, EXTRACT_HEURISTIC = "extract_llm", "extract_heuristic"  # op_events, seed 000
FOLLOW_POLL_S = 0.5  # a job taken along by a leader at work looks for its facts this often
REFINE_AFTER_S = 10.0  # the LLM pass owed after an outage; then the runner's outage backoff
DAY_S = 86400.0


class ExtractJob:
    def __init__(
        self,
        *,
        db: Database,
        llm: LLMClient,
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
        refine = bool(job.payload.get("refine"))
        user, assistant, done, trust = await self.db.read(load_exchange, user_turn_id, assistant_id)
        if user is None or (done and not refine):
            if "facts" in job.payload:
                await self.db.write(batch.clear, job.id)
            return
        target = turn_store(trust)
        if target is None:
            log.info("extract #%d (turn %d): said at trust %s, which writes no store: "
                     "nothing kept", job.id, user.id, trust)  # fmt: skip
            return
        counts: Counter[str] = Counter()
        model, llm_down = await self._model_facts(job, user, assistant, counts, refine=refine)
        fell_back = llm_down or bool(counts["extraction_invalid_total"])
        use_rules = not refine and (self.config.extraction_mode != "llm" or fell_back)
        rules: list[Candidate] = []
        if use_rules:
            started = time.perf_counter()
            rules = candidates.heuristic(user.text)
            await self._record(EXTRACT_HEURISTIC, started, ok=True)
        found, tally = candidates.validated(candidates.merge(model, rules))
        counts["validator_accepted_total"] += tally.accepted
        for reason, n in tally.rejected.items():
            counts["validator_rejected_total"] += n
            counts[f"validator_rejected.{reason}"] += n
        if tally.rejected:
            log.info("extract #%d: validator rejected %s", job.id, tally.as_dict())
        vectors = None
        if found and vectors_on:
            vectors = await self.embed([c.content for c in found])
        judged = None
        if found and not llm_down and self._llm_judges():
            judged = await self._judge(job, user, found, vectors, counts, target)
        outcomes = await self.db.write(
            partial(
                self._store,
                job=job,
                now=self.clock(),
                counts=counts,
                from_model={content_hash(c.content) for c in model},
                judged=judged,
                refine=refine,
                owed=llm_down,
                target=target,
            ),
            user,
            assistant,
            found,
            vectors,
        )
        if outcomes:
            log.info(
                "extract #%d (turn %d%s): %s",
                job.id,
                user.id,
                ", refine" if refine else "",
                ", ".join(f"{o.action} #{o.memory_id}" for o in outcomes),
            )

    def _llm_judges(self) -> bool:
        return self.config.extraction_mode != "heuristic" and self.config.judge_k > 0

    async def _model_facts(
        self,
        job: Job,
        user: TurnRecord,
        assistant: TurnRecord | None,
        counts: Counter[str],
        *,
        refine: bool,
    ) -> tuple[list[Candidate], bool]:
        """The model's facts, and whether the LLM was unreachable (the heuristic facts go in
        now and the exchange is owed an LLM pass). A refine pass waits out an outage."""
        if self.config.extraction_mode == "heuristic":
            return [], False
        handed = None if refine else batch.given(job.payload)
        if handed is not None:
            return candidates.from_llm(handed, user.text), False
        try:
            found = await self._ask(job, user, assistant, refine=refine)
        except LLMUnavailable as exc:
            if refine:
                raise RetryLater(f"LLM unavailable: {exc}") from None
            counts["extraction_llm_unavailable_total"] += 1
            log.warning(
                "extract #%d: the LLM is unreachable (%s); storing the heuristic facts now, "
                "the LLM pass follows when it is back",
                job.id,
                exc,
            )
            return [], True
        except InvalidOutput as exc:
            counts["extraction_invalid_total"] += 1
            log.warning(
                "extract #%d: the model's output was invalid twice (%s); %s",
                job.id,
                exc,
                "the heuristic facts stand for this exchange"
                if refine
                else "using the heuristic extractor for this exchange",
            )
            return [], False
        return candidates.from_llm(found, user.text), False

    async def _ask(
        self, job: Job, user: TurnRecord, assistant: TurnRecord | None, *, refine: bool
    ) -> list[extraction.Extracted]:
        """The model's facts for this exchange; in the background, read together with the
        session's other pending exchanges, whose jobs get theirs handed out (extract.batch)."""
        mine = (user.text, assistant.text if assistant else None)
        await self.llm.lane.opened()  # in the background: what the conversation left by then
        batched = not refine and BACKGROUND.get()
        others: list[batch.Exchange] = []
        if batched:
            while (taken := await self.db.write(batch.take_along, job, user)) is None:
                await asyncio.sleep(FOLLOW_POLL_S)  # taken along by a leader at work
                if (handed := await self.db.read(batch.handed, job.id)) is not None:
                    return handed
            others = taken
        order = sorted([(user.id, None), *((e.user.id, e) for e in others)], key=lambda x: x[0])
        shown = [mine if e is None else e.shown for _, e in order]
        started = time.perf_counter()
        try:
            found = await extraction.extract(self.llm, shown, timeout_s=self.config.llm_timeout_s)
        except BaseException as exc:  # failed or preempted: the others may be taken along again
            if batched:
                await self.db.write(batch.release, [job.id, *(e.job_id for e in others)])
            if isinstance(exc, LLMUnavailable | InvalidOutput):
                await self._record(EXTRACT_LLM, started, ok=False)
            raise
        await self._record(EXTRACT_LLM, started, ok=True)
        if not others:
            return found
        facts, guessed = batch.attribute(found, shown)
        if guessed:
            log.warning(
                "extract #%d: %d of %d fact(s) came without a valid exchange number; each went"
                " to the exchange whose words it shares most",
                job.id, guessed, len(found),
            )  # fmt: skip
        await self.db.write(
            batch.hand_out,
            {e.job_id: got for (_, e), got in zip(order, facts, strict=True) if e is not None},
        )
        log.info(
            "extract #%d: %d exchanges of session %s in one call, %d fact(s)",
            job.id, len(shown), user.session_id, len(found),
        )  # fmt: skip
        return next(got for (_, e), got in zip(order, facts, strict=True) if e is None)

    async def _record(self, op: str, started: float, *, ok: bool) -> None:
        """Seed 000's extraction figures: each extractor's runs, failures and latency (the
        model's: one call, however many exchanges it read), in `/v1/stats`'s operations."""
        ms = (time.perf_counter() - started) * 1000
        await self.db.write(partial(events.record, op=op, now=self.clock(), ms=ms, ok=ok))

    async def _judge(
        self,
        job: Job,
        user: TurnRecord,
        found: list[Candidate],
        vectors: list[list[float]] | None,
        counts: Counter[str],
        target: str,
    ) -> judge.Judged | None:
        """One LLM call labelling every (candidate, nearby stored fact) pair; None → the
        heuristic judge decides the whole exchange."""
        offers = await self.db.read(
            partial(judge.pools, user_id=user.user_id, store_name=target, k=self.config.judge_k),
            found,
            vectors,
        )
        if not any(offers):
            return None
        try:
            answer = await judge.ask_llm(
                self.llm, found, offers, timeout_s=self.config.llm_timeout_s
            )
        except LLMUnavailable as exc:
            counts["judge_llm_unavailable_total"] += 1
            log.info(
                "extract #%d: the LLM judge is unreachable (%s); heuristics judge", job.id, exc
            )
            return None
        except InvalidOutput as exc:
            counts["judge_invalid_total"] += 1
            log.warning(
                "extract #%d: the judge's output was invalid twice (%s); heuristics judge",
                job.id,
                exc,
            )
            return None
        counts["judge_calls_total"] += 1
        if answer.dropped:
            counts["judge_dropped_total"] += answer.dropped
            log.info(
                "extract #%d: %d judgement(s) with an unknown label or pair dropped; "
                "heuristics judge those pairs",
                job.id,
                answer.dropped,
            )
        return judge.Judged(offers, answer)

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
        judged: judge.Judged | None,
        refine: bool,
        owed: bool,
        target: str,
    ) -> list[Outcome]:
        """target: the store the turn's trust writes (`access.turn_store`); below the owner's,
        profile fields wait for the owner as proposals, whether typed or spoken."""
        if not refine and store.extracted_from(conn, user.id):
            return []  # a previous run of this job got as far as committing
        if not refine and (
            counts.get("extraction_invalid_total") or counts.get("extraction_llm_unavailable_total")
        ):
            counts["extraction_fallback_total"] += 1
        if refine:
            counts["extraction_refined_total"] += 1
        turn_ids = [user.id] + ([assistant.id] if assistant else [])

        def origin(cand: Candidate) -> Origin:
            return Origin(
                user_id=user.user_id,
                session_id=user.session_id,
                turn_ids=turn_ids,
                actor=ACTOR,
                job_id=job.id,
                store=target,
                source="llm" if content_hash(cand.content) in from_model else "heuristic",
                said=user.text,
            )

        def plan(i: int) -> Resolution:
            cand = found[i]
            verdict = None
            if judged is not None:
                verdict = judged.verdict(conn, i, cand, policy=self.policy, said=user.text)
            if refine:
                verdict = judge.refined(conn, cand, verdict, user.id)
            vector = vectors[i] if vectors else None
            return decide(
                conn, cand, vector, origin=origin(cand), policy=self.policy, verdict=verdict
            )

        # Profile fields heard by voice wait for the user's yes (seed 001 §10): consent holds
        # them as proposals (or, a benign one corroborated enough, writes it itself). Said by
        # anyone but the owner, they are proposals at best, typed or not (issue 25).
        owner = target == OWNER_STORE
        held = {
            i
            for i, cand in enumerate(found)
            if consent.intercept(
                conn,
                cand,
                vectors[i] if vectors else None,
                origin=origin(cand),
                voice=user.voice or not owner,
                auto=owner,
                cfg=self.config,
                policy=self.policy,
                now=now,
            )
        }
        turn_left = self.config.max_writes_per_turn - added_for_turn(conn, user)
        # The day the words were said, not the day they are extracted: a history import of a
        # year counts each day of it against its own budget (issue 39).
        day_left = self.config.max_writes_per_day - added_on_day_of(
            conn, user.user_id, min(now, user.ts), target
        )
        budget = max(0, min(turn_left, day_left))
        dropped: set[int] = set()
        if len(found) > budget:
            # Which candidates would write a row (each judged before any is written); over
            # the budget, the least important of them are dropped.
            adders = [i for i in range(len(found)) if i not in held and plan(i).adds_row]
            by_importance = sorted(adders, key=lambda i: -found[i].importance)
            dropped = set(by_importance[budget:])
        outcomes: list[Outcome] = []
        for i, cand in enumerate(found):
            if i in dropped or i in held:
                continue
            decided = plan(i)  # again: the earlier candidates' writes may change it
            if decided.adds_row:
                if budget <= 0:
                    dropped.add(i)
                    continue
                budget -= 1
            vector = vectors[i] if vectors else None
            outcomes.append(
                apply(conn, cand, vector, decided, origin=origin(cand), policy=self.policy, now=now)
            )
        if dropped:
            which = "day" if day_left < turn_left else "turn"
            counts["extraction_capped_total"] += len(dropped)
            counts[f"extraction_capped.{which}"] += len(dropped)
            log.info(  # no text: the journal is no place for what the user said
                "extract #%d (turn %d): %d new fact(s) over the %s cap dropped "
                "(importance %s; caps: %d per exchange, %d per day)",
                job.id,
                user.id,
                len(dropped),
                "per-day" if which == "day" else "per-exchange",
                ", ".join(f"{found[i].importance:.2f}" for i in sorted(dropped)),
                self.config.max_writes_per_turn,
                self.config.max_writes_per_day,
            )
        for name, n in sorted(counts.items()):
            if n:
                store.bump_counter(conn, name, n)
        if owed:
            # The LLM pass this exchange is owed, durable with the heuristic facts.
            queue.enqueue(
                conn,
                enqueue.EXTRACT,
                {**job.payload, "refine": True},
                now=now,
                run_after=now + REFINE_AFTER_S,
                dedupe_key=f"{enqueue.EXTRACT}:{user.id}:refine",
            )
        # Done in the same transaction as the facts: a crash now cannot make them twice.
        batch.clear(conn, job.id)
        queue.complete(conn, job.id, now=now)
        return outcomes


def added_for_turn(conn: Any, user: TurnRecord) -> int:
    """Rows the extractor added from this exchange already (a refine pass after a heuristic one)."""
    row = conn.execute(
        "SELECT COUNT(*) FROM history WHERE user_id = ? AND event = 'ADD' AND actor = ?"
        " AND json_extract(meta, '$.turns[0]') = ?",
        (user.user_id, ACTOR, user.id),
    ).fetchone()
    return int(row[0])


def added_on_day_of(conn: Any, user_id: str, said: float, store_name: str) -> int:
    """Rows the extractor added for the user to `store_name` from turns said in the rolling
    day up to `said` (the daily cap): each trust writes its own store, so each spends its own
    budget (issue 25). Counted by when their words were said, so live talk spends the last 24
    hours and an imported day of a year's history its own day."""
    row = conn.execute(
        "SELECT COUNT(DISTINCT m.id) FROM history h JOIN memories m ON m.id = h.memory_id"
        " JOIN memory_sources s ON s.memory_id = m.id JOIN turns t ON t.id = s.turn_id"
        " WHERE h.user_id = ? AND h.event = 'ADD' AND h.actor = ? AND m.store = ?"
        " AND t.ts > ? AND t.ts <= ?",
        (user_id, ACTOR, store_name, said - DAY_S, said),
    ).fetchone()
    return int(row[0])


def load_exchange(
    conn: Any, user_turn_id: int, assistant_turn_id: int | None
) -> tuple[TurnRecord | None, TurnRecord | None, bool, str]:
    """The exchange, whether it was extracted from, and the trust of the caller who said it
    (its session's: `conversation.resolve_session`)."""
    user = get_turn(conn, user_turn_id)
    assistant = batch.assistant_of(conn, assistant_turn_id)
    trust = session_trust(conn, user.session_id) if user is not None else "full"
    return user, assistant, store.extracted_from(conn, user_turn_id), trust
