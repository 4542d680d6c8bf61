"""scripts/bench_speech.py scores words as a listener would: numbers as words, case and
punctuation ignored, and a word error rate from a real word-level edit distance."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_speech.py"


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_speech", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_words_are_normalised_like_a_listener_hears_them() -> None:
    words = bench().words
    assert words("Set a timer for 10 minutes.") == words("set a timer for ten minutes")
    assert words("Oliver, that's the game-start at 7!") == [
        "oliver", "that's", "the", "game", "start", "at", "seven"
    ]  # fmt: skip


def test_edit_distance_counts_substitutions_insertions_and_deletions() -> None:
    edits = bench().edits
    said = "did rosalind call about the trip".split()
    assert edits(said, said) == 0
    assert edits(said, "the drowsy lint all about the trip".split()) == 4
    assert edits(said, said[:-1]) == 1 and edits(said, [*said, "today"]) == 1
    assert edits(said, []) == len(said)
