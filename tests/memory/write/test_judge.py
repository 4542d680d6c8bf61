"""The "newer wins" judge: the heuristic labels, the LLM answer's defensive parser, the batched
call (one per exchange, one reminder), the prompt the fake Ollama reads back, and the stricter
bands for a fact that sets a profile field (through the extract job)."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import pytest
from fake_ollama import FakeOllamaState, judge_by, judge_pairs
from memory_kit import MemoryEnv, Script, extract_by_keyword

from lobug.llm.ask import InvalidOutput
from lobug.memory import instructions
from lobug.memory.settings import WritePolicy
from lobug.memory.table.rows import MemoryRow
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.judge import (
    Answer,
    Judgement,
    Verdict,
    ask_llm,
    has_state_change,
    heuristic_label,
    marks_change,
    parse_labels,
)

POLICY = WritePolicy()
HONDA = "The user drives a Honda."


def label(new: str, old: str, distance: float | None = None) -> str:
    return heuristic_label(new, old, distance=distance, policy=POLICY)[0]


# -- the heuristic judge ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        # near duplicates are the same fact…
        (HONDA, "The user drives a Honda!", "same"),
        (
            "The user drives a Honda to work every day.",
            "The user drives a Honda to work each day.",
            "same",
        ),
        # …unless a state-change marker says something changed, in other words
        ("The user now drives a Tesla.", HONDA, "update"),
        ("The user no longer drives a Honda.", HONDA, "update"),
        ("The user doesn't drive a Honda anymore.", HONDA, "update"),
        ("The user has a new job at a bakery.", "The user has a job at NASA.", "update"),
        # the marker without new words is the same fact again
        ("The user lives in Seattle now.", "The user lives in Seattle.", "same"),
        # a marker alone is not enough: something beyond "the user is a" must be shared
        ("The user is now a vegetarian.", "The user is a teacher.", "unrelated"),
        # fact keys: another value for the same subject and attribute
        ("The user moved to Seattle.", "The user lives in Portland.", "contradiction"),
        ("The user works at Google.", "The user works at NASA.", "contradiction"),
        ("The user no longer lives in Portland.", "The user lives in Portland.", "contradiction"),
        ("The user no longer lives in Denver.", "The user lives in Portland.", "unrelated"),
        # "New York" is a place, not a marker
        ("The user loves New York pizza.", "The user loves Chicago pizza.", "unrelated"),
        ("The user plays the cello.", HONDA, "unrelated"),
    ],
)
def test_heuristic_labels(new: str, old: str, expected: str) -> None:
    assert label(new, old) == expected


def test_the_same_predicate_with_a_marker_is_an_update() -> None:
    assert label("The user now drives a Tesla Model 3.", "The user drives a Honda Civic.") == (
        "update"
    )
    assert label("The user is now learning to knit.", "The user plays chess.") == "unrelated"


def test_the_users_own_words_carry_the_marker_a_model_dropped() -> None:
    def said(new: str, old: str, words: str) -> str:
        return heuristic_label(new, old, distance=None, policy=POLICY, said=words)[0]

    green = "The user drinks green tea every morning."
    oolong = "The user drinks oolong tea every morning."
    assert label(green, oolong) == "same"  # Jaccard 0.75: near, and no marker in the fact
    assert said(green, oolong, "I switched to green tea every morning now, no more oolong.") == (
        "update"
    )
    tesla = "The user drives a Tesla."
    assert said(tesla, "The user drives a Honda.", "I now drive a Tesla") == "update"
    # A marker in another clause of the utterance is about something else.
    jazz, jazz_music = "The user loves jazz.", "The user loves jazz music."
    assert said(jazz, jazz_music, "I now work at Google and I love jazz") == "same"


def test_the_distance_band_counts_as_near() -> None:
    new, old = "The user collects stamps.", "The user collects old postcards and coins."
    assert label(new, old) == "unrelated"
    assert label(new, old, distance=POLICY.duplicate_distance - 0.01) == "same"
    assert label(new, old, distance=POLICY.duplicate_distance) == "unrelated"


@pytest.mark.parametrize(
    ("text", "marked"),
    [
        ("The user now drives a Tesla.", True),
        ("The user no longer eats meat.", True),
        ("The user does not smoke any more.", True),
        ("The user's favorite color changed to blue.", True),
        ("The user moved to Seattle.", True),
        ("The user switched to decaf.", True),
        ("The user works from home these days.", True),
        ("The user drinks tea instead.", True),
        ("The user has a new bike.", True),
        ("The user lives in New York.", False),
        ("The user knows about snow.", False),
        ("The user drives a Honda.", False),
    ],
)
def test_state_change_markers(text: str, marked: bool) -> None:
    assert has_state_change(text) is marked


def _row(memory_id: int, content: str, pinned: bool = False) -> MemoryRow:
    return MemoryRow(
        id=memory_id,
        user_id="default",
        kind="fact",
        content=content,
        category=None,
        status="active",
        importance=0.5,
        mention_count=1,
        created_at=0.0,
        updated_at=0.0,
        valid_until=None,
        supersedes=None,
        pinned=pinned,
        source_from=None,
        source_to=None,
    )


def test_verdict_picks_the_most_overlapping_same_and_every_replaced_row() -> None:
    verdict = Verdict(
        (
            Judgement(_row(1, "a"), "same", "llm", overlap=0.5),
            Judgement(_row(2, "b"), "update", "llm"),
            Judgement(_row(3, "c"), "same", "heuristic", overlap=0.9),
            Judgement(_row(4, "d"), "contradiction", "heuristic"),
            Judgement(_row(5, "e"), "unrelated", "llm"),
        )
    )
    same = verdict.same()
    assert same is not None and same.row.id == 3
    assert [j.row.id for j in verdict.replacing()] == [2, 4]
    assert Verdict().same() is None and Verdict().replacing() == []


# -- the LLM answer ------------------------------------------------------------------------------
OFFERED = {(1, 12), (1, 7), (2, 12)}
ANSWER = [
    {"new": 1, "stored": 12, "label": "update"},
    {"new": 1, "stored": 7, "label": "unrelated"},
    {"new": 2, "stored": 12, "label": "same"},
]
EXPECTED = {(1, 12): "update", (1, 7): "unrelated", (2, 12): "same"}


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps(ANSWER),
        f"```json\n{json.dumps(ANSWER)}\n```",
        f"Here you go: {json.dumps(ANSWER)} Hope that helps.",
        json.dumps({"pairs": ANSWER}),
        f"<think>hmm [maybe] {{x}}</think>{json.dumps(ANSWER)}",
        json.dumps(
            [
                {"new_fact": "N1", "old": "#12", "relation": "Update"},
                {"fact": "1", "existing": "stored 7", "verdict": " unrelated "},
                {"new": 2, "id": 12, "label": "SAME"},
            ]
        ),
    ],
)
def test_parser_accepts_what_small_models_send(raw: str) -> None:
    assert parse_labels(raw, offered=OFFERED) == Answer(EXPECTED, 0)


def test_unknown_labels_and_pairs_not_offered_are_dropped_and_counted() -> None:
    raw = json.dumps(
        [
            {"new": 1, "stored": 12, "label": "update"},
            {"new": 1, "stored": 7, "label": "maybe"},  # not a label
            {"new": 1, "stored": 99, "label": "same"},  # not offered
            {"new": 3, "stored": 12, "label": "same"},  # no such new fact
            {"new": 1, "stored": 12, "label": "same"},  # the pair again: the first one counts
            "same",
            {"new": True, "stored": 12, "label": "same"},
        ]
    )
    assert parse_labels(raw, offered=OFFERED) == Answer({(1, 12): "update"}, 6)


def test_one_new_fact_may_leave_out_its_number() -> None:
    raw = json.dumps({"stored": 7, "label": "contradiction"})
    assert parse_labels(raw, offered={(1, 7)}).labels == {(1, 7): "contradiction"}


def test_an_empty_answer_labels_nothing() -> None:
    assert parse_labels("[]", offered=OFFERED) == Answer({}, 0)
    assert parse_labels("{}", offered=OFFERED) == Answer({}, 0)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "They are all the same.",
        "[1, 2, 3]",
        '"update"',
        json.dumps([{"new": 1, "stored": 12, "label": "newer"}]),
        json.dumps([{"new": 9, "stored": 9, "label": "same"}]),
        '[{"new": 1, "stored": 12, "label": "same"',
    ],
)
def test_garbage_is_invalid(raw: str) -> None:
    with pytest.raises(InvalidOutput):
        parse_labels(raw, offered=OFFERED)


# -- the call --------------------------------------------------------------------------------------
class FakeLLM:
    """Answers from a list, recording the messages of each call."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.calls: list[Sequence[dict[str, str]]] = []
        self.outputs: list[tuple[str, bool]] = []

    async def chat(self, messages: Sequence[dict[str, str]], **_: Any) -> str:
        self.calls.append(messages)
        return self.answers.pop(0)

    def counted(self, task: str, valid: bool) -> None:  # LLMClient's count for /metrics
        self.outputs.append((task, valid))


