"""A word's other forms (lemminflect): what a prefix cannot find, and what is left out."""

from __future__ import annotations

import pytest

from lobug.memory.search import fts
from lobug.memory.search.wordforms import EXCLUDED, PREFIX_CHARS, forms


def test_the_word_comes_first_then_the_forms_its_prefix_cannot_find() -> None:
    """ "win" is too short for a prefix: every other form is listed. "make"* finds "makes",
    not "made" or "making"; "paint"* finds all of its forms, so none is listed."""
    assert forms("win") == ("win", "won", "winning", "wins")
    assert forms("make") == ("make", "made", "making")
    assert forms("paint") == ("paint",)
    assert set(forms("bought")[1:]) >= {"buy", "buys", "buying"}
    assert set(forms("went")[1:]) >= {"go", "gone", "goes", "going"}


def test_nouns_find_their_plural_and_singular() -> None:
    """ "child"* already finds "children"; "children" must name "child" itself."""
    assert forms("child") == ("child",) and "child" in forms("children")
    assert "cities" in forms("city") and "feet" in forms("foot")


@pytest.mark.parametrize("word", ["fell", "rose", "lay", "wound", "bore", "sprang"])
def test_a_past_that_is_mostly_another_word_links_to_no_other_verb(word: str) -> None:
    """ "fell" is not "fall" (the season's word), "rose" not "rise", "lay" not "lie"."""
    others = set(forms(word)[1:])
    assert not others & {"fall", "falls", "rise", "lie", "wind", "bear", "spring"}


@pytest.mark.parametrize("word", ["did", "has", "was", "been", "having"])
def test_the_stop_word_verbs_have_no_forms(word: str) -> None:
    assert forms(word) == (word,)


def test_unknown_words_and_numbers_are_only_themselves() -> None:
    for word in ("caroline", "2023", "lgbtq", "café"):
        assert forms(word) == (word,)


def test_the_prefix_length_is_the_search_s() -> None:
    assert PREFIX_CHARS == fts.MIN_PREFIX_CHARS
    assert {"be", "do", "have", "fall"} <= EXCLUDED
