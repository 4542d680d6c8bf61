"""The period a question is about ("last spring", "in May", "two weeks ago"), from its words.

`period(text, now)` resolves the first time expression it recognises against `now` (the
caller's clock) in the household's time zone, and returns the half-open interval [start, end)
in epoch seconds, or None. The search uses it as one more ranked list (`runner`): the rows said
in that period, best match first, so "what did I do last spring" prefers what was said last
spring without dropping everything else.

Recognised (case-insensitive):
    today, yesterday, last night, this/last week|month|year, earlier this year
    N days|weeks|months|years ago  (N in digits or one…twelve, "a", "a couple of", "a few")
    this/last spring|summer|autumn|fall|winter, in (the) spring|…  (of 2025)
    in/last/this May, in May 2025, (on) May 3, May 3rd 2025, (on) 3 May, 2025, the 3rd of May
    in 2025, last/this year; the past week|month|year (the last 7, 30, 365 days)
    (last|this|on) Friday, this morning|afternoon|evening, (last) weekend, (last) Christmas,
    Halloween, New Year's Eve…: read by `dateparser` (`_spoken`), not by more patterns here
Seasons are the northern meteorological ones (spring = March–May, winter = December–February).
A month or season without a year is the latest one that has begun by `now`.
"Recently" and "lately" name no period: said of a memory that spans months they mean the latest
time it came up, whenever that was, which the re-score's recency prior already prefers. Read as
the last 30 days they put whatever was said in those days first: on LoCoMo conversations 1–5
hit@1 0.491 -> 0.504 without it ("What kind of soup did John make recently?": the soup was
months before the conversation's last sessions).

The household's calendar is the machine's local time zone (`TZ=` in the unit overrides it), so
"yesterday" and the daily budgets (`day_start`) turn at the household's midnight, not UTC's.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from lobug.memory.calendar import (
    DATE_PATTERNS,
    MONTH,
    MONTH_NAMES,
    MONTHS,
    NUMBER,
    NUMBERS,
    SEASON,
    SEASONS,
    WEEKDAY,
    YEAR,
    written_date,
)

Period = tuple[float, float]


_AGO = re.compile(rf"\b({NUMBER})\s+(day|week|month|year)s?\s+ago\b", re.I)
_RELATIVE = re.compile(r"\b(this|last|past|previous)\s+(week|month|year)\b", re.I)
_SEASON_RE = re.compile(
    rf"\b(?:(this|last|in|during|over)\s+(?:the\s+)?)({SEASON})(?:\s+(?:of\s+)?({YEAR}))?\b",
    re.I,
)
_MONTH_RE = re.compile(rf"\b(in|last|this|during|since)\s+({MONTH})\.?(?:\s+({YEAR}))?\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({MONTH})\.?\s+({YEAR})\b", re.I)
_YEAR_RE = re.compile(rf"\b(?:in|during)\s+({YEAR})\b", re.I)
_DAYS = {
    "today": (0, 1),
    "tonight": (0, 1),
    "yesterday": (-1, 0),
    "last night": (-1, 1),
    "the other day": (-7, 0),
}
_DAYS_RE = re.compile(r"\b(" + "|".join(_DAYS) + r")\b", re.I)
# The feasts a household dates things by, as the day dateparser reads ("last Christmas").
FEASTS = {
    "christmas eve": "24 december",
    "christmas day": "25 december",
    "christmas": "25 december",
    "new year's eve": "31 december",
    "new year's day": "1 january",
    "halloween": "31 october",
    "valentine's day": "14 february",
}
_FEAST_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(f).replace("'", "['’]") for f in FEASTS) + r")\b", re.I
)
_DAY_PARTS = r"morning|afternoon|evening"
# Whether to ask dateparser at all (it costs ~25 ms a question): a weekday, a part of the
# day, a weekend or a feast is named.
_SPOKEN = re.compile(rf"\b(?:{WEEKDAY}|weekend|{_DAY_PARTS})\b|{_FEAST_RE.pattern}", re.I)
_SPOKEN_PARSED = re.compile(
    rf"\b(?:{WEEKDAY}|{_DAY_PARTS}|{'|'.join(n for n in MONTHS if len(n) > 3)})\b", re.I
)
_EARLIER = re.compile(r"\bearlier this (year|month)\b", re.I)
# A question that asks for a time ("When did …?", "What year …", "How long …"), and a turn
# that tells one ("yesterday", "last Friday", "for 3 years", "on the 15th", "in May"): the
# answer to the first is most often a turn of the second kind (`says_when`).
_ASKS_WHEN = re.compile(
    r"\bwhen\b|\b(?:what|which)\s+(?:date|day|week|month|year|time)\b|\bhow\s+long\b",
    re.I,
)
# A question about how things stand now ("Where does Daniel live now?", "Who is her current
# employer?", "Does he still swim?"): of two statements, the later one answers it.
_ASKS_NOW = re.compile(
    r"\b(?:now|nowadays|these days|currently|current|still|any ?more|at the moment|at present)\b",
    re.I,
)
# A question about what happened ("When did Melanie sign up for pottery?", "What was the
# poster's slogan?"), not about how things stand or what was said last ("When did I last see
# the dentist?", "What did she say recently?"): its answer is as likely in March as in May.
_ASKS_PAST = re.compile(r"\b(?:did|was|were|had)\b", re.I)
_ASKS_LATEST = re.compile(r"\b(?:last|latest|lately|recent|recently)\b", re.I)
_QUESTION = re.compile(
    r"\?|^\W*(?:what|when|where|who|whom|whose|which|why|how|did|was|were|had)\b", re.I
)
_SAYS_WHEN = re.compile(
    rf"\b(?:today|tonight|yesterday|tomorrow|recently|lately|the other day|ago"
    rf"|(?:{NUMBER})\s+(?:day|week|month|year)s?"
    r"|(?:last|this|next|past|previous)\s+(?:week|weekend|month|year|night|morning|evening"
    rf"|{SEASON}|\w+day)|{WEEKDAY}|weekend"
    rf"|{YEAR}|the\s+\d{{1,2}}(?:st|nd|rd|th)|(?:in|on|since|until)\s+(?:{MONTH})"
    rf"|{'|'.join(m for m in MONTH_NAMES if m != 'may')}"  # "may" alone is the verb
    r")\b",
    re.I,
)


def day_start(now: float, zone: tzinfo | None = None) -> datetime:
    """The household's midnight that began `now`'s day, in `zone` (None: the machine's zone,
    as naive local time, which `timestamp()` reads back as local)."""
    return datetime.fromtimestamp(now, zone).replace(hour=0, minute=0, second=0, microsecond=0)


def next_day_start(now: float, zone: tzinfo | None = None) -> float:
    """When the day after `now`'s begins (23 or 25 hours away on a daylight-saving change)."""
    today = day_start(now, zone)
    return (today + timedelta(days=1)).timestamp()


