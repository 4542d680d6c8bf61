"""Named-entity recognition (seed 003): the regexes (names, places, dates, emails, URLs,
mentions, tags), and the providers and strategies around them (`fast`, `accurate`)."""

from __future__ import annotations

import asyncio
import bisect
import importlib.util
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from lobug.memory.calendar import MONTH, MONTH_NAMES, month_of

log = logging.getLogger(__name__)

ENTITY_TYPES = ("person", "organization", "location", "email", "url", "date", "tag", "other")


@dataclass(frozen=True)
class Mention:
    """A span of text that names an entity (linked to an `entities` row by graph.entities)."""

    text: str  # as written
    canonical: str
    type: str
    span: tuple[int, int]


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("email", re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")),
    ("url", re.compile(r"\bhttps?://[^\s<>\"')\]]+|\bwww\.[^\s<>\"')\]]+", re.I)),
    ("mention", re.compile(r"(?<![\w@])@([A-Za-z][\w.]{0,38}[A-Za-z0-9_])")),
    ("tag", re.compile(r"(?<![\w#&])#([A-Za-z][\w-]{0,49})")),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("date", re.compile(r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b")),
    ("date", re.compile(rf"\b{MONTH}\.? \d{{1,2}}(?:st|nd|rd|th)?(?:,? \d{{4}})?\b", re.I)),
    (
        "date",
        re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{MONTH}(?:,? \d{{4}})?\b", re.I),
    ),
]
_NAME_WORD = r"(?:[A-Z][a-z]+(?:['’-](?!s\b)[A-Za-z]+)?|[A-Z]{2,}|Mc[A-Z][a-z]+|O'[A-Z][a-z]+)"
_CAPITALISED = re.compile(
    rf"\b(?:(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+)?{_NAME_WORD}"
    rf"(?:(?:['’]s)?\s+(?:(?:of|de|van|von|da|del|the)\s+)?{_NAME_WORD}){{0,3}}\b"
)
# Words that are capitalised because they start a sentence, are "I", or are calendar words.
COMMON_WORDS = frozenset(
    """a an the i i'm i've i'll i'd my we our you your he she it they them his her their this
    that these those there here what when where which who why how yes no not ok okay hi hey hello
    thanks thank please sorry well so and but or if then also just oh ah um uh wow good great
    nice sure maybe can could would should will shall do does did is are was were be been have
    has had let lets remember remind tell set turn play call add buy get make put show find
    check stop start open close give take bring send text write read note today tomorrow
    yesterday tonight morning evening monday tuesday wednesday thursday friday saturday sunday
    mondays tuesdays wednesdays thursdays fridays saturdays sundays weekends
    mon tue wed thu fri sat sun weekend christmas easter user assistant mom dad mum
    grandma grandpa honey dear dinner lunch breakfast traffic weather school work music pizza
    coffee tea everything nothing something anything everyone someone nobody all any some
    maybe perhaps actually anyway btw by for in on at to from with after before since
    until""".split()
    + MONTH_NAMES
)
_ORG_HINT = re.compile(
    r"\b(?:inc|corp|corporation|llc|ltd|gmbh|co)\.?$|\b(?:company|bank|university|college|"
    r"school|hospital|clinic|group|labs?|studios?|airlines?|foundation|institute|agency|church|"
    r"cafe|café|restaurant|bakery|market|store|gym|club)\b",
    re.I,
)
_LOC_HINT = re.compile(
    r"\b(?:street|st|avenue|ave|road|rd|park|lake|river|mountains?|mount|beach|island|city|"
    r"county|valley|bay|bridge|square|station|airport|falls|canyon)\b",
    re.I,
)
_BEFORE_PLACE = re.compile(
    r"\b(?:in|to|from|near|visit|visited|visiting|around|across|through)\s+$", re.I
)
_BEFORE_ORG = re.compile(r"\b(?:work(?:s|ed|ing)? (?:at|for)|job at|joined|employed by)\s+$", re.I)
_SUBJECT_NEXT = re.compile(
    r"(?:'s\b|’s\b|\s+(?:is|was|has|had|and|said|says|moved|lives|lived|works|worked|will|"
    r"called|wants|likes|loves|got|just|went|can|could|would|might|isn't|wasn't|doesn't|"
    r"didn't|does|did|told|asked|needs|started|left|joined)\b)"
)
_AFTER_SENTENCE_END = re.compile(r"(?:[.!?:;\n]\s*|[\"“(]\s*)$")
# What is read before a name (its sentence's start, the verb or preposition leading to it): the
# words just before it, not all the text before it, which made a long text's names quadratic.
_LOOKBACK_CHARS = 80


def extract_entities(text: str) -> list[Mention]:
    """Regex entities in text; overlapping finds are resolved longest-first."""
    found: list[Mention] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            found.append(_pattern_entity(kind, m))
    for m in _CAPITALISED.finditer(text):
        entity = _name_entity(text, m)
        if entity is not None:
            found.append(entity)
    return merge([(0, entity) for entity in found])


def _pattern_entity(kind: str, m: re.Match[str]) -> Mention:
    raw = m.group(0)
    span = (m.start(), m.end())
    if kind == "email":
        return Mention(raw, raw.lower(), "email", span)
    if kind == "url":
        raw = raw.rstrip(".,;:!?")
        canonical = re.sub(r"^https?://", "", raw, flags=re.I).rstrip("/").lower()
        return Mention(raw, canonical, "url", (m.start(), m.start() + len(raw)))
    if kind == "mention":
        return Mention(raw, _title(m.group(1)), "person", span)
    if kind == "tag":
        return Mention(raw, m.group(1).lower(), "tag", span)
    return Mention(raw, _canonical_date(raw), "date", span)


def _canonical_date(raw: str) -> str:
    """ISO when the year is known ("2026-03-14"), else "March 3"; US order for 3/14/2026."""
    text = " ".join(raw.lower().replace(",", " ").replace(".", " ").split())
    numeric = re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{2,4})", text)
    if numeric:
        a, b, year = (int(x) for x in numeric.groups())
        month, day = (b, a) if a > 12 else (a, b)  # 14/3/2026 can only be day-first
        year += 2000 if year < 100 else 0
        return f"{year:04d}-{month:02d}-{day:02d}" if 1 <= month <= 12 else raw
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return text
    words = [w for w in re.sub(r"(\d)(?:st|nd|rd|th)\b", r"\1", text).split() if w != "of"]
    named = next((m for w in words if (m := month_of(w)) is not None), None)
    numbers = [int(w) for w in words if w.isdigit()]
    if named is None or not numbers:
        return " ".join(raw.split())
    day = numbers[0]
    if len(numbers) > 1:
        return f"{numbers[1]:04d}-{named:02d}-{day:02d}"
    return f"{MONTH_NAMES[named - 1].capitalize()} {day}"


def _name_entity(text: str, m: re.Match[str]) -> Mention | None:
    words = m.group(0).split()
    start = m.start()
    # Strip leading words that are capitalised only by position or are not names at all.
    while words and words[0].lower().strip("'’") in COMMON_WORDS:
        start = text.index(words[1], start + len(words[0])) if len(words) > 1 else m.end()
        words = words[1:]
    if not words:
        return None
    name = " ".join(words)
    if name.lower() in COMMON_WORDS or text[m.end() : m.end() + 1] == "@":
        return None
    before = text[max(0, start - _LOOKBACK_CHARS) : start]
    if (
        len(words) == 1
        and (start == 0 or _AFTER_SENTENCE_END.search(before))
        and not _SUBJECT_NEXT.match(text, m.end())
    ):
        # A lone capitalised word opening a sentence is as often a verb ("Remind me…") as a
        # name; only one followed by what a subject does ("Jen moved…", "Jen's…") counts.
        return None
    return Mention(name, name, _name_type(name, before), (start, m.end()))


def _name_type(name: str, before: str) -> str:
    if _ORG_HINT.search(name) or _BEFORE_ORG.search(before):
        return "organization"
    if _LOC_HINT.search(name) or _BEFORE_PLACE.search(before):
        return "location"
    if name.isupper() and len(name) <= 6:
        return "organization"  # NASA, IBM, the NHS
    return "person"


def _title(name: str) -> str:
    return name[:1].upper() + name[1:] if name.islower() else name


# -- providers and strategies (seed 003) ---------------------------------------------------------
# `fast` is the regex provider alone: the write path (facts, procedures) and `embed_turn` (turns)
# call `extract_entities`. `accurate` adds every other provider loaded (spaCy when installed, the
# memory LLM unless extraction is `heuristic`, graph/ner_llm.py) and is run only by the nightly
# enrichment job (graph/enrich.py): on a Pi an LLM call is seconds of the one model slot, never
# something a turn waits for.
FAST = "fast"
ACCURATE = "accurate"
STRATEGIES = {FAST: ("regex",), ACCURATE: ("regex", "spacy", "llm")}
SPACY_MODEL = "en_core_web_sm"
# Finds whose type regex knows for certain win over a model's; a model's name and type win over
# the regex's capitalised-word guess of the same span.
_CERTAIN = frozenset({"email", "url", "tag", "date"})
_PROVIDER_RANK = {"llm": 1, "spacy": 2, "regex": 3}


class Provider(Protocol):
    name: str

    async def extract_many(self, texts: Sequence[str]) -> list[list[Mention]]:
        """The entities of each text (spans into that text), in order."""


class RegexProvider:
    name = "regex"

    async def extract_many(self, texts: Sequence[str]) -> list[list[Mention]]:
        return [extract_entities(text) for text in texts]


class SpacyProvider:
    """spaCy's named entities, when spaCy and its English model are installed (they are not a
    dependency: on a Pi the model costs RAM the LLM needs)."""

    name = "spacy"
    LABELS = {
        "PERSON": "person",
        "ORG": "organization",
        "GPE": "location",
        "LOC": "location",
        "FAC": "location",
    }

    def __init__(self, nlp: Any) -> None:
        self.nlp = nlp

    async def extract_many(self, texts: Sequence[str]) -> list[list[Mention]]:
        return await asyncio.to_thread(self._run, list(texts))

    def _run(self, texts: list[str]) -> list[list[Mention]]:
        found = []
        for doc in self.nlp.pipe(texts):
            found.append(
                [
                    Mention(e.text, e.text, self.LABELS[e.label_], (e.start_char, e.end_char))
                    for e in doc.ents
                    if e.label_ in self.LABELS and e.text.lower() not in COMMON_WORDS
                ]
            )
        return found


def load_spacy(model: str = SPACY_MODEL) -> SpacyProvider | None:
    """spaCy's provider if spaCy and `model` can be loaded; None (and why, logged) if not."""
    if importlib.util.find_spec("spacy") is None:
        return None
    try:
        import spacy  # noqa: PLC0415 - optional, looked for only here

        return SpacyProvider(spacy.load(model))
    except Exception as exc:  # noqa: BLE001 - an optional provider: the strategy goes without
        log.info("spaCy is installed but %s does not load (%s); NER goes without it", model, exc)
        return None


class Ner:
    """The NER providers loaded, run by strategy; results merged by span (longest wins)."""

    def __init__(self, providers: Sequence[Provider]) -> None:
        self.providers = {p.name: p for p in providers}
        self.providers.setdefault("regex", RegexProvider())

    @property
    def accurate_ner_available(self) -> bool:
        """Seed 003: true when a provider beyond the regexes (spaCy, LLM) is loaded; the
        enrichment's re-extraction is skipped without one."""
        return any(name != "regex" for name in self.providers)

    async def extract_many(self, texts: Sequence[str], strategy: str) -> list[list[Mention]]:
        """Each text's entities by `strategy`'s providers; a provider's outage propagates."""
        found: list[list[tuple[int, Mention]]] = [[] for _ in texts]
        for name in STRATEGIES[strategy]:
            provider = self.providers.get(name)
            if provider is None or not texts:
                continue
            for index, entities in enumerate(await provider.extract_many(texts)):
                found[index] += [(_rank(name, e), e) for e in entities]
        return [merge(ranked) for ranked in found]


def _rank(provider: str, entity: Mention) -> int:
    return 0 if provider == "regex" and entity.type in _CERTAIN else _PROVIDER_RANK[provider]


def merge(ranked: Sequence[tuple[int, Mention]]) -> list[Mention]:
    """Overlapping finds of several providers: the longest span wins, then the better rank."""
    kept: list[Mention] = []
    # The kept spans, disjoint and in order: a find overlaps one only if it overlaps the last
    # kept before it or the first after it (a bisection, not a look at every kept find, which
    # made a long text's thousands of names quadratic).
    starts: list[int] = []
    ends: list[int] = []
    order = sorted(ranked, key=lambda r: (-(r[1].span[1] - r[1].span[0]), r[0], r[1].span[0]))
    for _, entity in order:
        start, end = entity.span
        at = bisect.bisect_right(starts, start)
        if (at and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
            continue
        starts.insert(at, start)
        ends.insert(at, end)
        kept.append(entity)
    return sorted(kept, key=lambda e: e.span)
