"""The heuristic extractor (seed 000 rules) and the contradiction keys of third-person facts."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lobug.memory.extract.heuristics import extract_candidates
from lobug.memory.extract.procedures import procedural_candidates
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.fact_keys import contradicts, parse_fact, subject_attribute
from lobug.memory.write.validator import validate_fact


def facts(text: str) -> list[str]:
    return [c.content for c in extract_candidates(text)]


@pytest.mark.parametrize(
    ("text", "expected", "rule"),
    [
        ("My name is Alex.", "The user's name is Alex.", "identity.name"),
        ("call me sam", "The user's name is Sam.", "identity.name"),
        ("I work at NASA.", "The user works at NASA.", "identity.work_at"),
        (
            "I'm working for a small startup",
            "The user works for a small startup.",
            "identity.work_at",
        ),
        ("I work as a nurse.", "The user works as a nurse.", "identity.work_as"),
        ("I live in Seattle.", "The user lives in Seattle.", "identity.live_in"),
        ("I'm from Ohio", "The user is from Ohio.", "identity.from"),
        ("I'm 34.", "The user is 34 years old.", "identity.age"),
        ("I'm allergic to peanuts.", "The user is allergic to peanuts.", "identity.trait"),
        (
            "I'm a huge fan of the Seahawks",
            "The user is a huge fan of the Seahawks.",
            "identity.i_am_a",
        ),
        ("I love hiking with my dog.", "The user loves hiking with their dog.", "preference.like"),
        ("I really hate cilantro!", "The user hates cilantro.", "preference.like"),
        ("I prefer tea over coffee.", "The user prefers tea over coffee.", "preference.like"),
        ("I can't stand reality TV", "The user can't stand reality TV.", "preference.like"),
        (
            "I don't like horror movies",
            "The user does not like horror movies.",
            "preference.dislike",
        ),
        ("My favourite colour is green.", "The user's favorite colour is green.", "relation.is"),
        ("My wife's name is Maria.", "The user's wife is Maria.", "relation.is"),
        (
            "My sister Jen lives in Portland.",
            "The user's sister Jen lives in Portland.",
            "relation.named",
        ),
        ("I no longer eat meat.", "The user no longer eats meat.", "state.no_longer"),
        ("I don't drink coffee anymore", "The user no longer drinks coffee.", "state.anymore"),
        ("I'm not vegetarian any more.", "The user is no longer vegetarian.", "state.anymore"),
        ("We just moved to Denver!", "The user moved to Denver.", "state.moved_to"),
        (
            "My phone number changed to 555-1234.",
            "The user's phone number changed to 555-1234.",
            "state.changed_to",
        ),
        (
            "I changed my email to alex@example.com",
            "The user's email changed to alex@example.com.",
            "state.changed_to",
        ),
        ("I now work at Google", "The user now works at Google.", "state.now"),
        ("I drive a Honda Civic.", "The user drives a Honda Civic.", "habit.does"),
        (
            "I drink oolong tea every morning.",
            "The user drinks oolong tea every morning.",
            "habit.does",
        ),
        ("I usually speak French at home", "The user speaks French at home.", "habit.does"),
        ("I'm now a manager.", "The user is now a manager.", "state.now"),
    ],
)
def test_rules(text: str, expected: str, rule: str) -> None:
    found = extract_candidates(text)
    assert [c.content for c in found] == [expected]
    assert found[0].rules[0] == rule
    assert found[0].kind == "fact" and 0.0 <= found[0].importance <= 1.0


@pytest.mark.parametrize(
    ("text", "expected", "rules"),
    [
        (
            "I'm going to visit my sister on Friday.",
            "The user is going to visit their sister on Friday.",
            ("plan.going_to", "time.weekday"),
        ),
        (
            "I have a dentist appointment tomorrow at 3pm",
            "The user has a dentist appointment tomorrow at 3pm.",
            ("plan.event", "time.relative", "time.date"),
        ),
        (
            "I'll call Jen next week.",
            "The user will call Jen next week.",
            ("plan.will", "time.relative"),
        ),
        (
            "I need to renew my passport by March 3rd",
            "The user needs to renew their passport by March 3rd.",
            ("plan.need_to", "time.date"),
        ),
        (
            "We're going to Italy in June.",
            "The user's household is going to Italy in June.",
            ("plan.going_to", "time.date"),
        ),
        (
            "I'm flying to Boston on 2026-04-02",
            "The user is flying to Boston on 2026-04-02.",
            ("plan.doing", "time.date"),
        ),
    ],
)
def test_plans_carry_their_time_rules(text: str, expected: str, rules: tuple[str, ...]) -> None:
    assert extract_candidates(text) == [Candidate(expected, "plan", 0.5, rules)]


@pytest.mark.parametrize(
    "text",
    [
        "I'm going to think about it.",
        "I'll see.",
        "I'd like a coffee.",
        "Do I like jazz?",
        "What's my name?",
        "I'm a bit tired.",
        "I love it",
        "I like him.",
        "I play it by ear.",
        "Do I drive a Honda?",
        "Turn on the lights.",
        "The weather is nice.",
        "",
        "I",
    ],
)
def test_no_fact(text: str) -> None:
    assert extract_candidates(text) == []


def test_several_facts_in_one_turn_and_no_duplicates() -> None:
    text = "My name is Alex and I live in Seattle. I love jazz, but I hate opera. I love jazz!"
    assert facts(text) == [
        "The user's name is Alex.",
        "The user lives in Seattle.",
        "The user loves jazz.",
        "The user hates opera.",
    ]


def test_lead_ins_and_abbreviations() -> None:
    assert facts("oh by the way, I'm vegetarian now") == ["The user is vegetarian."]
    assert facts("Remember that my dentist is Dr. Patel. She is great.") == [
        "The user's dentist is Dr. Patel."
    ]


def test_pronouns_for_the_assistant_become_the_assistant() -> None:
    assert facts("I like your voice") == ["The user likes the assistant's voice."]


@given(st.text(max_size=300))
def test_every_candidate_passes_the_validator(text: str) -> None:
    for candidate in extract_candidates(text):
        assert validate_fact(candidate.content).ok
        assert candidate.rules


@pytest.mark.parametrize(
    ("fact", "key", "value"),
    [
        ("The user lives in Portland.", ("user", "residence"), "Portland"),
        ("The user moved to Seattle last month for work.", ("user", "residence"), "Seattle"),
        ("The user is living in Berlin now.", ("user", "residence"), "Berlin"),
        ("The user works at NASA as an engineer.", ("user", "employer"), "NASA"),
        ("The user works for Acme Corp.", ("user", "employer"), "Acme Corp"),
        ("The user now works at Google.", ("user", "employer"), "Google"),
        ("The user has joined Google.", ("user", "employer"), "Google"),
        ("The user works as a nurse.", ("user", "occupation"), "nurse"),
        ("The user's name is Alex.", ("user", "name"), "Alex"),
        ("The user's favorite colour is green.", ("user", "favorite color"), "green"),
        ("The user's favourite color changed to blue.", ("user", "favorite color"), "blue"),
        ("The user is 34 years old.", ("user", "age"), "34"),
        ("The user is vegetarian.", ("user", "diet"), "vegetarian"),
        ("The user's wife is Maria.", ("user", "spouse"), "Maria"),
        ("The user is married to Maria.", ("user", "spouse"), "Maria"),
        ("The user's email address is a.b@example.com.", ("user", "email"), "a.b@example.com"),
        ("The user's phone number changed to 555-1234.", ("user", "phone number"), "555-1234"),
        ("The user's sister Jen lives in Portland.", ("jen", "residence"), "Portland"),
        ("Jen moved to Denver.", ("jen", "residence"), "Denver"),
        ("Maria's birthday is May 3.", ("maria", "birthday"), "May 3"),
        ("Maria's birthday is the 3rd of May.", ("maria", "birthday"), "the 3rd of May"),
        # A period at the end is read as a question's is (`when.without_period`).
        ("The user moved to Seattle in May.", ("user", "residence"), "Seattle"),
        ("Jen moved to Denver two weeks ago.", ("jen", "residence"), "Denver"),
        ("The user moved to Berlin on March 3, 2025, for work.", ("user", "residence"), "Berlin"),
        ("The user works at Acme since last spring.", ("user", "employer"), "Acme"),
    ],
)
def test_subject_attribute_and_value(fact: str, key: tuple[str, str], value: str) -> None:
    assert subject_attribute(fact) == key
    parsed = parse_fact(fact)
    assert parsed is not None and not parsed.negated and parsed.value == value


def test_the_same_key_for_old_and_new_values() -> None:
    old, new = "The user lives in Portland.", "The user moved to Seattle."
    assert subject_attribute(old) == subject_attribute(new)
    old_key, new_key = parse_fact(old), parse_fact(new)
    assert old_key is not None and new_key is not None and old_key.value != new_key.value


def test_the_same_value_dated_is_no_contradiction() -> None:
    """Said again with when it happened, a value is the same claim; another value is not."""
    assert not contradicts("The user moved to Denver in May 2024.", "The user lives in Denver.")
    assert contradicts("The user moved to Seattle last month.", "The user lives in Denver.")


def test_negated_facts_have_a_key_but_no_value() -> None:
    key = parse_fact("The user no longer lives in Portland.")
    assert key is not None and key.negated and key.value == "Portland"
    assert subject_attribute("The user is no longer vegetarian.") == ("user", "diet")


@pytest.mark.parametrize(
    "fact",
    ["The user likes jazz.", "The user is going to visit Jen on Friday.", "Nice weather.", ""],
)
def test_multi_valued_or_unknown_facts_have_no_key(fact: str) -> None:
    assert subject_attribute(fact) is None
    assert parse_fact(fact) is None


def test_extracted_facts_key_like_written_ones() -> None:
    (lives,) = extract_candidates("I live in Portland")
    (moved,) = extract_candidates("We just moved to Seattle")
    assert (
        subject_attribute(lives.content)
        == subject_attribute(moved.content)
        == ("user", "residence")
    )


@pytest.mark.parametrize(
    "text", ["I like " + " " * 3990 + "x", "First I then " + " " * 3980 + "x"], ids=["", "steps"]
)
def test_the_longest_turn_is_read_in_linear_time(text: str) -> None:
    """Issue 38: patterns that opened with a run of spaces started again at each of its
    characters (4,000 spaces: the step split alone took minutes, holding the GIL)."""
    began = time.monotonic()
    extract_candidates(text)
    procedural_candidates(text)
    assert time.monotonic() - began < 5