def period(text: str, now: float, zone: tzinfo | None = None) -> Period | None:
    """The period the text names, resolved against `now` in `zone` (None: the machine's local
    zone); None when it names none."""
    today = day_start(now, zone)
    # A calendar date is the firmest anchor ("recently, as mentioned on 3 June, 2023"; "in
    # May 2022"), then the named days, then the relative periods.
    parsers = (_day_of_month, _month, _year, _days, _spoken, _ago, _earlier, _relative, _season)
    for parse in parsers:
        found = parse(text, today)
        if found is not None:
            start, end = found
            return start.timestamp(), min(end, today + timedelta(days=1)).timestamp()
    return None


# The phrases that name a period, as `period` reads them.
_PHRASES = (_AGO, _RELATIVE, _SEASON_RE, *DATE_PATTERNS, _MONTH_RE, _MONTH_YEAR, _YEAR_RE,
            _DAYS_RE, _EARLIER)  # fmt: skip
# What is left of "on the 3rd of May" without its date: not a value of its own.
_LEAD_WORDS = frozenset("on in at the of since during by from until to for".split())


def without_period(text: str) -> str:
    """`text` without the phrase naming a period at its end ("Seattle last month", "Denver in
    May 2024", "Acme two weeks ago" → "Seattle", "Denver", "Acme"), as a question's period is
    read: what is written is dated by the same words as what is asked (`write.fact_keys`).
    Kept whole when the period is all it says ("May 3", "on the 3rd of May"), and a weekday
    or a part of the day stays: "yoga on Friday mornings" is what is done."""
    end = len(text.rstrip(" ,."))
    starts = [m.start() for p in _PHRASES for m in p.finditer(text) if m.end() == end]
    if not starts:
        return text
    rest = text[: min(starts)].rstrip(" ,")
    return rest if set(re.findall(r"\w+", rest.casefold())) - _LEAD_WORDS else text


