"""A narrow filter (a period, a speaker, a person, a session) has its rows read once and scored
alone (`corpus.Reads.every`, `knn.among`): the nearest turns it sees must be exactly those of a
brute-force scan of every row it sees, with the vector index and with sqlite-vec alike, and
past `NARROW_ROWS` the search falls back to filtering the nearest of all, with the same answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dbutil import vector_store

from lobug.conversation import insert_turn
from lobug.memory.graph.entities import link_entities, link_turn_entities
from lobug.memory.graph.ner import Mention
from lobug.memory.query import QueryFilters, Reach
from lobug.memory.search import corpus
from lobug.memory.search.context import QuestionWords
from lobug.memory.search.corpus import MEMORIES, TURNS, Corpus, Reads, where_clause
from lobug.memory.search.hybrid import vector_knn
from lobug.memory.search.lexical import bm25_ranks
from lobug.memory.table import rows as store
from lobug.memory.vectors import knn
from lobug.storage.database import Database
from lobug.storage.vector_index import VectorIndex

DIM = 16
DAY = 86400.0
MARIA = Mention("Maria", "Maria", "person", (0, 5))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(vector_store(tmp_path / "narrow.db", DIM), vector_index=VectorIndex())
    database.open_sync()
    rng = np.random.default_rng(7)

    def fill(conn: Any) -> None:
        for at in range(600):
            user = "bob" if at % 7 == 0 else "default"  # another user's turns, never seen
            turn = insert_turn(
                conn, session_id=f"s{at // 20}", role=("user", "assistant")[at % 2],
                text=f"turn {at}", ts=at * DAY / 10, user_id=user,
                speaker="Noor" if at % 5 == 0 else None,
            )  # fmt: skip
            knn.put_turn_vector(conn, turn.id, [float(x) for x in rng.standard_normal(DIM)])
            if at % 9 == 0:
                link_turn_entities(conn, turn.id, [MARIA], user, turn.ts)
            if at % 2 == 0:  # and a fact, linked to Maria one time in three
                fact = store.insert_memory(
                    conn, user_id=user, kind="fact", content=f"fact {at}", now=turn.ts,
                    actor="test",
                )  # fmt: skip
                knn.put_memory_vector(conn, fact, [float(x) for x in rng.standard_normal(DIM)])
                if at % 3 == 0:
                    link_entities(conn, fact, [MARIA], user, turn.ts)

    database.write_sync(fill)
    assert database.vector_index is not None
    database.vector_index.build(database.writer)
    yield database
    database.close_sync()


FILTERS = {
    "period": Reach(said_in=(10 * DAY, 25 * DAY)),
    "speaker": Reach(speaker="Noor"),
    "person": Reach(filters=QueryFilters(person="maria")),
    "session": Reach(filters=QueryFilters(session_id="s3")),
    "person in a period": Reach(filters=QueryFilters(person="Maria"), said_in=(0, 30 * DAY)),
}


def scanned(conn: Any, flt: Reach, query: np.ndarray, k: int, corpus: Corpus = TURNS) -> list[int]:
    """Every row the filter sees, by SQL, ranked by exact cosine similarity (ties: lower id)."""
    where, params = where_clause(corpus, flt)
    rows = conn.execute(
        f"SELECT v.{corpus.vec_key}, v.embedding FROM {corpus.vectors} v"
        f" JOIN {corpus.table} d ON d.id = v.{corpus.vec_key} WHERE {where}",
        params,
    ).fetchall()
    unit = query / np.linalg.norm(query)
    scored = []
    for turn_id, blob in rows:
        vector = np.frombuffer(blob, dtype=np.float32)
        scored.append((-float(vector @ unit) / float(np.linalg.norm(vector)), int(turn_id)))
    return [turn_id for _, turn_id in sorted(scored)[:k]]


@pytest.mark.parametrize("name", FILTERS)
def test_a_narrow_filter_finds_what_a_scan_of_its_rows_finds(db: Database, name: str) -> None:
    flt = FILTERS[name]
    conn = db.writer
    assert corpus.narrow(TURNS, flt)
    rng = np.random.default_rng(3)
    for query in rng.standard_normal((10, DIM)):
        expected = scanned(conn, flt, query, 25)
        assert len(expected) >= 5  # the filter sees some rows, not all
        reads = Reads()
        found = vector_knn(conn, list(query), 25, corpus=TURNS, flt=flt, reads=reads)
        assert [i for i, _ in found] == expected
        assert reads.every(conn, TURNS, flt) is not None  # scored alone, not filtered
        conn.vector_index = None  # sqlite-vec's distances, row by row
        try:
            plain = vector_knn(conn, list(query), 25, corpus=TURNS, flt=flt)
        finally:
            conn.vector_index = db.vector_index
        assert [i for i, _ in plain] == expected


def test_a_person_filter_over_the_memories_is_narrow_too(db: Database) -> None:
    flt = Reach(filters=QueryFilters(person="Maria"))
    conn = db.writer
    assert corpus.narrow(MEMORIES, flt) and not corpus.narrow(MEMORIES, FILTERS["period"])
    for query in np.random.default_rng(9).standard_normal((5, DIM)):
        expected = scanned(conn, flt, query, 10, MEMORIES)
        assert len(expected) == 10
        reads = Reads()
        found = vector_knn(conn, list(query), 10, corpus=MEMORIES, flt=flt, reads=reads)
        assert [i for i, _ in found] == expected
        assert reads.every(conn, MEMORIES, flt) is not None


def test_past_narrow_rows_the_nearest_of_all_are_filtered_to_the_same_answer(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(corpus, "NARROW_ROWS", 20)
    conn = db.writer
    flt = FILTERS["speaker"]  # ~100 of the user's turns: more than 20
    query = np.random.default_rng(5).standard_normal(DIM)
    reads = Reads()
    found = vector_knn(conn, list(query), 25, corpus=TURNS, flt=flt, reads=reads)
    assert reads.every(conn, TURNS, flt) is None
    assert [i for i, _ in found] == scanned(conn, flt, query, 25)


def test_once_its_rows_are_read_a_narrow_filter_reads_nothing_more(db: Database) -> None:
    """`visible` and `replies` test ids against the rows read: no statement per candidate."""
    conn = db.writer
    flt = FILTERS["person"]
    where, params = where_clause(TURNS, flt)
    sees = {int(r[0]) for r in conn.execute(f"SELECT d.id FROM turns d WHERE {where}", params)}
    reads = Reads()
    assert reads.every(conn, TURNS, flt) == sees
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        assert reads.visible(conn, TURNS, flt, range(1, 700)) == sees
    finally:
        conn.set_trace_callback(None)
    assert statements == []
    marks = ",".join("?" * len(sees))
    asked = [
        r[0] for r in conn.execute(f"SELECT reply_to FROM turns WHERE id IN ({marks})", [*sees])
    ]
    asked = sorted({a for a in asked if a is not None})
    replying = {
        int(r[0])
        for r in conn.execute(
            f"SELECT d.id FROM turns d WHERE d.reply_to IN ({','.join('?' * len(asked))})"
            f" AND {where}",
            (*asked, *params),
        )
    }
    assert replying and reads.replies(conn, flt, asked) == replying


@pytest.fixture
def worded(tmp_path: Path) -> Iterator[Database]:
    """600 turns saying "kayak": the shortest (bm25's best) are nobody's in particular; Maria's,
    session s7's, Noor's and those of days 10-12 say it at more length."""
    database = Database(vector_store(tmp_path / "worded.db", DIM))
    database.open_sync()

    def fill(conn: Any) -> None:
        for at in range(600):
            named = at % 9 == 0 or at // 20 == 7 or at % 5 == 0 or 100 <= at < 130
            longer = f"we took the kayak out again {' on' * (at % 11)}"
            text = longer if named else f"kayak {at}"
            turn = insert_turn(
                conn, session_id=f"s{at // 20}", role="user", text=text, ts=at * DAY / 10,
                speaker="Noor" if at % 5 == 0 else None,
            )  # fmt: skip
            if at % 9 == 0:
                link_turn_entities(conn, turn.id, [MARIA], "default", turn.ts)

    database.write_sync(fill)
    yield database
    database.close_sync()


# The worded store's narrow filters: the turns each names say "kayak" at more length.
WORDED = {
    "person": Reach(filters=QueryFilters(person="Maria")),
    "session": Reach(filters=QueryFilters(session_id="s7")),
    "speaker": Reach(speaker="Noor"),
    "period": Reach(said_in=(10 * DAY, 13 * DAY)),
}


@pytest.mark.parametrize("name", WORDED)
def test_a_narrow_filter_ranks_the_words_among_its_own_rows(worded: Database, name: str) -> None:
    """The context list's words (`QuestionWords.best`) under a narrow filter are the best of the
    filter's rows, as ranking only those rows by bm25 finds them, not the few of the whole
    log's best that the filter happens to see (the shortest turns, nobody's, are those)."""
    flt = WORDED[name]
    conn = worded.writer
    where, params = where_clause(TURNS, flt)
    ranked = {
        int(r[0]): float(r[1])
        for r in conn.execute(
            "SELECT turns_fts.rowid, -bm25(turns_fts) FROM turns_fts CROSS JOIN turns d"
            " ON d.id = turns_fts.rowid WHERE turns_fts MATCH 'kayak' AND " + where,
            params,
        )
    }
    assert len(ranked) >= 15
    best = QuestionWords("default", "Where is the kayak?", reads=Reads()).best(conn, 10, flt)
    assert len(best) == 10
    assert all(ranked[i] == score for i, score in best.items())
    assert sorted(best.values(), reverse=True) == sorted(ranked.values(), reverse=True)[:10]


@pytest.mark.parametrize("name", ["person", "session"])
def test_a_narrow_filter_ranks_its_bm25_list_in_one_read(worded: Database, name: str) -> None:
    """The `bm25` list under a narrow filter is the best of its rows by bm25 (ties: the newest),
    read in one FTS5 query once the rows are known, where filtering the best of all widened
    the net again and again (a person in a ninth of the turns: four rankings of every match)."""
    flt = WORDED[name]
    conn = worded.writer
    where, params = where_clause(TURNS, flt)
    expected = [
        int(r[0])
        for r in conn.execute(
            "SELECT turns_fts.rowid FROM turns_fts CROSS JOIN turns d ON d.id = turns_fts.rowid"
            " WHERE turns_fts MATCH 'kayak' AND " + where + " ORDER BY bm25(turns_fts),"
            " turns_fts.rowid DESC LIMIT 10",
            params,
        )
    ]
    reads = Reads()
    reads.every(conn, TURNS, flt)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        found = bm25_ranks(conn, '"kayak"', 10, corpus=TURNS, flt=flt, reads=reads)
    finally:
        conn.set_trace_callback(None)
    assert found == expected and len(found) == 10
    assert len([s for s in statements if "MATCH" in s]) == 1, statements
