"""DaemonMetrics: one Prometheus registry per app, with what the daemon counts as it goes."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram

from lobug.metrics.collector import StateCollector

# Turns on a Pi take seconds (the LLM); a laptop answers in under one.
TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
STT_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class DaemonMetrics:
    """A per-app registry (never prometheus_client's global one: a process may build many
    apps, as the tests do). Counters and histograms are updated where the daemon learns the
    outcome; gauges are read from the database at scrape time by `StateCollector`."""

    def __init__(self, app: web.Application, clock: Callable[[], float]) -> None:
        self.registry = CollectorRegistry()
        self.turns = Counter(
            "lobug_turns",
            "Chat turns by endpoint and outcome (ok, degraded, ignored, rejected, error,"
            " client_closed).",
            ["endpoint", "outcome"],
            registry=self.registry,
        )
        self.turn_seconds = Histogram(
            "lobug_turn_seconds",
            "Time from request to the last byte of the answer, by endpoint.",
            ["endpoint"],
            buckets=TURN_BUCKETS,
            registry=self.registry,
        )
        self.stt_seconds = Histogram(
            "lobug_stt_seconds",
            "Time spent transcribing one utterance (speech-to-text, in its thread).",
            buckets=STT_BUCKETS,
            registry=self.registry,
        )
        self.stt_audio_seconds = Counter(
            "lobug_stt_audio_seconds",
            "Seconds of audio transcribed.",
            registry=self.registry,
        )
        self.registry.register(StateCollector(app, clock))


METRICS: web.AppKey[DaemonMetrics] = web.AppKey("metrics")
