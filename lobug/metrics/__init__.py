"""Prometheus /metrics: one registry per app, what the daemon counts as it goes (turns by
endpoint and outcome, speech-to-text time), and GET /metrics; the gauges read at scrape time
are `lobug.metrics.collector`'s."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)

from lobug import errors, keys
from lobug.access import OWNER_TRUST, Unauthorized
from lobug.api.middleware import Handler, error_response
from lobug.metrics.collector import StateCollector
from lobug.speech.hints import NO_HINTS, Hints
from lobug.speech.transcriber import Transcriber, Transcript

# Turns on a Pi take seconds (the LLM); a laptop answers in under one.
TURN_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
STT_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
TURN_ROUTES = frozenset({"/chat/text", "/chat/audio", "/v1/chat/completions"})


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


def setup(app: web.Application, clock: Callable[[], float]) -> DaemonMetrics:
    """The app's registry and GET /metrics (add `metrics_middleware` to the app's list)."""
    metrics = app[METRICS] = DaemonMetrics(app, clock)
    app.router.add_get("/metrics", _scrape)
    return metrics


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Counts chat turns by endpoint and outcome, and times them. Outside the error middleware,
    so refusals and errors are seen with their status."""
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else None
    if route not in TURN_ROUTES or request.method != "POST":
        return await handler(request)
    metrics = request.app[METRICS]
    started = time.perf_counter()
    outcome = "error"
    try:
        response = await handler(request)
        outcome = _outcome(request, response)
        return response
    finally:
        metrics.turns.labels(route, outcome).inc()
        metrics.turn_seconds.labels(route).observe(time.perf_counter() - started)


def _outcome(request: web.Request, response: web.StreamResponse) -> str:
    known = request.get(keys.TURN_OUTCOME)
    if response.status >= 500:
        return known or "error"  # the OpenAI door's 503 for an unreachable LLM is "degraded"
    if response.status >= 400:
        return "rejected"  # the request's own fault (or auth): nothing for the model to do
    if known is not None:
        return known
    # A device route answers its frozen JSON body: what the device was told is the outcome.
    body = response.body if isinstance(response, web.Response) else None
    if isinstance(body, bytes):
        try:
            reply = json.loads(body)
        except ValueError:
            return "ok"
        if isinstance(reply, dict) and reply.get("degraded"):
            return "degraded"
        if isinstance(reply, dict) and reply.get("action") == "IGNORE":
            return "ignored"
    return "ok"


async def _scrape(request: web.Request) -> web.Response:
    """The Prometheus text format, for the owner only: loopback or a full-trust bearer token
    (the /v1 rule, AccessControl.principal_for, then the trust). Counts of jobs, memories and
    turns are no content, but they tell anyone else how the household lives (issue 38); a
    scraper gets a full token whose agent has an empty category allowlist."""
    try:
        principal = request.app[keys.ACCESS].principal_for(
            request.headers.get("Authorization"), request.remote
        )
    except Unauthorized as exc:
        response = error_response(exc)
        response.headers["WWW-Authenticate"] = exc.challenge
        return response
    if principal.trust != OWNER_TRUST:
        return error_response(
            errors.forbidden(
                f"/metrics needs full trust (the household's activity); "
                f"{principal.describe()} has less"
            )
        )
    registry = request.app[METRICS].registry
    # The exposition reads the database (StateCollector): on a reader thread, off the loop.
    body = await request.app[keys.DB].read(lambda _conn: generate_latest(registry))
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


class TimedTranscriber:
    """The app's Transcriber with the time and audio of each run counted (the SpeechService
    calls it in a thread; the metrics are thread-safe)."""

    def __init__(self, inner: Transcriber, metrics: DaemonMetrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self.name = inner.name

    @property
    def ready(self) -> bool:
        return self.inner.ready

    @property
    def error(self) -> str | None:
        return self.inner.error

    def load(self) -> None:
        self.inner.load()

    def transcribe(self, audio: np.ndarray, hints: Hints = NO_HINTS) -> Transcript:
        started = time.perf_counter()
        try:
            transcript = self.inner.transcribe(audio, hints)
        finally:
            self.metrics.stt_seconds.observe(time.perf_counter() - started)
        self.metrics.stt_audio_seconds.inc(transcript.duration_s)
        return transcript

    def __getattr__(self, name: str) -> Any:  # anything else the engine offers
        return getattr(self.inner, name)


def timed(app: web.Application, transcriber: Transcriber) -> Transcriber:
    """The transcriber, its runs counted in the app's metrics."""
    return TimedTranscriber(transcriber, app[METRICS])
