"""StateCollector: gauges read at scrape time (jobs, queue lag, memories, loop lag, Ollama)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lobug import keys
from lobug.memory.table import rows
from lobug.workers import queue

log = logging.getLogger(__name__)


class StateCollector(Collector):
    """Reads the database with `Database.read_sync`: the scrape runs on a database reader
    thread (`lobug.metrics._scrape`), so the queries never block the event loop."""

    def __init__(self, app: web.Application, clock: Callable[[], float]) -> None:
        self.app = app
        self.clock = clock

    def collect(self) -> Iterator[Metric]:
        yield from self._from_database()
        yield from self._loop_lag()
        yield from self._ollama_errors()
        yield from self._llm_outputs()
        yield from self._llm_lane()

    def _from_database(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("lobug_database_up", "1 when the scrape could read the database.")
        db = self.app.get(keys.DB)
        try:
            if db is None:
                raise RuntimeError("the database is not open yet")
            jobs, lag, memories, figures = db.read_sync(_read_state, self.clock())
        except Exception as exc:  # noqa: BLE001 - a scrape reports, never fails
            log.warning("metrics: cannot read the database: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        by_state = GaugeMetricFamily("lobug_jobs", "Background jobs by state.", labels=["state"])
        for state, n in sorted(jobs.items()):
            by_state.add_metric([state], n)
        yield by_state
        yield GaugeMetricFamily(
            "lobug_queue_lag_seconds",
            "How long the oldest ready pending job has waited to run (0 when none waits).",
            value=lag,
        )
        kinds = GaugeMetricFamily(
            "lobug_memories", "Memories by kind and status.", labels=["kind", "status"]
        )
        for kind, status, n in memories:
            kinds.add_metric([kind, status], n)
        yield kinds
        yield GaugeMetricFamily(
            "lobug_memories_created_last_day", "Memories made in the last 24 hours.",
            value=figures["created_last_day"],
        )  # fmt: skip
        for name, key, what in (
            ("lobug_memory_score_mean", "mean_score", "score, as the daily upkeep stored it"),
            ("lobug_memory_age_mean_days", "mean_age_days", "age in days"),
        ):
            if figures[key] is not None:
                yield GaugeMetricFamily(name, f"The active memories' mean {what}.", figures[key])

    def _loop_lag(self) -> Iterator[Metric]:
        monitor = self.app.get(keys.LOOP)
        if monitor is None:
            return
        yield GaugeMetricFamily(
            "lobug_event_loop_lag_max_seconds",
            "The longest the event loop was blocked since the daemon started.",
            value=monitor.max_ms / 1000,
        )
        yield GaugeMetricFamily(
            "lobug_event_loop_lag_recent_max_seconds",
            "The longest the event loop was blocked since the last /health read.",
            value=monitor.window_max_ms / 1000,
        )

    def _ollama_errors(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "lobug_ollama_errors",
            "Failed LLM calls (either llm.backend) by client (chat: the turns; memory: background"
            " jobs) and kind.",
            labels=["client", "kind"],
        )
        llm = self.app.get(keys.LLM)
        clients = {"chat": "errors", "memory": "memory_errors"}
        for name, counter in clients.items():
            for kind, n in sorted(getattr(llm, counter, {}).items()):
                family.add_metric([name, kind], n)
        yield family

    def _llm_outputs(self) -> Iterator[Metric]:
        """Parsed model answers by task (the device reply, fact extraction, the judge…): an
        owner sees which task the model gets wrong, with or without llm.schemas."""
        counts: dict[tuple[str, bool], int] = getattr(self.app.get(keys.LLM), "outputs", {})
        total = CounterMetricFamily(
            "lobug_llm_outputs",
            "Model answers a parser read, by task (valid or not; a reminder's retry counts).",
            labels=["task"],
        )
        invalid = CounterMetricFamily(
            "lobug_llm_invalid_outputs",
            "Model answers of the wrong shape, by task (each one costs a reminder or a"
            " degraded reply).",
            labels=["task"],
        )
        for task in sorted({task for task, _ in counts}):
            total.add_metric([task], counts.get((task, True), 0) + counts.get((task, False), 0))
            invalid.add_metric([task], counts.get((task, False), 0))
        yield total
        yield invalid

    def _llm_lane(self) -> Iterator[Metric]:
        llm = self.app.get(keys.LLM)
        if llm is None:
            return
        lane = llm.lane
        calls = CounterMetricFamily(
            "lobug_llm_lane_memory_calls",
            "Memory work's model calls (background) by outcome: run, or preempted by a turn.",
            labels=["outcome"],
        )
        calls.add_metric(["run"], lane.counts["background_calls"])
        calls.add_metric(["preempted"], lane.counts["preempted"])
        yield calls
        yield GaugeMetricFamily(
            "lobug_llm_lane_quiet_seconds",
            "Seconds since the last turn ended (0 while one is in flight); memory work waits"
            " for memory.quiet_s.",
            value=lane.quiet_for() if lane.enabled else 0.0,
        )


def _read_state(
    conn: Any, now: float
) -> tuple[dict[str, int], float, list[tuple[str, str, int]], dict[str, Any]]:
    jobs = queue.counts(conn)
    oldest = conn.execute(
        "SELECT MIN(run_after) FROM jobs WHERE state = 'pending' AND run_after <= ?", (now,)
    ).fetchone()[0]
    lag = max(0.0, now - float(oldest)) if oldest is not None else 0.0
    memories = [
        (str(kind), str(status), int(n))
        for kind, status, n in conn.execute(
            "SELECT kind, status, COUNT(*) FROM memories GROUP BY kind, status ORDER BY 1, 2"
        )
    ]
    return jobs, lag, memories, rows.figures(conn, now)
