"""PII tags for emails, phone numbers (international, US, EU) and street addresses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lobug.memory.write.pii import PII_TAGS, pii_tags


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        ("Email me at alex.smith+home@example.co.uk please", ["email"]),
        ("My number is +1 (555) 123-4567", ["phone"]),
        ("call +44 20 7946 0958 tomorrow", ["phone"]),
        ("Her mobile: +49 171 1234567", ["phone"]),
        ("0049 30 12345678 is the office", ["phone"]),
        ("Dentist: (555) 867-5309", ["phone"]),
        ("555-867-5309 is the plumber", ["phone"]),
        ("the plumber is 555.867.5309", ["phone"]),
        ("ring 06 12 34 56 78 after six", ["phone"]),
        ("office 030 1234567", ["phone"]),
        ("my number is 5558675309", ["phone"]),
        ("We live at 42 Oak Street now", ["address"]),
        ("send it to 1600 Pennsylvania Ave NW", ["address"]),
        ("221b baker st", ["address"]),
        ("The office is at 12 Elm Rd.", ["address"]),
        ("Sie wohnt in der Hauptstraße 5", ["address"]),
        ("Via Roma 12, Milano", ["address"]),
        ("my address is the blue house by the lake", ["address"]),
        ("Write to jo@x.org or call +1 555 123 4567 at 9 Main St", ["address", "email", "phone"]),
    ],
)
def test_detects(text: str, tags: list[str]) -> None:
    assert pii_tags(text) == tags


@pytest.mark.parametrize(
    "text",
    [
        "The meeting is on 2026-03-14 at 10:30.",
        "Born 14.03.1990 in Denver",
        "Order 12345 shipped",
        "It costs 1,250,000 dollars",
        "The server is 192.168.1.10",
        "I have 3 kids on the street",
        "In 1999 we moved; by 2005 we had moved again",
        "Version 1.2.3 is out",
        "Room 101 and room 102",
        "The score was 3-2",
        "twitter handle @alex",
        "",
    ],
)
def test_no_false_positives(text: str) -> None:
    assert pii_tags(text) == []


@given(st.text(max_size=200))
def test_tags_are_known_and_sorted(text: str) -> None:
    tags = pii_tags(text)
    assert tags == sorted(set(tags))
    assert set(tags) <= set(PII_TAGS)


@pytest.mark.parametrize(
    "text",
    [
        "call +44 (0)20 7946 0958",
        "+81 3-1234-5678 is the Tokyo office",
        "whatsapp +91 98765 43210",
        "+33 6 12 34 56 78",
        "tel: +41 44 668 18 00",
        "+852 2345 6789",
        "+7 (495) 123-45-67",
        "+353 (0) 1 234 5678",
        "+61 4 1234 5678",
        "+86 138 0013 8000",
        "Tel.+49(0)30/1234567",
    ],
)
def test_international_numbers(text: str) -> None:
    assert pii_tags(text) == ["phone"]


@pytest.mark.parametrize(
    "text", ["+999 1234567 is no country", "+12 3456 7890", "+1 234 5678 9012 3456"]
)
def test_international_needs_a_country_and_a_possible_length(text: str) -> None:
    assert pii_tags(text) == []
