"""Recognition hints: terms bounded by their token cost, one form at a time, asked for with the
caller's trust on every transcription, and a failing vocabulary costs the hint, not the turn."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from audio_fixtures import FakeTranscriber, speak_wav

from lobug.config import SpeechConfig
from lobug.speech.hints import bounded_terms, estimate_tokens, hints_for
from lobug.speech.service import SpeechService
from lobug.speech.whisper import WhisperTranscriber

NAMES = ["Marguerite", "Biscuit", "Rosalind", "Bristol", "Pirukas", "Oliver"]


def test_terms_are_kept_in_rank_order_until_the_budget_is_spent() -> None:
    budget = sum(estimate_tokens(t) for t in NAMES[:3])
    assert bounded_terms(NAMES, budget) == NAMES[:3]
    assert bounded_terms(NAMES, budget - 1) == NAMES[:2]
    assert bounded_terms(NAMES, 0) == []


def test_duplicates_and_blanks_are_dropped() -> None:
    assert bounded_terms(["Oliver", " ", "oliver", "Ros  alind", "OLIVER"], 100) == [
        "Oliver",
        "Ros alind",
    ]


def test_hotwords_or_prompt_never_both() -> None:
    hot = hints_for(NAMES[:2], "hotwords", 40)
    assert (hot.hotwords, hot.initial_prompt) == ("Marguerite, Biscuit.", None)
    prompt = hints_for(NAMES[:2], "prompt", 40)
    assert (prompt.hotwords, prompt.initial_prompt) == (None, "Marguerite, Biscuit.")
    assert hints_for(NAMES, "off", 40).empty and hints_for([], "hotwords", 40).empty


class Vocabulary:
    """The injected source, recording the trust it was asked for."""

    def __init__(self, terms: Sequence[str], fail: bool = False) -> None:
        self.terms, self.fail = list(terms), fail
        self.asked: list[str] = []

    async def __call__(self, trust: str) -> Sequence[str]:
        self.asked.append(trust)
        if self.fail:
            raise RuntimeError("database is locked")
        return self.terms


async def transcribe(
    tmp_path: Path, source: Vocabulary, trust: str, **config: Any
) -> FakeTranscriber:
    fake = FakeTranscriber()
    service = SpeechService(fake, SpeechConfig(**config), vocabulary=source)
    await service.load()
    body = speak_wav("hello there", tmp_path / "h.wav").read_bytes()
    transcript = await service.transcribe_body(body, "audio/wav", None, trust=trust)
    assert transcript.text == fake.text
    return fake


async def test_each_transcription_asks_for_the_callers_words(tmp_path: Path) -> None:
    vocabulary = Vocabulary(NAMES)
    fake = await transcribe(tmp_path, vocabulary, "inner", vocabulary_max_tokens=8)
    assert vocabulary.asked == ["inner"]
    assert fake.last_hints is not None and fake.last_hints.hotwords == "Marguerite, Biscuit."


async def test_hints_off_does_not_even_ask(tmp_path: Path) -> None:
    vocabulary = Vocabulary(NAMES)
    fake = await transcribe(tmp_path, vocabulary, "full", vocabulary="off")
    assert vocabulary.asked == [] and fake.last_hints is not None and fake.last_hints.empty


async def test_a_failing_vocabulary_still_transcribes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = await transcribe(tmp_path, Vocabulary(NAMES, fail=True), "full")
    assert fake.last_hints is not None and fake.last_hints.empty
    assert "names could not be read" in caplog.text


def test_whisper_is_given_the_hint_as_its_own_option(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    class Model:
        def transcribe(self, audio: Any, **options: Any) -> tuple[list[Any], Any]:
            seen.append(options)
            return [], SimpleNamespace(language="en")

    model = tmp_path / "m"
    model.mkdir()
    (model / "model.bin").write_bytes(b"x")
    (model / "tokenizer.json").write_text("{}")
    config = SpeechConfig(model=str(model), language="en")
    whisper = WhisperTranscriber(config, tmp_path, model_factory=lambda *a, **k: Model())
    whisper.load()
    whisper.transcribe(np.zeros(1600, np.float32), hints_for(NAMES[:1], "hotwords", 40))
    whisper.transcribe(np.zeros(1600, np.float32), hints_for(NAMES[:1], "prompt", 40))
    whisper.transcribe(np.zeros(1600, np.float32))
    assert seen[0]["hotwords"] == "Marguerite." and seen[0]["initial_prompt"] is None
    assert seen[1]["initial_prompt"] == "Marguerite." and seen[1]["hotwords"] is None
    assert "hotwords" not in seen[2] and "initial_prompt" not in seen[2]
    assert seen[2]["beam_size"] == 5  # the default that makes the most of the names
