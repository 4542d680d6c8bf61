"""Basic PII detectors (seed 000): tag text that holds an email, a phone number or an address."""

from __future__ import annotations

import re

import phonenumbers

PII_TAGS = ("address", "email", "phone")

EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")

# A run of digit groups joined by single separators, optionally led by + or a bracketed area
# code. What it finds is then checked (digit count, dates, IPs) in _is_phone.
_PHONE_RUN = re.compile(
    r"(?<![\w+])(?:\+|00)?\(?\d{1,5}+\)?(?:[ .\-/]?\(?\d{1,5}+\)?){1,6}+(?![\w])"
)
_DATE_LIKE = re.compile(r"^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4})$")
_DOTTED_QUAD = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_PHONE_CUE = re.compile(
    r"\b(?:phone|cell|mobile|number|tel|call|text|whatsapp|fax)\b", re.IGNORECASE
)

_STREET_WORDS = (
    "street|st|avenue|ave|road|rd|lane|ln|boulevard|blvd|drive|dr|court|ct|place|pl|way|"
    "terrace|ter|circle|cir|highway|hwy|parkway|pkwy|square|sq|crescent|close|row|alley"
)
# "42 Oak Street", "1600 Pennsylvania Ave NW", "221b baker st" (speech transcripts are often
# lower case, so the name words are not required to be capitalised).
_ADDRESS_US = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?\s+((?:[A-Za-z][\w'.-]*\s+){{1,4}})(?:{_STREET_WORDS})\b\.?",
    re.IGNORECASE,
)
# "Hauptstraße 5", "Via Roma 12", "Rue de Rivoli 8": the number follows the street.
_ADDRESS_EU = re.compile(
    r"\b(?:[A-ZÄÖÜ][\wäöüß-]*(?:straße|strasse|weg|gasse|platz|allee|ring|damm)"
    r"|(?:Rue|Via|Calle|Avenida|Rua|Piazza|Plaza|Carrer)\s+(?:[\w'-]+\s+){0,3}?[\w'-]+)"
    r"\s+\d{1,4}[a-z]?\b"
)
_ADDRESS_CUE = re.compile(r"\b(?:my|our|the|home|mailing|postal)\s+address\s+is\b", re.I)
# Words that show "3 kids on the street" is a sentence, not an address.
_NOT_STREET_NAME = frozenset(
    "a an and the on in at to of my our your his her their for with from by down up across "
    "into onto near kids cars people times years days".split()
)


def pii_tags(text: str) -> list[str]:
    """The PII kinds present in text, sorted, from {"address", "email", "phone"}."""
    tags = set()
    if EMAIL.search(text):
        tags.add("email")
    # Emails hold digit runs of their own; look for phones and addresses in the rest.
    rest = EMAIL.sub(" ", text)
    if has_phone(rest):
        tags.add("phone")
    if has_address(rest):
        tags.add("address")
    return sorted(tags)


def has_phone(text: str) -> bool:
    cue = bool(_PHONE_CUE.search(text))
    return any(_is_phone(m.group(0), cue) for m in _PHONE_RUN.finditer(text))


def has_address(text: str) -> bool:
    if _ADDRESS_CUE.search(text) or _ADDRESS_EU.search(text):
        return True
    for match in _ADDRESS_US.finditer(text):
        words = match.group(1).lower().split()
        if not any(w in _NOT_STREET_NAME for w in words):
            return True
    return False


def _is_phone(candidate: str, cue: bool) -> bool:
    candidate = candidate.strip(" .-/")
    digits = re.sub(r"\D", "", candidate)
    if not 7 <= len(digits) <= 15:
        return False
    if _DATE_LIKE.match(candidate) or _DOTTED_QUAD.match(candidate):
        return False
    if candidate.startswith(("+", "00")):
        return _possible_international(candidate)
    groups = [g for g in re.split(r"[ .\-/()]+", candidate) if g]
    if candidate.startswith("("):  # "(555) 867-5309": a bracketed area code
        return True
    if len(groups) == 1:
        # A bare digit run is an order number or a year as often as a phone; only a cue
        # ("my number is …") makes it one.
        return cue and len(digits) >= 7
    if len(groups) == 2:
        # "555-1234" / "0171 1234567": a short prefix then a long subscriber number.
        return len(groups[1]) >= 4 and (cue or len(groups[0]) >= 3)
    return True


def _possible_international(candidate: str) -> bool:
    """A known country code and a length that country's numbering plan allows (libphonenumber's
    metadata; fictional-but-well-formed numbers such as +1 555 … still count)."""
    number = "+" + candidate[2:] if candidate.startswith("00") else candidate
    try:
        return phonenumbers.is_possible_number(phonenumbers.parse(number, None))
    except phonenumbers.NumberParseException:
        return False
