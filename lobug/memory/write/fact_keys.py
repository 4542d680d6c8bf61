"""Subject and attribute of a third-person fact, so contradicting facts can be found and superseded.

"The user lives in Portland." and "The user moved to Seattle." both key to ("user",
"residence"); a new value for the same key supersedes the old one. Only single-valued
attributes are keyed: preferences ("likes jazz") can hold many values at once and never
contradict each other, so they key to None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lobug.memory.search.when import without_period
from lobug.memory.table.dedup import normalize


@dataclass(frozen=True)
class FactKey:
    subject: str  # "user", or a lower-case name such as "jen"
    attribute: str  # "residence", "employer", "favorite color", "spouse", …
    value: str | None  # the attribute's value as written, trailing time phrases removed
    negated: bool = False  # "no longer lives in Portland": the value is what is NOT true


_V = r"(?P<v>.+?)"  # lazy, so _END leaves the final full stop out of the value
_END = r"\s*[.;!?]?\s*$"
_NEG = r"(?P<neg>no longer |not |never )?(?:now |currently |still |just |recently )?"

# (attribute, pattern); what precedes the pattern (group "s") is the subject. First match wins,
# so the specific phrasings come before the generic possessive "X's thing is Y".
_PREDICATES: list[tuple[str, re.Pattern[str]]] = [
    (attr, re.compile(rf"^(?P<s>.+?){pattern}{_END}", re.I))
    for attr, pattern in [
        ("name", rf"(?:'s\s+(?:full |first |nick)?name is|\s+goes by|\s+is called)\s+{_V}"),
        (
            "favorite",
            rf"'s\s+favou?rite (?P<what>[a-z]+(?: [a-z]+)?) (?:is|was|changed to|"
            rf"has changed to|is now) {_V}",
        ),
        (
            "residence",
            rf"\s+{_NEG}(?:lives|is living|resides|has moved|moved|relocated|"
            rf"has relocated|is moving)\s+(?:back )?(?:in|to) {_V}",
        ),
        (
            "employer",
            rf"\s+{_NEG}(?:works|is working|started working|has started working)"
            rf"(?: full[- ]time| part[- ]time)? (?:at|for) {_V}",
        ),
        ("employer", rf"\s+{_NEG}(?:is employed (?:at|by)|(?:has )?joined) {_V}"),
        ("occupation", rf"\s+{_NEG}(?:works|is working) as (?:an? )?{_V}"),
        ("age", r"\s+is (?P<v>\d{1,3}) years? old"),
        (
            "diet",
            r"\s+(?:is )?(?P<neg>no longer |not )?(?:now )?(?P<v>vegetarian|vegan|"
            r"pescatarian)",
        ),
        ("spouse", rf"\s+{_NEG}(?:is married to|is engaged to) {_V}"),
        (
            "possessive",
            rf"'s\s+(?P<what>[a-z]+(?: [a-z]+){{0,2}}) (?:is|are|changed to|"
            rf"has changed to|is now|has become) (?:called |named )?{_V}",
        ),
    ]
]
_ATTRIBUTE_ALIASES = {
    "wife": "spouse",
    "husband": "spouse",
    "spouse": "spouse",
    "email address": "email",
    "e-mail": "email",
    "phone": "phone number",
    "number": "phone number",
    "cell": "phone number",
    "mobile": "phone number",
    "job": "occupation",
    "profession": "occupation",
    "occupation": "occupation",
    "home address": "address",
    "birth date": "birthday",
    "date of birth": "birthday",
    "employer": "employer",
    "company": "employer",
    "home town": "hometown",
    "hometown": "hometown",
    "first name": "name",
    "name": "name",
}
# What a value says at its end besides itself: how things stand ("now", "again", "as a nurse",
# "for work", "since the move"), and a time said without a period ("a while ago"). A period
# ("last month", "in May 2024", "two weeks ago") is read by the search's own parser
# (`when.without_period`): what is written is dated by the words a question is.
_TRAILING = re.compile(
    r"(?:,?\s+(?:now|these days|nowadays|currently|recently|again|anymore|any more|for now|"
    r"a while ago|\d+ \w+ ago|since .+|for (?:work|good|a while|now|\d+ \w+)|"
    r"as (?:an? )?\w+ \w+|as (?:an? )?\w+))+$",
    re.I,
)
_POSSESSIVE_SUBJECT = re.compile(
    r"^(?:the )?(?P<owner>.+?)'s (?:[a-z]+ ){1,2}(?P<name>[A-Z][\w'-]*"
    r"(?: [A-Z][\w'-]*)?)$"
)


def parse_fact(fact: str) -> FactKey | None:
    """The (subject, attribute, value) a fact states, or None for multi-valued statements."""
    text = " ".join(fact.replace("’", "'").split())
    for attribute, pattern in _PREDICATES:
        match = pattern.match(text)
        if match is None:
            continue
        subject = _subject(match["s"])
        if not subject:
            continue
        groups = match.groupdict()
        if attribute in ("favorite", "possessive"):
            what = _normalise_attribute(groups["what"])
            attribute = what if attribute == "possessive" else f"favorite {what}"
        return FactKey(subject, attribute, _value(groups["v"]), negated=bool(groups.get("neg")))
    return None


def _value(said: str) -> str | None:
    """The value without what its end says of time and of how things stand ("Seattle last
    month for work" → "Seattle"), however they are interleaved."""
    value = said
    while (shorter := without_period(_TRAILING.sub("", value))) != value:
        value = shorter
    return value.strip(" ,") or None


def subject_attribute(fact: str) -> tuple[str, str] | None:
    """("user", "residence") for "The user moved to Seattle."; None when not single-valued."""
    key = parse_fact(fact)
    return None if key is None else (key.subject, key.attribute)


def _subject(raw: str) -> str:
    raw = raw.strip(" ,")
    named = _POSSESSIVE_SUBJECT.match(raw)
    if named:
        # "The user's sister Jen" is Jen: later facts will say "Jen moved to Denver".
        return named["name"].lower()
    low = raw.lower()
    low = re.sub(r"^(?:the )", "", low)
    if low in ("user", "the user"):
        return "user"
    if low.endswith("'s"):
        low = low[:-2]
    return low


def _normalise_attribute(what: str) -> str:
    what = what.lower().replace("colour", "color").replace("favourite", "favorite")
    return _ATTRIBUTE_ALIASES.get(what, what)


def key_string(fact: str) -> str | None:
    """The stored form of a fact's key (`memories.fact_key`): "user|residence", or None."""
    key = parse_fact(fact)
    return None if key is None else f"{key.subject}|{key.attribute}"


# Where a value's head ends: "Denver and her email is …", "a house in Portland near the river".
_VALUE_TAIL = re.compile(r"\b(?:and|with|near|where|because|since|who|which|but|so)\b")


def claim(fact: str) -> tuple[bool, str] | None:
    """(negated, the value's head): "lives in Denver with her cats" claims Denver, as does
    "lives in Denver and works at a bakery" — two such facts do not contradict each other."""
    key = parse_fact(fact)
    if key is None or key.value is None:
        return None
    head = _VALUE_TAIL.split(normalize(key.value), maxsplit=1)[0].strip()
    return key.negated, head


def contradicts(new: str, old: str) -> bool:
    """Whether `new` states another value than `old` for the same subject and attribute.

    "moved to Seattle" contradicts "lives in Portland"; "no longer lives in Portland"
    contradicts only a Portland fact; the same claim again ("lives in Denver with her cats"
    after "lives in Denver") is no contradiction. Unkeyed (multi-valued) facts never are.
    """
    key = key_string(new)
    if key is None or key != key_string(old):
        return False
    new_claim, old_claim = claim(new), claim(old)
    if new_claim is None or old_claim is None or new_claim == old_claim:
        return False
    negated, value = new_claim
    return old_claim == (False, value) if negated else True
