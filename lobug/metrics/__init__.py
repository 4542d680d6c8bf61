"""Prometheus /metrics: a per-app registry, the turn middleware and the scrape-time gauges."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from lobug.metrics.middleware import metrics_middleware
from lobug.metrics.registry import METRICS, DaemonMetrics
from lobug.metrics.routes import routes
from lobug.metrics.speech import TimedTranscriber
from lobug.speech.transcriber import Transcriber

__all__ = ["METRICS", "DaemonMetrics", "metrics_middleware", "setup", "timed"]


def setup(app: web.Application, clock: Callable[[], float]) -> DaemonMetrics:
    """The app's registry and GET /metrics (add `metrics_middleware` to the app's list)."""
    metrics = app[METRICS] = DaemonMetrics(app, clock)
    app.add_routes(routes)
    return metrics


def timed(app: web.Application, transcriber: Transcriber) -> Transcriber:
    """The transcriber, its runs counted in the app's metrics."""
    return TimedTranscriber(transcriber, app[METRICS])
