"""Daily consolidation (seed 001 §4; docs/seeds.md, rows 130-138): near-duplicate facts that
slipped past the write-time checks are found (upkeep/pairs.py), judged and merged or retired.

A pair the write-time heuristic judge already calls `same` is merged without asking; the others
go to the LLM judge of "newer wins" (write/judge.py), `PAIRS_PER_PROMPT` a call, at most
`PAIRS_PER_DAY` per user a day, each call from the daily upkeep budget. The labels apply as at
write time, so two facts that missed each other when written (vectors off, an import) do not
both stay current. Nonsense twice falls back to the heuristic labels for its batch; an empty
answer or an outage is RetryLater, after the batches already judged were committed and
fingerprinted.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from lobug.llm.ask import InvalidOutput
from lobug.llm.client import LLMClient, LLMUnavailable
from lobug.memory.settings import WritePolicy
from lobug.memory.table import memory_events
from lobug.memory.table.rows import bump_counter
from lobug.memory.upkeep import events, pairs
from lobug.memory.upkeep.budget import LlmBudget
from lobug.memory.upkeep.merge import merge_pair, retire_older
from lobug.memory.upkeep.pairs import Pair
from lobug.memory.write import judge
from lobug.memory.write.candidate import Candidate
from lobug.storage.database import Database
from lobug.workers.runner import RetryLater

log = logging.getLogger(__name__)

MERGED = "consolidate_merge"
SUPERSEDED = "consolidate_supersede"
PAIRS_PER_PROMPT = 8  # pairs judged per LLM call (5-10)
PAIRS_PER_DAY = 50  # pairs per user per day sent to the model


class Consolidator:
    def __init__(
        self,
        *,
        db: Database,
        llm: LLMClient,
        policy: WritePolicy,
        budget: LlmBudget,
        clock: Callable[[], float],
        timeout_s: float,
    ) -> None:
        self.db = db
        self.llm = llm
        self.policy = policy
        self.budget = budget
        self.clock = clock
        self.timeout_s = timeout_s

    async def run(
        self, user_id: str, *, vectors: bool, only: Sequence[int] | None = None
    ) -> dict[str, int]:
        """One pass for `user_id`; `only`: the pool is these facts (a session's), not today's.
        Returns what it did: pool, pairs, merged, llm_pairs, llm_calls, invalid."""
        now = self.clock()
        await self.db.write(pairs.forget_judged, now - pairs.FINGERPRINT_DAYS * events.DAY_S)
        found, pool_size = await self.db.read(self._pairs, user_id, now, vectors, only)
        report = Counter(pool=pool_size, pairs=len(found))
        sure: list[Pair] = []
        unsure: list[Pair] = []
        for pair in found:
            (sure if self._heuristic(pair) == judge.SAME else unsure).append(pair)
        report.update(await self._apply([(p, judge.SAME, judge.HEURISTIC) for p in sure]))
        checked = await self.db.read(pairs.judged_by_llm_since, user_id, events.day_start(now))
        todo = unsure[: max(0, PAIRS_PER_DAY - checked)]
        for start in range(0, len(todo), PAIRS_PER_PROMPT):
            batch = todo[start : start + PAIRS_PER_PROMPT]
            await self.budget.take("consolidation", user_id)
            judged = await self._judge(batch, report)
            report.update(await self._apply(judged))
            report["llm_pairs"] += len(batch)
        log.info("consolidation for %s: %s", user_id, dict(report))
        return dict(report)

    def _pairs(
        self, conn: Any, user_id: str, now: float, vectors: bool, only: Sequence[int] | None
    ) -> tuple[list[Pair], int]:
        if only is None:
            facts = pairs.pool(conn, user_id, now=now)
        else:
            facts = pairs.rows(conn, only)
        return pairs.candidate_pairs(conn, facts, now=now, vectors=vectors), len(facts)

    async def _judge(self, batch: list[Pair], report: Counter[str]) -> list[tuple[Pair, str, str]]:
        """The batch's labels from one LLM call (the heuristic ones if it answers nonsense)."""
        cands = [
            Candidate(p.newer.content, p.newer.category, p.newer.importance, ()) for p in batch
        ]
        offers = [[(p.older, 1.0 - p.similarity)] for p in batch]
        started = time.perf_counter()
        try:
            answer = await judge.ask_llm(self.llm, cands, offers, timeout_s=self.timeout_s)
        except LLMUnavailable as exc:
            await self.budget.record(1, started, ok=False)
            raise RetryLater(f"LLM unavailable: {exc}") from None
        except InvalidOutput as exc:
            if not exc.raw.strip():
                await self.budget.record(1, started, ok=False)
                raise RetryLater(f"LLM unavailable: empty answer: {exc}") from None
            await self.budget.record(2, started)
            await self.db.write(bump_counter, "consolidate_invalid_total")
            log.warning(
                "consolidation: the model's answer was invalid twice (%s);"
                " judging the batch by heuristics",
                exc,
            )
            report["invalid"] += 1
            return [(p, self._heuristic(p), judge.HEURISTIC) for p in batch]
        await self.budget.record(1, started)
        report["llm_calls"] += 1
        judged = []
        for index, pair in enumerate(batch):
            label = answer.labels.get((index, pair.older.id))
            if label is None:
                judged.append((pair, self._heuristic(pair), judge.HEURISTIC))
            else:
                judged.append((pair, label, judge.LLM))
        return judged

    def _heuristic(self, pair: Pair) -> str:
        label, _ = judge.heuristic_label(
            pair.newer.content,
            pair.older.content,
            distance=1.0 - pair.similarity,
            policy=self.policy,
        )
        return label

    async def _apply(self, judged: list[tuple[Pair, str, str]]) -> Counter[str]:
        if not judged:
            return Counter()
        done: Counter[str] = await self.db.write(partial(self._apply_in, now=self.clock()), judged)
        return done

    def _apply_in(
        self, conn: Any, judged: list[tuple[Pair, str, str]], *, now: float
    ) -> Counter[str]:
        """Apply each label (seed 001 §4): `same` merges the two, `update` and `contradiction`
        retire the older for the newer ("newer wins"); returns how many pairs changed."""
        merged = retired = 0
        for pair, label, by in judged:
            meta = {"judge": by, "similarity": pair.similarity}
            if label == judge.SAME:
                kept = merge_pair(
                    conn, pair.older, pair.newer, now=now, strength=self.policy.strength, meta=meta
                )
                merged += kept is not None
                _event(conn, "merge", pair, kept, now=now)
            elif label in (judge.UPDATE, judge.CONTRADICTION):
                meta["reason"] = label
                done = retire_older(conn, pair.older, pair.newer, meta=meta, now=now)
                retired += done
                _event(conn, "supersede", pair, pair.older.id if done else None, now=now)
            pairs.remember_judged(conn, pair, label, by, now=now)
        if merged:
            events.record(conn, MERGED, now=now, n=merged)
        if retired:
            events.record(conn, SUPERSEDED, now=now, n=retired)
        return Counter(merged=merged, superseded=retired)


def _event(conn: Any, op: str, pair: Pair, memory_id: int | None, *, now: float) -> None:
    """The pair's per-event row (seed 001 §14, node `worker`): the memory kept by a merge or
    retired by a supersede; `skipped` when the facts changed since they were judged."""
    memory_events.emit(
        conn,
        memory_events.WORKER,
        op,
        user_id=pair.older.user_id,
        now=now,
        memory_id=pair.older.id if memory_id is None else memory_id,
        category=pair.older.category,
        status=memory_events.SKIPPED if memory_id is None else memory_events.OK,
        sim=pair.similarity,
    )
