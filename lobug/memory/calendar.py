"""The calendar's words, in one place: months, weekdays, seasons and counted numbers, as the
patterns that find them, and the date a text writes ("March 3rd, 2025", "the 3rd of May").

Read by the search's time parser (`search.when`: the period a question names, the time a turn
tells, the time phrases at the end of a fact's value) and by the entities' dates
(`graph.ner`: "March 3" named in a memory), so what is written and what is asked are read with
the same words.
"""

from __future__ import annotations

import re

MONTH_NAMES = (
    "january february march april may june july august september october november december"
).split()
MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
WEEKDAYS = tuple(f"{d}day" for d in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun"))
SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "a couple of": 2,
    "two": 2,
    "three": 3,
    "a few": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}

# Regex alternatives (no groups of their own), longest first: "march" before "mar".
MONTH = "(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + ")"
SEASON = "(?:" + "|".join(SEASONS) + ")"
WEEKDAY = "(?:" + "|".join(WEEKDAYS) + ")"
NUMBER = r"(?:\d{1,3}|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + ")"
YEAR = r"(?:19|20)\d{2}"

# "March 3rd, 2025", "on May 3": the month first.
_MONTH_DAY = re.compile(
    rf"\b(?:on\s+)?({MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+({YEAR}))?\b", re.I
)
# "on 7 July, 2023", "the 3rd of May": the day before the month, as most of the world says it.
# Without a year it needs "on"/"the" before it or an ordinal ("2 may be" is not a date).
_DAY_MONTH = re.compile(
    rf"\b(?:(on|the)\s+)?(\d{{1,2}})(st|nd|rd|th)?\s+(?:of\s+)?({MONTH})\b\.?"
    rf"(?:,?\s+({YEAR}))?",
    re.I,
)
DATE_PATTERNS = (_MONTH_DAY, _DAY_MONTH)  # the spans that write a date


def month_of(word: str) -> int | None:
    """The month a word names ("March", "sept", "Dec."), or None."""
    return MONTHS.get(word.lower().rstrip("."))


def written_date(text: str) -> tuple[int, int, int | None] | None:
    """(month, day, year or None) of the first date the text writes, month first ("March 3rd,
    2025") before day first ("7 July 2023", "on the 3rd of May"); None without one."""
    m = _MONTH_DAY.search(text)
    if m is not None:
        return MONTHS[m.group(1).lower()], int(m.group(2)), _year(m.group(3))
    for m in _DAY_MONTH.finditer(text):
        lead, suffix, year, name = m.group(1), m.group(3), m.group(5), m.group(4).lower()
        if year or (lead and suffix) or ((lead or suffix) and name != "may"):
            return MONTHS[name], int(m.group(2)), _year(year)
    return None


def _year(given: str | None) -> int | None:
    return int(given) if given else None
