"""Operational events (seed 001 §14): counts, failures and latencies by operation, per hour.

One row per (operation, hour) in `op_events`, upserted in the writer: the table stays small (a
year of a dozen operations is ~100k rows at most) and `/v1/stats` reads it by day. The memory
jobs are timed by `timed`; the upkeep jobs record what they did (merges, LLM calls). The
per-event rows beside them (who, which node, what, which memory, similarity) are
`store/memory_events.py`'s; `operations` shows both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from lobug.llm.lane import Preempted
from lobug.memory.search import when
from lobug.memory.table import memory_events
from lobug.memory.table.rows import counters
from lobug.storage.database import Database
from lobug.workers.queue import Job
from lobug.workers.runner import NotReady

log = logging.getLogger(__name__)

BUCKET_S = 3600.0
PREEMPTED_RETRY_S = 0.0  # claimable at once: the lane holds it until the conversation is quiet
DAY_S = 86400.0
STATS_DAYS = 7

Handler = Callable[[Job], Awaitable[None]]


def day_start(now: float) -> float:
    """The start of `now`'s day (the household's midnight, `when.day_start`): budgets and caps
    are per day."""
    return when.day_start(now).timestamp()


def record(conn: Any, op: str, *, now: float, ms: float = 0.0, ok: bool = True, n: int = 1) -> None:
    """Count `n` operations `op` (one latency `ms` for them all) in `now`'s hour."""
    conn.execute(
        "INSERT INTO op_events (op, bucket, count, failures, total_ms, max_ms)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(op, bucket) DO UPDATE SET"
        " count = count + excluded.count, failures = failures + excluded.failures,"
        " total_ms = total_ms + excluded.total_ms, max_ms = MAX(max_ms, excluded.max_ms)",
        (op, now - now % BUCKET_S, n if ok else 0, 0 if ok else n, ms, ms),
    )


def summary(conn: Any, *, now: float, days: int = STATS_DAYS) -> dict[str, Any]:
    """The last `days` days by operation: totals, failures, mean and max latency, and the
    count of each day (oldest first), for `/v1/stats`."""
    start = day_start(now) - (days - 1) * DAY_S
    rows = conn.execute(
        "SELECT op, CAST((bucket - ?) / ? AS INTEGER) AS day, SUM(count), SUM(failures),"
        " SUM(total_ms), MAX(max_ms) FROM op_events WHERE bucket >= ? GROUP BY op, day"
        " ORDER BY op, day",
        (start, DAY_S, start),
    ).fetchall()
    ops: dict[str, dict[str, Any]] = {}
    for op, day, count, failures, total_ms, max_ms in rows:
        entry = ops.setdefault(
            op, {"count": 0, "failures": 0, "total_ms": 0.0, "max_ms": 0.0, "by_day": [0] * days}
        )
        entry["count"] += count
        entry["failures"] += failures
        entry["total_ms"] += total_ms
        entry["max_ms"] = max(entry["max_ms"], max_ms)
        # min(): a week with a 25-hour day (daylight saving ends) reaches index `days`.
        entry["by_day"][min(int(day), days - 1)] += count + failures
    for entry in ops.values():
        runs = entry["count"] + entry["failures"]
        entry["mean_ms"] = round(entry.pop("total_ms") / runs, 1) if runs else 0.0
        entry["max_ms"] = round(entry["max_ms"], 1)
    return {"days": days, "since": start, "ops": ops}


def timed(db: Database, clock: Callable[[], float], op: str, handler: Handler) -> Handler:
    """`handler`, its runs counted with their latency under `op` (a failure as a failure; a
    job that is not ready yet, or whose model call a turn preempted, is not a run). Recording
    never fails the job."""

    async def note(started: float, ok: bool) -> None:
        ms = (time.perf_counter() - started) * 1000.0
        try:
            await db.write(partial(record, op=op, now=clock(), ms=ms, ok=ok))
        except Exception:  # noqa: BLE001 - a figure lost, not the job's work
            log.warning("could not record the %s event", op, exc_info=True)

    async def run(job: Job) -> None:
        started = time.perf_counter()
        try:
            await handler(job)
        except NotReady:
            raise
        except Preempted as exc:  # a turn took the model: again later, no attempt spent
            raise NotReady(str(exc), retry_in=PREEMPTED_RETRY_S) from None
        except Exception:
            await note(started, False)
            raise
        await note(started, True)

    return run


def operations(conn: Any, *, now: float, days: int = STATS_DAYS) -> dict[str, Any]:
    """`/v1/stats`'s `operations`: `summary`, the merges of every path (write time and
    consolidation, from the history), the validator's pass rate since the install and the
    per-event rows by node and operation (`memory_events.by_node`)."""
    found = summary(conn, now=now, days=days)
    found["merges"] = int(
        conn.execute(
            "SELECT COUNT(*) FROM history WHERE event = 'MERGE' AND ts >= ?", (found["since"],)
        ).fetchone()[0]
    )
    found["validator"] = validator_rate(counters(conn))
    found["events"] = memory_events.by_node(conn, found["since"], days=days)
    return found


def validator_rate(counted: dict[str, int]) -> dict[str, Any]:
    accepted = counted.get("validator_accepted_total", 0)
    rejected = counted.get("validator_rejected_total", 0)
    seen = accepted + rejected
    return {
        "accepted": accepted,
        "rejected": rejected,
        "pass_rate": round(accepted / seen, 4) if seen else None,
    }
