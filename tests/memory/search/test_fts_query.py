"""FTS5 query building: any text gives a MATCH expression that never raises, on the real schema."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lobug.memory.search.fts import (
    MAX_TOKENS,
    build_fts_query,
    fold,
    fts_available,
    fts_term,
    like_patterns,
    query_tokens,
    scan_words,
    stem,
    token_matches,
)
from lobug.memory.search.lexical import matcher
from lobug.memory.search.wordforms import FORMS
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect, escape_like

DOCS = [
    "The user lives in Seattle.",
    "The user's sister Jen moved to Denver.",
    "Dentist appointment on Friday at 3pm.",
    "नमस्ते दुनिया",
    "東京 に 住んでいる",
    "Price is 50% off_today",
    "We adopted a puppy and went camping with her.",
]


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    db = connect(tmp_path_factory.mktemp("fts") / "fts.db")
    migrate(db)
    for i, text in enumerate(DOCS):
        db.execute(
            "INSERT INTO memories (content, created_at, updated_at) VALUES (?, ?, ?)",
            (text, float(i), float(i)),
        )
    yield db
    db.close()


def match(conn: Any, query: str) -> list[int]:
    rows = conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid", (query,)
    ).fetchall()
    return [r[0] for r in rows]


def assert_or_of_its_words(conn: Any, text: str) -> None:
    """The expression runs, is None exactly when no search word is left, and matches exactly
    the rows one of its words matches on its own (user syntax never turns into operators)."""
    words = query_tokens(text)
    query = build_fts_query(text)
    assert (query is None) == (not words)
    if query is not None:
        alone = set().union(*(match(conn, fts_term(word)) for word in words))
        assert set(match(conn, query)) == alone


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300))
def test_any_text_is_an_or_of_its_words(conn: Any, text: str) -> None:
    assert_or_of_its_words(conn, text)


FTS_SYNTAX = st.sampled_from(
    [
        '"',
        "'",
        "*",
        "^",
        ":",
        "(",
        ")",
        "-",
        "+",
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "NEAR(",
        ",",
        "content:",
        "{",
        "}",
        "\x00",
        "\\",
        "%",
        "_",
        " ",
        "\n",
        "🙂",
        "é",
        "ß",
        "\u0301",
    ]
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(FTS_SYNTAX, st.text(max_size=6)), max_size=40).map("".join))
def test_syntax_soup_is_an_or_of_its_words(conn: Any, text: str) -> None:
    assert_or_of_its_words(conn, text)


@pytest.mark.parametrize(
    "text",
    [
        '"unterminated',
        'seattle" OR "1"="1',
        "NEAR(seattle denver, 2)",
        "content: seattle",
        "^seattle*",
        "seattle AND NOT denver",
        "(((seattle",
        "seattle)",
        "-seattle +denver",
        "sea*tle",
        "\x00seattle\x00",
        "🙂🙂 seattle 🙂",
        " ".join(["seattle"] * 10_000),
        "seattle " + "🙂" * 50_000,
    ],
)
def test_hostile_strings(conn: Any, text: str) -> None:
    query = build_fts_query(text)
    assert query is not None
    rows = match(conn, query)
    # Wherever "seattle" stands as a word, the row holding it is found; nothing is syntax.
    assert (1 in rows) == bool(re.search(r"(?<![a-z])seattle(?![a-z])", text.lower()))


@pytest.mark.parametrize("text", ["seattle" * 500, "a" * 100_000])
def test_giant_words_are_dropped(text: str) -> None:
    assert build_fts_query(text) is None


def test_operators_are_words_not_syntax(conn: Any) -> None:
    # "NOT" would exclude Seattle if it were an operator; quoted, it is just a word.
    assert match(conn, build_fts_query("NOT seattle") or "") == [1]
    assert build_fts_query("NEAR denver") == '"near"* OR "denver"*'
    assert match(conn, build_fts_query("Where did JEN move?") or "") == [2]


def test_stopwords_dropped_and_none_when_nothing_left() -> None:
    assert build_fts_query("what is the name of the dog") == '"name"* OR "dog"'
    assert build_fts_query("name dog", prefix=False) == '"name" OR "dog"'
    assert build_fts_query("what is it?") is None
    assert build_fts_query("") is None
    assert build_fts_query("!!! ??? 🙂 ***") is None


def test_tokens_distinct_casefolded_and_capped() -> None:
    assert query_tokens("Seattle SEATTLE seattle Straße") == ["seattle", "strasse"]
    many = " ".join(f"w{i}" for i in range(100))
    assert len(query_tokens(many)) == MAX_TOKENS
    assert query_tokens("x" * 65 + " ok") == ["ok"]


def test_non_latin_scripts_match(conn: Any) -> None:
    assert match(conn, build_fts_query("नमस्ते") or "") == [4]
    assert match(conn, build_fts_query("東京") or "") == [5]


def like_pattern(text: str) -> str:
    return "%" + escape_like(text) + "%"


def test_like_pattern_escapes() -> None:
    assert like_pattern("50% off_today") == "%50\\% off\\_today%"
    assert like_pattern("back\\slash") == "%back\\\\slash%"
    assert like_patterns("the 50% deal") == ["%50%", "%deal%"]


def test_like_fallback_matches_literally(conn: Any) -> None:
    rows = conn.execute(
        "SELECT id FROM memories WHERE content LIKE ? ESCAPE '\\'", (like_pattern("50% off_"),)
    ).fetchall()
    assert [r[0] for r in rows] == [6]
    rows = conn.execute(
        "SELECT id FROM memories WHERE content LIKE ? ESCAPE '\\'", (like_pattern("x%"),)
    ).fetchall()
    assert rows == []


def test_fts_available(conn: Any, tmp_path: Any) -> None:
    assert fts_available(conn)
    assert fts_available(conn, "turns_fts")
    bare = connect(tmp_path / "bare.db")
    assert not fts_available(bare)
    bare.close()


def test_prefix_for_words_of_four_letters_or_more(conn: Any) -> None:
    # "move"* finds "moved"; a three-letter word stays exact so "jen" does not find "jenny".
    assert match(conn, build_fts_query("move") or "") == [2]
    assert build_fts_query("jen") == '"jen"'
    assert token_matches("move", "moved") and not token_matches("jen", "jenny")
    assert token_matches("jen", "jen")


def test_a_prefix_drops_the_inflection_first(conn: Any) -> None:
    # "adoption" finds "adopted", "camps" and "camping" find "camping"; "games" keeps "game"
    # (four letters at least), and "-er" stays ("career" does not look for "care").
    assert build_fts_query("adoption") == '"adopt"*'
    assert match(conn, build_fts_query("adoption") or "") == [7]
    assert match(conn, build_fts_query("camps") or "") == [7]
    assert stem("games") == "game" and stem("career") == "career"
    assert token_matches("adoption", "adopted") and not token_matches("career", "care")


def test_scan_words_fold_like_the_index() -> None:
    assert scan_words("Café déjà-vu, NAÏVE!") == ["cafe", "deja", "vu", "naive"]
    assert fold("Ångström") == "Angstrom"


def test_the_words_of_now_match_no_statement() -> None:
    """The question "Where does Liam work now?" asks for the latest statement (`asks_now`); as
    a word, "now" matched the stale one ("a payroll officer … for 8 years now")."""
    assert build_fts_query("Where does Liam work now?") == '"liam"* OR "work"*'
    assert build_fts_query("Does Aisha still paint, currently?") == '"aisha"* OR "paint"*'


def test_a_word_finds_the_forms_its_prefix_cannot(conn: Any) -> None:
    """The question asks with the base form, the turn tells the past: "What did they win?"
    is answered by "We won the final", "buy" by "bought", "children" by "child"."""
    assert build_fts_query("win") == '("win" OR "won" OR "wins" OR "winning")'
    # A 4+ letter word's own prefix already finds its -s and -ing forms.
    assert build_fts_query("swim") == '("swim"* OR "swam" OR "swum")'
    told = ["We won the final on penalties.", "I bought Leo a kite.", "One child is ill."]
    ids = []
    for text in told:
        cur = conn.execute(
            "INSERT INTO memories (content, created_at, updated_at) VALUES (?, 0, 0)", (text,)
        )
        ids.append(cur.lastrowid)
    try:
        assert match(conn, build_fts_query("What did they win?") or "") == [ids[0]]
        assert match(conn, build_fts_query("what did I buy") or "") == [ids[1]]
        assert match(conn, build_fts_query("which children") or "") == [ids[2]]
        assert match(conn, build_fts_query("winter") or "") == []  # not a form of "win"
    finally:
        conn.executemany("DELETE FROM memories WHERE id = ?", [(i,) for i in ids])
    assert token_matches("win", "won") and token_matches("making", "made")
    assert not token_matches("win", "winter") and not token_matches("find", "foundation")


def test_fts5_and_the_python_counts_match_the_same_forms(tmp_path: Any) -> None:
    """The lead and the minimum-should-match filter count words in Python (`token_matches`,
    `lexical.matcher`); they must find exactly the rows FTS5 finds, forms included."""
    db = connect(tmp_path / "forms.db")
    migrate(db)
    words = sorted(FORMS)[::7] + ["winter", "foundation", "won't", "Swimming!", "adopted"]
    docs = [" ".join(words[(i * 5 + j * 11) % len(words)] for j in range(5)) for i in range(60)]
    db.executemany(
        "INSERT INTO memories (content, created_at, updated_at) VALUES (?, 0, 0)",
        [(d,) for d in docs],
    )
    for word in words:
        for token in query_tokens(word):
            found = set(match(db, fts_term(token)))
            held = {
                i + 1
                for i, d in enumerate(docs)
                if any(token_matches(token, w) for w in scan_words(d))
            }
            assert found == held, token
            assert {i + 1 for i, d in enumerate(docs) if matcher([token])(d)} == held, token
    db.close()
