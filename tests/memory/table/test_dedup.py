"""Normalisation, hashes, Jaccard and intra-batch de-duplication."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lobug.memory.table.dedup import content_hash, dedupe_batch, jaccard, normalize


def test_normalize() -> None:
    assert normalize("  The User's  favourite, COLOUR is: Blue!! ") == (
        "the users favourite colour is blue"
    )
    assert normalize("snake_case\tand\nlines") == "snake case and lines"
    assert normalize("Straße ＡＢＣ") == "strasse abc"
    assert normalize("!!! ...") == ""


def test_content_hash_ignores_case_and_punctuation() -> None:
    a = content_hash("The user lives in Seattle.")
    assert a == content_hash("the user lives in seattle")
    assert a == content_hash("The  user lives in SEATTLE!")
    assert a != content_hash("The user lives in Portland.")
    assert len(a) == 64 and int(a, 16) >= 0


def test_jaccard() -> None:
    assert jaccard("The user likes tea", "the user likes tea.") == 1.0
    assert jaccard("a b c d", "a b") == pytest.approx(0.5)
    assert jaccard("a b", "c d") == 0.0
    assert jaccard("", "...") == 1.0
    assert jaccard("", "word") == 0.0


@given(st.text(max_size=50), st.text(max_size=50))
def test_jaccard_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert jaccard(a, b) == jaccard(b, a)
    assert 0.0 <= jaccard(a, b) <= 1.0


@given(st.text(max_size=80))
def test_normalize_is_idempotent(text: str) -> None:
    assert normalize(normalize(text)) == normalize(text)


@dataclass
class Cand:
    content: str
    n: int


def test_dedupe_batch_keeps_first_of_each_hash() -> None:
    batch = [Cand("The user likes tea.", 1), Cand("the user likes TEA", 2), Cand("Other.", 3)]
    assert [c.n for c in dedupe_batch(batch)] == [1, 3]
    assert dedupe_batch(["a.", "A", "b"]) == ["a.", "b"]
    assert dedupe_batch([{"content": "x"}, {"content": "X!"}]) == [{"content": "x"}]
    assert dedupe_batch([("k", "v1"), ("k2", "v1!")], text=lambda p: p[1]) == [("k", "v1")]