def period_words(text: str) -> set[str]:
    """The words of every phrase in `text` that names a period ("in March 2025", "two weeks
    ago", "last Christmas"), case-folded: for a question that names one, they say when, not
    what, so the `when` list's match leaves them out (`context.QuestionWords.match`): a month
    said of something else ("we march with the band") would be the question's rarest word,
    asked for in every group."""
    return {
        word
        for pattern in (*_PHRASES, _SPOKEN)
        for found in pattern.finditer(text)
        for word in re.findall(r"\w+", found.group(0).casefold())
    }


def asks_when(text: str) -> bool:
    """Whether the question asks for a time ("When did …?", "What year …?")."""
    return _ASKS_WHEN.search(text) is not None


def asks_now(text: str) -> bool:
    """Whether the question asks how things stand now ("… now?", "current", "still")."""
    return _ASKS_NOW.search(text) is not None


def asks_past(text: str) -> bool:
    """Whether the question asks about something that happened, whenever it did: neither how
    things stand now (`asks_now`) nor what was said last. A recency prior has no say in it."""
    return (
        _QUESTION.search(text) is not None
        and _ASKS_PAST.search(text) is not None
        and _ASKS_LATEST.search(text) is None
        and not asks_now(text)
    )


def says_when(text: str) -> bool:
    """Whether the text tells a time, relative or not ("yesterday", "last Friday", "in May")."""
    return _SAYS_WHEN.search(text) is not None


Span = tuple[datetime, datetime]
ROLLING_DAYS = {"week": 7, "month": 30, "year": 365}  # "the past week|month|year"


def _days(text: str, today: datetime) -> Span | None:
    m = _DAYS_RE.search(text)
    if m is None:
        return None
    first, last = _DAYS[m.group(1).lower()]
    return today + timedelta(days=first), today + timedelta(days=last)


def _spoken(text: str, today: datetime) -> Span | None:
    """A day the household names by its name, part or feast ("last Friday", "this morning",
    "last weekend", "last Christmas"), resolved by `dateparser` against the question's day:
    the whole day (a weekend: Saturday and Sunday). dateparser knows neither weekends nor
    feasts, so "weekend" is asked as its Saturday and a feast as its date; only what it reads
    from those words counts (it reads "we" as a Wednesday)."""
    if _SPOKEN.search(text) is None:
        return None
    asked = _FEAST_RE.sub(lambda m: FEASTS[m.group(0).lower().replace("’", "'")], text)
    asked = re.sub(r"\bweekend\b", "saturday", asked, flags=re.I)
    for phrase, when in _search_dates(asked, today):
        if _SPOKEN_PARSED.search(phrase) is None:
            continue
        day = datetime(when.year, when.month, when.day, tzinfo=today.tzinfo)
        if day > today:  # "on Friday" said on a Thursday: the one before
            day -= timedelta(days=7)
        weekend = re.search(r"\b(last|this|past)?\s*weekend\b", text, re.I)
        if weekend and day.weekday() == 5:
            if (weekend.group(1) or "").lower() in ("last", "past") and day + timedelta(
                days=2
            ) > today:
                day -= timedelta(days=7)  # said on a Sunday: the weekend before this one
            return day, day + timedelta(days=2)
        return day, day + timedelta(days=1)
    return None


def _search_dates(text: str, today: datetime) -> list[tuple[str, datetime]]:
    """dateparser's dates in `text`, English, relative to `today` (the household's day, at
    noon: "this morning" is today whatever the hour), the past preferred."""
    from dateparser.search import search_dates  # 2 s to load: `warm` loads it at start

    base = today.replace(hour=12, tzinfo=None)
    settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past"}
    return list(search_dates(text, languages=["en"], settings=settings) or [])  # type: ignore[arg-type]


def warm() -> None:
    """Load dateparser's English data (2 s), so the first question naming a day does not wait."""
    _spoken("last friday", day_start(0.0))


