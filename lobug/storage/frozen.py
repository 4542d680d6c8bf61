"""Frozen copies of the helpers old migrations ran with; never edit them, add a new function.

Copied verbatim (as of migration m003_memory_hash_and_keys) from lobug.memory.table.dedup
(`normalize`, `content_hash`) and lobug.memory.write.fact_keys (`FactKey`, `parse_fact`,
`key_string` and the private patterns they use), so that a later change to memory's helpers never
changes what an old migration wrote, and storage never imports memory.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

# --- frozen copy of lobug.memory.table.dedup (m003): migrations must not change with memory ---

_APOSTROPHES = re.compile(r"['’‘`´]")
_NON_WORD = re.compile(r"[\W_]+")


def normalize(text: str) -> str:
    """Lowercase, punctuation removed, whitespace collapsed: the form hashes and overlap use."""
    # NFKC folds full-width and ligature forms; casefold handles ß and friends. Apostrophes are
    # deleted rather than spaced so "user's" and "users" do not differ by a stray "s" token.
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _APOSTROPHES.sub("", text)
    return " ".join(_NON_WORD.sub(" ", text).split())


def content_hash(text: str) -> str:
    """SHA-256 (hex) of the normalised text: equal for texts differing only in case/punctuation."""
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()


# --- frozen copy of lobug.memory.write.fact_keys (m003): migrations must not change with memory ---


@dataclass(frozen=True)
class FrozenFactKey:
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
_TRAILING_TIME = re.compile(
    r"(?:,?\s+(?:now|these days|nowadays|currently|recently|again|anymore|any more|for now|"
    r"last (?:week|month|year)|this (?:week|month|year)|a while ago|\d+ \w+ ago|yesterday|"
    r"today|in \d{4}|since .+|for (?:work|good|a while|now|\d+ \w+)|as (?:an? )?\w+ \w+|"
    r"as (?:an? )?\w+))+$",
    re.I,
)
_POSSESSIVE_SUBJECT = re.compile(
    r"^(?:the )?(?P<owner>.+?)'s (?:[a-z]+ ){1,2}(?P<name>[A-Z][\w'-]*"
    r"(?: [A-Z][\w'-]*)?)$"
)


def parse_fact(fact: str) -> FrozenFactKey | None:
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
        value = _TRAILING_TIME.sub("", groups["v"]).strip(" ,") or None
        return FrozenFactKey(subject, attribute, value, negated=bool(groups.get("neg")))
    return None


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