CANDS = [
    Candidate("The user drives a Tesla.", "personal", 0.7, ()),
    Candidate("The user plays the cello.", "personal", 0.7, ()),
    Candidate("The user likes green tea.", "preference", 0.6, ()),
]
OFFERS = [
    [(_row(12, HONDA), 0.2), (_row(7, "The user drives to work."), None)],
    [],  # nothing near: not asked about
    [(_row(12, HONDA), None)],
]


async def test_one_call_labels_the_whole_exchange() -> None:
    fake = FakeLLM(json.dumps([{"new": 1, "stored": 12, "label": "update"}, ANSWER[2]]))
    answer = await ask_llm(fake, CANDS, OFFERS, timeout_s=1)  # type: ignore[arg-type]
    # The prompt numbers the candidates that have neighbours; the answer maps back to indexes.
    assert answer.labels == {(0, 12): "update", (2, 12): "same"}
    assert answer.for_candidate(0) == {12: "update"} and answer.for_candidate(1) == {}
    (messages,) = fake.calls
    assert instructions.task_of(messages) == "judge"
    assert messages[0]["content"] == instructions.MEMORY_SYSTEM  # shared with extraction: cached
    assert messages[1]["content"] == (
        f"{instructions.JUDGE_TASK}\n"
        "New fact 1: The user drives a Tesla.\n"
        f"  stored 12: {HONDA}\n"
        "  stored 7: The user drives to work.\n"
        "New fact 2: The user likes green tea.\n"
        f"  stored 12: {HONDA}"
    )
    # The fake Ollama reads the same pairs back.
    assert judge_pairs({"messages": messages}) == [
        (1, CANDS[0].content, 12, HONDA),
        (1, CANDS[0].content, 7, "The user drives to work."),
        (2, CANDS[2].content, 12, HONDA),
    ]
    scripted = judge_by(lambda new, old: "same" if "tea" in new else "unrelated")
    assert json.loads(scripted({"messages": messages}))[-1] == {
        "new": 2,
        "stored": 12,
        "label": "same",
    }