def _ago(text: str, today: datetime) -> Span | None:
    m = _AGO.search(text)
    if m is None:
        return None
    raw = m.group(1).lower()
    n = int(raw) if raw.isdigit() else NUMBERS[raw]
    unit = m.group(2).lower()
    if unit == "day":
        day = today - timedelta(days=n)
        return day - timedelta(days=1), day + timedelta(days=2)  # a day either side
    if unit == "week":
        middle = today - timedelta(weeks=n)
        return middle - timedelta(days=7), middle + timedelta(days=7)
    if unit == "month":
        start = _add_months(_month_start(today), -n)
        return _add_months(start, -1), _add_months(start, 2)
    year = today.year - n
    return datetime(year, 1, 1, tzinfo=today.tzinfo), datetime(year + 1, 1, 1, tzinfo=today.tzinfo)


def _earlier(text: str, today: datetime) -> Span | None:
    m = _EARLIER.search(text)
    if m is None:
        return None
    if m.group(1).lower() == "year":
        return datetime(today.year, 1, 1, tzinfo=today.tzinfo), today
    return _month_start(today), today


def _relative(text: str, today: datetime) -> Span | None:
    m = _RELATIVE.search(text)
    if m is None:
        return None
    which, unit = m.group(1).lower(), m.group(2).lower()
    if which == "past":  # "the past week": the last seven days, not the calendar week before
        return today - timedelta(days=ROLLING_DAYS[unit]), today + timedelta(days=1)
    back = which != "this"
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        start = monday - timedelta(weeks=1) if back else monday
        return start, start + timedelta(weeks=1)
    if unit == "month":
        start = _add_months(_month_start(today), -1 if back else 0)
        return start, _add_months(start, 1)
    year = today.year - (1 if back else 0)
    return datetime(year, 1, 1, tzinfo=today.tzinfo), datetime(year + 1, 1, 1, tzinfo=today.tzinfo)


def _season(text: str, today: datetime) -> Span | None:
    m = _SEASON_RE.search(text)
    if m is None:
        return None
    which, first = m.group(1).lower(), SEASONS[m.group(2).lower()]
    if m.group(3):
        # "winter 2025" is the winter that begins in December 2024… by the usual reading it is
        # the one that includes January–February 2025; take the December of the year before.
        year = int(m.group(3)) - (1 if first == 12 else 0)
        start = datetime(year, first, 1, tzinfo=today.tzinfo)
    else:
        start = _latest_start(today, first)
        if which == "last" and start + timedelta(days=92) > today:
            start = start.replace(year=start.year - 1)  # the one before the current season
    return start, _add_months(start, 3)


def _day_of_month(text: str, today: datetime) -> Span | None:
    found = written_date(text)
    if found is None:
        return None
    month, day, year = found
    if not 1 <= day <= 31:
        return None
    try:
        start = datetime(year or _latest_start(today, month).year, month, day, tzinfo=today.tzinfo)
    except ValueError:
        return None
    return start - timedelta(days=1), start + timedelta(days=2)


def _month(text: str, today: datetime) -> Span | None:
    which, month, year_given = "in", 0, None
    for m in _MONTH_RE.finditer(text):
        name = m.group(2).lower()
        if name == "may" and m.group(1).lower() == "this" and not m.group(3):
            continue  # "this may help": the verb
        which, month, year_given = m.group(1).lower(), MONTHS[name], m.group(3)
        break
    if not month:
        m2 = _MONTH_YEAR.search(text)
        if m2 is None:
            return None
        month, year_given = MONTHS[m2.group(1).lower()], m2.group(2)
    if year_given:
        start = datetime(int(year_given), month, 1, tzinfo=today.tzinfo)
    else:
        start = _latest_start(today, month)
        if which == "last" and start.month == today.month and start.year == today.year:
            start = start.replace(year=start.year - 1)
    end = today + timedelta(days=1) if which == "since" else _add_months(start, 1)
    return start, end


def _year(text: str, today: datetime) -> Span | None:
    m = _YEAR_RE.search(text)
    if m is None:
        return None
    year = int(m.group(1))
    return datetime(year, 1, 1, tzinfo=today.tzinfo), datetime(year + 1, 1, 1, tzinfo=today.tzinfo)


def _month_start(day: datetime) -> datetime:
    return day.replace(day=1)


def _add_months(day: datetime, months: int) -> datetime:
    index = day.year * 12 + (day.month - 1) + months
    return day.replace(year=index // 12, month=index % 12 + 1, day=1)


def _latest_start(today: datetime, month: int) -> datetime:
    """The first day of the latest `month` that has begun by today."""
    year = today.year if month <= today.month else today.year - 1
    return datetime(year, month, 1, tzinfo=today.tzinfo)
