"""TimedTranscriber: the speech-to-text engine, with the time and audio of each run counted."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from lobug.metrics.registry import DaemonMetrics
from lobug.speech.hints import NO_HINTS, Hints
from lobug.speech.transcriber import Transcriber, Transcript


class TimedTranscriber:
    """Wraps the app's Transcriber (the SpeechService calls it in a thread; the metrics are
    thread-safe)."""

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