async def test_garbage_gets_one_reminder() -> None:
    fake = FakeLLM("I think they are related.", json.dumps(ANSWER[:1]))
    answer = await ask_llm(fake, CANDS, OFFERS, timeout_s=1)  # type: ignore[arg-type]
    assert answer.labels == {(0, 12): "update"}
    assert len(fake.calls) == 2 and "only the JSON array" in fake.calls[1][-1]["content"]
    twice = FakeLLM("nope", "still nope")
    with pytest.raises(InvalidOutput):
        await ask_llm(twice, CANDS, OFFERS, timeout_s=1)  # type: ignore[arg-type]


async def test_nothing_to_compare_asks_nothing() -> None:
    fake = FakeLLM()
    answer = await ask_llm(fake, CANDS, [[], [], []], timeout_s=1)  # type: ignore[arg-type]
    assert answer == Answer({}) and fake.calls == []


# -- stricter bands for a profile field, through the extract job ----------------------------------
@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user prefers to be called Al.", "The user prefers to be called Alex."),
        (
            "The user prefers short and friendly answers.",
            "The user prefers short and formal answers.",
        ),
    ],
)
async def test_a_new_value_of_a_profile_field_updates_it_instead_of_merging(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], old: str, new: str
) -> None:
    """Seed 001 §10: "stricter bands for context updates". Word overlap 0.75 is a repeat by the
    general band (the old value would be kept and reinforced); for a profile field it is a new
    value, and newer wins."""
    assert heuristic_label(new, old, distance=None, policy=POLICY) == ("update", 0.75)
    ollama[0].script = Script(extract=extract_by_keyword({"first": [old], "second": [new]}))
    await mem.exchange("first thing", "OK.")
    await mem.run()
    await mem.exchange("second thing", "OK.")
    await mem.run()
    assert mem.facts() == [new]
    (replaced,) = mem.rows("SELECT status, valid_until FROM memories WHERE content = ?", old)
    assert replaced["valid_until"] is not None


def test_the_general_band_still_merges_what_sets_no_profile_field() -> None:
    repeat = (
        "The user drives a Honda to work every day.",
        "The user drives a Honda to work each day.",
    )
    assert label(*repeat) == "same"
    assert label("The user aims to run a marathon.", "The user aims to run a half marathon.") == (
        "unrelated"  # goals hold several values: a second one is added, not merged
    )


def test_the_users_longest_words_are_split_in_linear_time() -> None:
    """Issue 38: the clause split scanned a run of spaces again from each of its characters
    (16,000: an owner may raise chat.max_text_chars)."""
    said = "I now drive a Tesla" + " " * 16_000 + "x"
    began = time.monotonic()
    assert marks_change("The user drives a Tesla.", said)
    assert time.monotonic() - began < 5
