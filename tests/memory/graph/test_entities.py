"""Regex NER and the entity registry on a real database: aliases, links, counts, people."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lobug.memory.graph.entities import (
    ENTITY_TYPES,
    Mention,
    create_or_get_entity,
    entities_in_text,
    extract_entities,
    link_entities,
)
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect

NOW = 1_750_000_000.0


def found(text: str) -> list[tuple[str, str, str]]:
    return [(e.text, e.canonical, e.type) for e in extract_entities(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Ping @maria about #Garden",
            [("@maria", "Maria", "person"), ("#Garden", "garden", "tag")],
        ),
        ("mail alex.b@example.com now", [("alex.b@example.com", "alex.b@example.com", "email")]),
        ("see https://Example.com/a/ today.", [("https://Example.com/a/", "example.com/a", "url")]),
        ("see www.example.org", [("www.example.org", "www.example.org", "url")]),
        ("due 2026-03-14", [("2026-03-14", "2026-03-14", "date")]),
        ("due 3/14/2026", [("3/14/2026", "2026-03-14", "date")]),
        ("due 14/3/26", [("14/3/26", "2026-03-14", "date")]),
        ("on March 3rd", [("March 3rd", "March 3", "date")]),
        ("the 5th of July, 2026", [("5th of July, 2026", "2026-07-05", "date")]),
        (
            "I work at NASA with Tom Baker.",
            [("NASA", "NASA", "organization"), ("Tom Baker", "Tom Baker", "person")],
        ),
        ("Jen moved to Denver.", [("Jen", "Jen", "person"), ("Denver", "Denver", "location")]),
        ("Maria's birthday", [("Maria", "Maria", "person")]),
        ("call Dr. Patel", [("Dr. Patel", "Dr. Patel", "person")]),
        ("at the Bank of America", [("Bank of America", "Bank of America", "organization")]),
        ("We hiked Lake Tahoe", [("Lake Tahoe", "Lake Tahoe", "location")]),
        (
            "dinner at Luigi's Restaurant",
            [("Luigi's Restaurant", "Luigi's Restaurant", "organization")],
        ),
    ],
)
def test_extract(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The user likes tea.",
        "Remember to buy milk.",
        "Tomorrow is Friday.",
        "I think so. Yes!",
        "Remind me on Monday",
        "Thanks!",
        "where does jen live?",
    ],
)
def test_no_entities(text: str) -> None:
    assert found(text) == []


def test_overlaps_resolve_longest_first() -> None:
    # The email holds an @mention-like part and a name-like part; only the email survives.
    assert found("Write to Jo@Example.com") == [("Jo@Example.com", "jo@example.com", "email")]


@given(st.text(max_size=200))
def test_spans_are_ordered_disjoint_and_typed(text: str) -> None:
    entities = extract_entities(text)
    for e in entities:
        assert e.type in ENTITY_TYPES
        assert text[e.span[0] : e.span[1]] == e.text
    for a, b in zip(entities, entities[1:], strict=False):
        assert a.span[1] <= b.span[0]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    db = connect(tmp_path / "e.db")
    migrate(db)
    yield db
    db.close()


def add_memory(conn: Any, content: str, status: str = "active", user_id: str = "default") -> int:
    cur = conn.execute(
        "INSERT INTO memories (user_id, content, status, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (user_id, content, status, NOW, NOW),
    )
    return int(cur.lastrowid)


def entity_row(conn: Any, entity_id: int) -> Any:
    return conn.execute("SELECT * FROM entities WHERE id = ?", (entity_id,)).fetchone()


def test_link_creates_then_counts_mentions(conn: Any) -> None:
    m1 = add_memory(conn, "Jen moved to Denver.")
    m2 = add_memory(conn, "The user's sister Jen likes Denver.")
    ids1 = link_entities(conn, m1, extract_entities("Jen moved to Denver."), "default", NOW)
    ents = extract_entities("sister Jen flew to Denver")
    ids2 = link_entities(conn, m2, ents, "default", NOW + 5)
    assert ids1 == ids2
    jen = entity_row(conn, ids1[0])
    assert (jen["canonical_name"], jen["type"], jen["mention_count"]) == ("Jen", "person", 2)
    assert jen["last_mentioned"] == NOW + 5
    links = conn.execute("SELECT memory_id, entity_id FROM memory_entities ORDER BY 1, 2")
    assert [tuple(r) for r in links] == [(m1, ids1[0]), (m1, ids1[1]), (m2, ids1[0]), (m2, ids1[1])]


def test_relinking_the_same_memory_is_idempotent(conn: Any) -> None:
    m = add_memory(conn, "Jen and Jen")
    ents = extract_entities("Jen met Jen")
    link_entities(conn, m, ents, "default", NOW)
    link_entities(conn, m, ents, "default", NOW)
    (row,) = conn.execute("SELECT mention_count FROM entities").fetchall()
    assert row[0] == 1
    assert conn.execute("SELECT COUNT(*) FROM memory_entities").fetchone()[0] == 1


def test_case_insensitive_canonical_and_alias_merge(conn: Any) -> None:
    first, created = create_or_get_entity(
        conn, "default", Mention("@maria", "Maria", "person", (0, 6)), NOW
    )
    again, created_again = create_or_get_entity(
        conn, "default", Mention("MARIA", "MARIA", "person", (0, 5)), NOW
    )
    assert created and not created_again and first == again
    # "MARIA" is the canonical name in other case: not worth an alias.
    assert json.loads(entity_row(conn, first)["aliases"]) == ["@maria"]
    # An alias finds the entity even when the canonical name differs.
    by_alias, created = create_or_get_entity(
        conn, "default", Mention("@maria", "@maria", "person", (0, 6)), NOW
    )
    assert by_alias == first and not created
    # Same name, other type or other user: a different entity.
    other, _ = create_or_get_entity(
        conn, "default", Mention("Maria", "Maria", "location", (0, 5)), NOW
    )
    theirs, _ = create_or_get_entity(conn, "bob", Mention("Maria", "Maria", "person", (0, 5)), NOW)
    assert len({first, other, theirs}) == 3


def test_entities_in_text_finds_known_names_in_any_case(conn: Any) -> None:
    m = add_memory(conn, "x")
    link_entities(conn, m, extract_entities("Dr. Patel and Jen live in New York"), "default", NOW)
    create_or_get_entity(conn, "default", Mention("@jenny", "Jen", "person", (0, 6)), NOW)
    got = entities_in_text(conn, "default", "does jen still see dr. patel in new york?")
    names = {entity_row(conn, i)["canonical_name"] for i in got}
    assert names == {"Jen", "Dr. Patel", "New York"}
    (jen,) = [i for i in got if entity_row(conn, i)["canonical_name"] == "Jen"]
    assert entities_in_text(conn, "default", "what about @jenny") == [jen]
    assert entities_in_text(conn, "default", "the and of") == []


def test_a_long_text_of_names_is_read_in_linear_time() -> None:
    """Issue 38: each name re-read all the text before it, and overlapping finds were checked
    against every kept one: a model's 64 KB of capitalised words took seconds per read."""
    text = "Aa Bb " * 11_000
    began = time.monotonic()
    found = extract_entities(text)
    assert found and time.monotonic() - began < 5
