"""Time expressions in questions ("last spring", "in May 2025", "two weeks ago") resolved
against the clock, and the search preferring what was said in that period."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from memory_kit import MemoryEnv
from tz_kit import AUCKLAND, machine_zone, utc

from lobug.memory.query import QueryRequest
from lobug.memory.search.when import asks_when, period, says_when

NOW = datetime(2026, 3, 15, 12, tzinfo=UTC).timestamp()  # a Sunday in March


def days(text: str, now: float = NOW) -> tuple[date, date] | None:
    found = period(text, now, UTC)
    if found is None:
        return None
    return tuple(datetime.fromtimestamp(t, UTC).date() for t in found)  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did I do last spring?", (date(2025, 3, 1), date(2025, 6, 1))),
        ("what happened this spring", (date(2026, 3, 1), date(2026, 3, 16))),
        ("Where did we go in the summer of 2025?", (date(2025, 6, 1), date(2025, 9, 1))),
        ("last winter", (date(2025, 12, 1), date(2026, 3, 1))),
        ("What happened in May 2025?", (date(2025, 5, 1), date(2025, 6, 1))),
        ("what did I cook in May", (date(2025, 5, 1), date(2025, 6, 1))),
        ("in March", (date(2026, 3, 1), date(2026, 3, 16))),
        ("on May 3rd", (date(2025, 5, 2), date(2025, 5, 5))),
        ("yesterday", (date(2026, 3, 14), date(2026, 3, 15))),
        ("two weeks ago", (date(2026, 2, 22), date(2026, 3, 8))),
        ("3 months ago", (date(2025, 11, 1), date(2026, 2, 1))),
        ("last month", (date(2026, 2, 1), date(2026, 3, 1))),
        ("last week", (date(2026, 3, 2), date(2026, 3, 9))),
        ("in 2025", (date(2025, 1, 1), date(2026, 1, 1))),
        ("earlier this year", (date(2026, 1, 1), date(2026, 3, 15))),
        ("since June", (date(2025, 6, 1), date(2026, 3, 16))),
        ("What did Gina find on 1 February, 2023?", (date(2023, 1, 31), date(2023, 2, 3))),
        ("the 3rd of May", (date(2025, 5, 2), date(2025, 5, 5))),
        ("on 4 June", (date(2025, 6, 3), date(2025, 6, 6))),
    ],
)
def test_periods(text: str, expected: tuple[date, date]) -> None:
    assert days(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The household's questions (issue 39), asked on Sunday 15 March 2026.
        ("What did we eat last Friday?", (date(2026, 3, 13), date(2026, 3, 14))),
        ("Did I feed Biscuit this morning?", (date(2026, 3, 15), date(2026, 3, 16))),
        ("Where did we go last weekend?", (date(2026, 3, 7), date(2026, 3, 9))),
        ("What did I do on Saturday evening?", (date(2026, 3, 14), date(2026, 3, 15))),
        ("How did I sleep the past week?", (date(2026, 3, 8), date(2026, 3, 16))),
        ("What did we cook last Christmas?", (date(2025, 12, 25), date(2025, 12, 26))),
        ("what did the kids wear on Halloween", (date(2025, 10, 31), date(2025, 11, 1))),
    ],
)
def test_the_households_days(text: str, expected: tuple[date, date]) -> None:
    assert days(text) == expected


def test_a_word_dateparser_reads_as_a_day_is_no_period() -> None:
    assert days("What did we do for dinner?") is None  # dateparser reads "we" as Wednesday


@pytest.mark.parametrize(
    "text",
    [
        "When did Nadia start pottery?",
        "This may help with the garden.",
        "I march on",
        "a day",
        "I have 2 may be",
        "we ate 3 june bugs",
    ],
)
def test_no_period(text: str) -> None:
    assert days(text) is None


async def say(mem: MemoryEnv, text: str, when: datetime) -> int:
    mem.clock.now = when.timestamp()
    user, _ = await mem.exchange(text, "Nice.")
    await mem.run()
    return int(user.id)


async def test_last_spring_prefers_what_was_said_then(mem: MemoryEnv, clock: Any) -> None:
    spring = await say(
        mem, "We went hiking in the hills with the kids.", datetime(2025, 4, 12, tzinfo=UTC)
    )
    autumn = await say(
        mem, "We went hiking by the lake with the kids.", datetime(2025, 10, 4, tzinfo=UTC)
    )
    clock.now = NOW

    async def first(question: str) -> int:
        req = QueryRequest(query=question, kinds=["episode"], top_k=5)
        return (await mem.service.query(req))[0].id

    assert await first("Where did we go hiking last spring?") == spring
    assert await first("Where did we go hiking last autumn?") == autumn
    # Without a period nothing is pushed: both hikes stay candidates.
    req = QueryRequest(query="hiking with the kids", kinds=["episode"], top_k=5)
    assert {r.id for r in await mem.service.query(req)} >= {spring, autumn}


# -- the household's calendar, not UTC's (issue 25, item 21) -----------------------------------
# 01:00 on Monday 16 March in Auckland while it is still Sunday 15 March in UTC.
NZ_NOW = utc(2026, 3, 15, 12)
NZ_YESTERDAY = (utc(2026, 3, 14, 11), utc(2026, 3, 15, 11))  # Sunday 15 March, Auckland


def test_calendar_words_follow_the_given_zone() -> None:
    zone = ZoneInfo(AUCKLAND)
    assert period("what did we eat yesterday", NZ_NOW, zone) == NZ_YESTERDAY
    assert period("today", NZ_NOW, zone) == (utc(2026, 3, 15, 11), utc(2026, 3, 16, 11))
    # Last month by Auckland's calendar: February, from its midnight to its midnight.
    assert period("last month", NZ_NOW, zone) == (utc(2026, 1, 31, 11), utc(2026, 2, 28, 11))


def test_calendar_words_follow_the_machines_zone() -> None:
    with machine_zone(AUCKLAND):
        assert period("what did we eat yesterday", NZ_NOW) == NZ_YESTERDAY
        # A week across the end of daylight saving (5 April 2026, 03:00 NZDT -> 02:00 NZST)
        # runs from NZDT's midnight (11:00 UTC) to NZST's (12:00 UTC): 7 days and an hour.
        assert period("last week", utc(2026, 4, 8)) == (utc(2026, 3, 29, 11), utc(2026, 4, 5, 12))
    with machine_zone("UTC"):
        assert period("yesterday", NZ_NOW) == (utc(2026, 3, 14), utc(2026, 3, 15))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A calendar date is a firmer anchor than "recently" or "last week" beside it.
        ("What did Maria start recently, as said on 3 June, 2025?",
         (date(2025, 6, 2), date(2025, 6, 5))),
        ("What cake did Joanna make recently in May 2025?", (date(2025, 5, 1), date(2025, 6, 1))),
    ],
)  # fmt: skip
def test_a_calendar_date_outranks_relative_words(text: str, expected: tuple[date, date]) -> None:
    assert days(text) == expected


@pytest.mark.parametrize("text", ["What did I read recently?", "What have I been cooking lately?"])
def test_recently_names_no_period(text: str) -> None:
    """The latest time it came up, however long ago: the recency prior's to prefer, no window."""
    assert period(text, NOW) is None


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When did Melanie go to the museum?", True),
        ("What year did Nate get his turtles?", True),
        ("How long has Nate had his turtles?", True),
        ("What did Melanie paint?", False),
    ],
)
def test_asks_when(question: str, asks: bool) -> None:
    assert asks_when(question) is asks


@pytest.mark.parametrize(
    ("turn", "says"),
    [
        ("Yesterday I took the kids to the museum.", True),
        ("I won a tournament last Saturday!", True),
        ("I've had them for 3 years now.", True),
        ("I met my teammates on the 15th after my trip.", True),
        ("We moved here in May.", True),
        ("It may rain, this is fine.", False),
        ("They were stoked for the dinosaur exhibit!", False),
    ],
)
def test_says_when(turn: str, says: bool) -> None:
    assert says_when(turn) is says
