"""Which exchange of a batched extraction a fact came from (lobug.memory.extract.batch)."""

from __future__ import annotations

from lobug.memory.extract.batch import attribute, given
from lobug.memory.extract.llm import Extracted

EXCHANGES = [
    ("We adopted a puppy called Biscuit.", "A puppy! What breed is Biscuit?"),
    ("He's a beagle. My brother Oliver is coming on Sunday.", "Lovely, say hi to Oliver."),
    ("I don't eat meat any more.", None),
]


def fact(text: str) -> Extracted:
    return Extracted(text, "personal")


def test_each_fact_goes_to_the_exchange_the_model_numbered_it_with() -> None:
    """Issue 38: a paraphrase shares no word with what was said; the model's number places it.
    A number out of range, or none, falls back to the words (and is counted as such)."""
    vegetarian = Extracted("The user is vegetarian.", "personal", exchange=3)
    beagle = Extracted("Biscuit is a beagle.", "personal", exchange=2)
    stray = Extracted("The user adopted a puppy called Biscuit.", "personal", exchange=7)
    assert attribute([vegetarian, beagle, stray], EXCHANGES) == (
        [[stray], [beagle], [vegetarian]],
        1,
    )
    first = Extracted("The user is vegetarian.", "personal", exchange=1)
    assert attribute([first], EXCHANGES) == ([[first], [], []], 0)


def test_a_fact_without_a_number_goes_to_the_exchange_it_shares_most_words_with() -> None:
    found = [
        fact("The user adopted a puppy called Biscuit."),
        fact("The user's brother Oliver visits on Sunday."),
        fact("The user's dog is a beagle."),  # the reply before it names no beagle
        fact("The user is vegetarian."),  # no word in common: the last exchange
    ]
    assert attribute(found, EXCHANGES) == ([[found[0]], [found[1], found[2]], [found[3]]], 4)


def test_a_tie_goes_to_the_later_exchange() -> None:
    same = [("I love tea.", None), ("Actually I love tea with milk now.", None)]
    assert attribute([fact("The user loves tea.")], same) == (
        [[], [fact("The user loves tea.")]],
        1,
    )


def test_handed_facts_are_read_back_and_absent_ones_are_not() -> None:
    payload = {"facts": [{"fact": "The user loves tea.", "type": "preference"}, {"bad": 1}]}
    assert given(payload) == [Extracted("The user loves tea.", "preference")]
    assert given({"user_turn_id": 3}) is None
    assert given({"facts": []}) == []


def test_the_replys_words_break_a_tie_between_what_the_user_said() -> None:
    # "Biscuit" said in the first, "beagle" in the second: the first reply named Biscuit too.
    assert attribute([fact("Biscuit is a beagle.")], EXCHANGES) == (
        [[fact("Biscuit is a beagle.")], [], []],
        1,
    )
