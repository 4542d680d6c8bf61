"""Words in thousands of rows do not drive the lexical list (issue 13), on a real FTS5 index.

Like a search engine's "common terms" cut-off: a common word still counts toward a row's
score, but only in rows that share an uncommon word of the question too; a question made of
common words only needs all of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lobug.conversation import insert_turn
from lobug.memory.query import Reach
from lobug.memory.search import fts
from lobug.memory.search.corpus import TURNS
from lobug.memory.search.lexical import text_ranks
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect


@pytest.fixture
def conn(tmp_path: Path) -> Any:
    conn = connect(tmp_path / "w.db")
    migrate(conn)
    conn.execute("BEGIN")
    for i in range(fts.COMMON_WORD_ROWS + 100):  # "kettle" and "morning" are common
        insert_turn(conn, session_id="s", role="user", text=f"the kettle this morning {i}", ts=i)
    said = {
        "descaler": "I bought a kettle descaler",
        "vinegar": "vinegar works as a descaler too",
        "both": "the descaler and the vinegar",
    }
    ids = {}
    for name, text in said.items():
        ids[name] = insert_turn(conn, session_id="s", role="user", text=text, ts=5000.0).id
    conn.execute("COMMIT")
    conn.ids = ids
    yield conn
    conn.close()


def test_the_vocabulary_tells_common_words(conn: Any) -> None:
    tokens = fts.query_tokens("kettle descaler morning mornings morningside")
    # "morningside" as a prefix matches no stored word: not common; "mornings" looks for
    # "morning" (fts.stem) and is as common as it.
    assert fts.common_words(conn, "turns_fts", tokens) == {"kettle", "morning", "mornings"}


def test_common_words_join_only_groups_with_an_uncommon_word() -> None:
    common = {"kettle"}
    assert fts.min_match_query(["kettle", "descaler"], 2, common) == '("kettle"* AND "descaler"*)'
    assert fts.min_match_query(["kettle", "descaler"], 1, common) == '"descaler"*'
    assert fts.min_match_query(["kettle", "morning"], 2, {"kettle", "morning"}) == (
        '"kettle"* AND "morn"*'  # "morning" without its inflection (fts.stem)
    )
    # Without common words: every pair, as before.
    assert fts.min_match_query(["a1b2", "c3d4", "e5f6"], 2).count(" OR ") == 2


def test_a_question_with_one_uncommon_word_finds_its_rows_only(conn: Any) -> None:
    flt = Reach()
    found = text_ranks(
        conn, "how do I clean the kettle with a descaler", 10, corpus=TURNS, flt=flt, min_words=2
    )
    assert found == [conn.ids["descaler"]]  # the only row with two of the words
    one = text_ranks(
        conn, "kettle descaler vinegar", 10, corpus=TURNS, flt=flt, min_words=1
    )  # any uncommon word will do; "kettle" alone does not make a hit
    assert set(one) == set(conn.ids.values())


def test_a_question_of_common_words_needs_all_of_them(conn: Any) -> None:
    found = text_ranks(
        conn, "the kettle this morning", 2000, corpus=TURNS, flt=Reach(), min_words=1
    )
    assert len(found) == fts.COMMON_WORD_ROWS + 100
    assert conn.ids["descaler"] not in found  # holds "kettle" but not "morning"


def test_visible_ids_look_rows_up_by_rowid_without_statistics(conn: Any) -> None:
    """Before ANALYZE the planner preferred the user_id index for `id IN (…) AND user_id = ?`
    and scanned every turn of the user per call (issue 13: 6.8 ms at 100k turns)."""
    from lobug.memory.search.corpus import visible_ids

    assert (
        conn.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()
        is None
    )
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    ids = list(conn.ids.values())
    assert visible_ids(conn, TURNS, Reach(exclude_session="other"), ids) == set(ids)
    conn.set_trace_callback(None)
    (sql,) = [s for s in seen if "NOT INDEXED" in s]
    plan = " ".join(str(tuple(r)) for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
    assert "INTEGER PRIMARY KEY" in plan and "idx_turns_user" not in plan


def test_a_word_written_after_a_question_is_found_by_the_next(conn: Any) -> None:
    """A word no row holds is left out of the match (`fts.found_words`); the counts a daemon
    reader remembers (`conn.memo`) never keep it out once a row says it."""
    conn.memo = {}
    assert fts.found_words(conn, "turns_fts", ["teapot", "descaler"]) == ["descaler"]
    insert_turn(conn, session_id="s", role="user", text="the teapot is cracked", ts=6000.0)
    assert fts.found_words(conn, "turns_fts", ["teapot", "descaler"]) == ["teapot", "descaler"]
    assert fts.word_rows(conn, "turns_fts_vocab", "descaler") == 3  # remembered: it was there
