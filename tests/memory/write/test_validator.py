"""The §9 writing validator at each boundary: length, emptiness, lines, person, quotes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lobug.memory.write.validator import (
    ADDRESSES_ASSISTANT,
    EMPTY,
    FIRST_PERSON,
    MAX_CHARS,
    MULTILINE,
    TOO_LONG,
    UNKNOWN_KIND,
    RejectCounter,
    trim_to_sentences,
    validate_fact,
)


def fact_of_length(n: int) -> str:
    head = "The user likes "
    return head + "a" * (n - len(head) - 1) + "."


def test_280_is_accepted_281_is_rejected_without_a_boundary() -> None:
    ok = validate_fact(fact_of_length(280))
    assert ok.ok and len(ok.text) == 280
    bad = validate_fact(fact_of_length(281))
    assert not bad.ok and bad.reason == TOO_LONG


def test_a_full_stop_is_added_only_when_it_fits() -> None:
    assert validate_fact(fact_of_length(280)[:-1]).text.endswith("a.")
    no_stop = "The user likes " + "a" * (280 - 15)
    assert validate_fact(no_stop).text == no_stop


def test_long_text_is_trimmed_at_a_sentence_boundary() -> None:
    first = fact_of_length(200)
    second = " The user also likes " + "b" * 100 + "."
    result = validate_fact(first + second)
    assert result.ok and result.text == first


def test_trim_keeps_as_many_whole_sentences_as_fit() -> None:
    s = "The user likes tea. " * 20  # 20 chars each, 400 in all
    assert trim_to_sentences(s.strip(), MAX_CHARS) == ("The user likes tea. " * 14).strip()
    assert trim_to_sentences("x" * 300, MAX_CHARS) is None
    # A full stop exactly at position 280 counts; one at 281 does not.
    exact = "a" * 279 + ". tail"
    assert trim_to_sentences(exact, 280) == "a" * 279 + "."
    assert trim_to_sentences("a" * 280 + ". tail", 280) is None


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "...", "- ", '""', "\x00\x01"])
def test_empty_after_normalisation(text: str) -> None:
    result = validate_fact(text)
    assert not result.ok and result.reason == EMPTY


def test_normalises_whitespace_bullets_and_wrapping_quotes() -> None:
    assert validate_fact('  - "the user   likes\ttea"  ').text == "The user likes tea."
    assert validate_fact("1. The user likes tea!").text == "The user likes tea!"
    assert validate_fact("\n\nThe user likes tea.\n\n").ok


def test_multiline_facts_are_rejected_but_summaries_keep_lines() -> None:
    result = validate_fact("The user likes tea.\nThe user likes jazz.")
    assert not result.ok and result.reason == MULTILINE
    summary = validate_fact("Talked about tea.\nPlanned a trip.", kind="summary")
    assert summary.ok and summary.text == "Talked about tea.\nPlanned a trip."


@pytest.mark.parametrize(
    "text",
    [
        "I like tea.",
        "The user and I went hiking.",
        "My name is Alex.",
        "Tea was given to me.",
        "We moved to Denver.",
        "The user visited us.",
        "Our dog is Rex.",
        "i like tea",
        "The user said it was mine.",
        "I'm going to Paris on Friday.",
        "Tomorrow I'm off.",
    ],
)
def test_first_person_is_rejected(text: str) -> None:
    result = validate_fact(text)
    assert not result.ok and result.reason == FIRST_PERSON


@pytest.mark.parametrize(
    "text",
    ["The user said you were helpful.", "Your reminders annoy the user.", "The user thanked YOU."],
)
def test_pronouns_for_the_assistant_are_rejected(text: str) -> None:
    result = validate_fact(text)
    assert not result.ok and result.reason == ADDRESSES_ASSISTANT


@pytest.mark.parametrize(
    "text",
    [
        "The user's name is Alex.",
        "Alex works at NASA.",
        "Maria moved to the US last year.",
        'The user said "I hate Mondays".',
        "The user quoted “we shall overcome”.",
        "The user reads about World War I.",
        "The user likes fruit, i.e. apples.",
        "The user's email is myname@example.com.",
        "The user loves Mexican food.",
    ],
)
def test_third_person_is_accepted(text: str) -> None:
    result = validate_fact(text)
    assert result.ok, result


def test_person_checks_do_not_apply_to_procedural_or_summaries() -> None:
    assert validate_fact("Open your settings, then tap Wi-Fi.", kind="procedural").ok
    assert validate_fact("We talked about my garden.", kind="summary").ok


def test_kind_limits_and_unknown_kind() -> None:
    assert validate_fact("x. " * 300, kind="summary").ok  # trimmed under 2000
    assert validate_fact("x", kind="poem").reason == UNKNOWN_KIND


def test_reject_counter() -> None:
    counter = RejectCounter()
    for text in ["The user likes tea.", "I like tea.", "", "I am here.", "You rock."]:
        counter.record(validate_fact(text))
    assert counter.as_dict() == {"accepted": 1, ADDRESSES_ASSISTANT: 1, EMPTY: 1, FIRST_PERSON: 2}


@given(st.text(max_size=400), st.sampled_from(["fact", "insight", "summary", "procedural"]))
def test_results_are_well_formed(text: str, kind: str) -> None:
    result = validate_fact(text, kind)
    reasons = (EMPTY, TOO_LONG, MULTILINE, FIRST_PERSON, ADDRESSES_ASSISTANT, UNKNOWN_KIND)
    assert result.reason in (None, *reasons)
    if result.ok:
        assert result.text.strip() == result.text and result.text
        assert len(result.text) <= (MAX_CHARS if kind in ("fact", "insight") else 2000)
        if kind == "fact":
            assert "\n" not in result.text
