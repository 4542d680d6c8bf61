"""The speech-to-text interface the service depends on, and what it returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from lobug.speech.hints import NO_HINTS, Hints


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str | None
    duration_s: float


class SpeechUnavailable(Exception):
    """The transcriber cannot run; the message says why and how to fix it."""


@runtime_checkable
class Transcriber(Protocol):
    """A blocking speech-to-text engine; SpeechService runs it in a thread."""

    name: str

    @property
    def ready(self) -> bool:
        """True once load() succeeded."""
        ...

    @property
    def error(self) -> str | None:
        """Why the transcriber is not ready and how to fix it; None when ready or not yet loaded."""
        ...

    def load(self) -> None:
        """Load the model (blocking); raise SpeechUnavailable with a how-to-fix message."""
        ...

    def transcribe(self, audio: np.ndarray, hints: Hints = NO_HINTS) -> Transcript:
        """Transcribe float32 mono 16 kHz samples (blocking); `hints` name words to expect."""
        ...
