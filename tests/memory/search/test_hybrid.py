"""Hybrid retrieval on a real database: each ranked list, the filters, fusion and re-scoring."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lobug.memory.graph.entities import Mention, link_entities, link_turn_entities
from lobug.memory.query import Reach
from lobug.memory.search.fts import build_fts_query
from lobug.memory.search.hybrid import (
    MEMORIES,
    TURNS,
    SearchHit,
    bm25_ranks,
    entity_ranks,
    fuse_and_rescore,
    ranked_lists,
    text_ranks,
    vector_knn,
    vector_ranks,
)
from lobug.memory.search.scoring import ScoringWeights
from lobug.memory.table.salience import DAY
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect
from lobug.storage.vectors import create_vector_tables, pack

NOW = 1_750_000_000.0


def unit(*xs: float) -> list[float]:
    vec = list(xs) + [0.0] * (4 - len(xs))
    norm = sum(x * x for x in vec) ** 0.5
    return [x / norm for x in vec]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    db = connect(tmp_path / "h.db")
    migrate(db)
    create_vector_tables(db, 4)
    yield db
    db.close()


def hybrid_search(
    conn: Any,
    text: str,
    vec: list[float] | None,
    k: int = 10,
    *,
    corpus: Any = MEMORIES,
    flt: Reach | None = None,
    weights: ScoringWeights | None = None,
    now: float | None = None,
) -> list[SearchHit]:
    """The two steps the search runner takes per corpus: the ranked lists, then the fusion."""
    lists = ranked_lists(conn, text, vec, corpus=corpus, flt=flt, weights=weights)
    hits, _ = fuse_and_rescore(conn, lists, corpus=corpus, weights=weights, now=now)
    return hits[:k]


def memory(conn: Any, content: str, vec: list[float] | None = None, **cols: Any) -> int:
    values = {"content": content, "created_at": NOW, "updated_at": NOW, **cols}
    cur = conn.execute(
        f"INSERT INTO memories ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
        tuple(values.values()),
    )
    memory_id = int(cur.lastrowid)
    if vec is not None:
        conn.execute(
            "INSERT INTO memory_vectors (memory_id, embedding) VALUES (?, ?)",
            (memory_id, pack(vec)),
        )
    return memory_id


def turn(
    conn: Any, text: str, vec: list[float], ts: float, session: str = "s1", role: str = "user"
) -> int:
    cur = conn.execute(
        "INSERT INTO turns (session_id, role, text, ts) VALUES (?, ?, ?, ?)",
        (session, role, text, ts),
    )
    turn_id = int(cur.lastrowid)
    conn.execute(
        "INSERT INTO turn_vectors (turn_id, embedding) VALUES (?, ?)", (turn_id, pack(vec))
    )
    return turn_id


def test_vector_knn_nearest_first_with_distances(conn: Any) -> None:
    a = memory(conn, "a", unit(1, 0))
    b = memory(conn, "b", unit(1, 1))
    c = memory(conn, "c", unit(0, 1))
    hits = vector_knn(conn, unit(1, 0.1), 3)
    assert [h[0] for h in hits] == [a, b, c]
    assert hits[0][1] < hits[1][1] < hits[2][1]
    assert vector_ranks(conn, unit(1, 0.1), 2) == [a, b]


def test_filters_apply_before_k(conn: Any) -> None:
    # The nearest rows are invisible to this caller; k must still be filled from visible ones.
    for status in ("archived", "soft_deleted"):
        memory(conn, "gone", unit(1, 0), status=status)
    memory(conn, "theirs", unit(1, 0), user_id="bob")
    memory(conn, "secret", unit(1, 0), store="private", category="health")
    visible = memory(conn, "shared one", unit(1, 0.5), store="shared", category="home")
    flt = Reach(stores=("shared", "social"), categories=("home",))
    assert vector_ranks(conn, unit(1, 0), 1, flt=flt) == [visible]
    assert bm25_ranks(conn, build_fts_query("one secret gone theirs"), 10, flt=flt) == [visible]
    assert vector_ranks(conn, unit(1, 0), 5, flt=Reach(stores=())) == []


def test_bm25_orders_by_relevance_and_tolerates_no_query(conn: Any) -> None:
    weak = memory(conn, "The user walks the dog and feeds the cat and waters plants.")
    strong = memory(conn, "The dog's vet is Dr. Okafor.")
    assert bm25_ranks(conn, build_fts_query("dog vet"), 10) == [strong, weak]
    assert bm25_ranks(conn, None, 10) == []
    assert text_ranks(conn, "what is it?", 10) == []


def test_prefix_matching_and_minimum_words(conn: Any) -> None:
    lessons = memory(conn, "Leo has piano lessons on Thursdays.")
    kids = memory(conn, "Tell me a joke for the kids.")
    both = memory(conn, "The kids can't have nuts.")
    assert text_ranks(conn, "piano lesson", 10) == [lessons]  # "lesson"* finds "lessons"
    assert set(text_ranks(conn, "which kids can't have nuts", 10)) == {kids, both}
    assert text_ranks(conn, "which kids can't have nuts", 10, min_words=2) == [both]
    # A one-word question cannot ask for two words.
    assert text_ranks(conn, "nuts", 10, min_words=2) == [both]


def test_like_fallback_without_fts(tmp_path: Path) -> None:
    db = connect(tmp_path / "nofts.db")
    migrate(db)
    for name in ("trg_memories_ai", "trg_memories_ad", "trg_memories_au"):
        db.execute(f"DROP TRIGGER {name}")
    db.execute("DROP TABLE memories_fts")
    one = memory(db, "The dog eats salmon treats.")
    two = memory(db, "The dog's vet is Dr. Okafor; the vet likes the dog.")
    memory(db, "100% unrelated_text")
    assert text_ranks(db, "dog vet", 10) == [two, one]
    assert text_ranks(db, "dog vet", 10, min_words=2) == [two]
    assert text_ranks(db, "100%", 10) != []  # literal %, no wildcard surprise
    assert text_ranks(db, "_", 10) == []
    db.close()


def test_entity_ranks_for_memories(conn: Any) -> None:
    jen = Mention("Jen", "Jen", "person", (0, 3))
    denver = Mention("Denver", "Denver", "location", (0, 6))
    old = memory(conn, "Jen visited.", created_at=NOW - 10 * DAY)
    new = memory(conn, "Jen called.", created_at=NOW)
    both = memory(conn, "Jen moved to Denver.", created_at=NOW - 20 * DAY)
    link_entities(conn, old, [jen], "default", NOW)
    link_entities(conn, new, [jen], "default", NOW)
    link_entities(conn, both, [jen, denver], "default", NOW)
    # More named entities first, then newest.
    assert entity_ranks(conn, "does jen like denver?", 10) == [both, new, old]
    assert entity_ranks(conn, "nobody here", 10) == []


def test_entity_ranks_for_turns_match_names_in_text(conn: Any) -> None:
    memory_row = memory(conn, "x")
    link_entities(conn, memory_row, [Mention("@jenny", "Jen", "person", (0, 6))], "default", NOW)
    t1 = turn(conn, "Jen is coming over.", unit(1), NOW - DAY)
    turn(conn, "Nothing to see.", unit(1), NOW)
    t3 = turn(conn, "Ask @jenny about it.", unit(1), NOW)
    assert entity_ranks(conn, "when is jen here", 10, corpus=TURNS) == [t3, t1]


def test_entity_ranks_for_turns_read_their_entity_links(conn: Any) -> None:
    """Seed 003: turns linked through `turn_entities` (m013: `embed_turn`, the enrichment)
    count like a name in the text; a turn linked to two named entities ranks first."""
    jen = Mention("Jen", "Jen", "person", (0, 3))
    lisbon = Mention("Lisbon", "Lisbon", "location", (0, 6))
    link_entities(conn, memory(conn, "x"), [jen, lisbon], "default", NOW)
    linked = turn(conn, "She flew there on Monday.", unit(1), NOW - DAY)  # linked, not named
    link_turn_entities(conn, linked, [jen, lisbon], "default", NOW)
    named = turn(conn, "Jen is back.", unit(1), NOW)
    turn(conn, "Nothing to see.", unit(1), NOW)
    assert entity_ranks(conn, "did jen go to lisbon", 10, corpus=TURNS) == [linked, named]
    theirs = Reach(user_id="bob")
    assert entity_ranks(conn, "did jen go to lisbon", 10, corpus=TURNS, flt=theirs) == []


def test_hybrid_fuses_and_explains(conn: Any) -> None:
    both = memory(conn, "The user's dog Biscuit is allergic to chicken.", unit(1, 0.2))
    vec_only = memory(conn, "The beagle cannot eat poultry.", unit(1, 0))
    bm25_only = memory(conn, "Chicken soup recipe for the dog show.", unit(0, 1))
    hits = hybrid_search(conn, "dog chicken allergy", unit(1, 0.1), k=3)
    assert [h.id for h in hits][0] == both
    assert {h.id for h in hits} == {both, vec_only, bm25_only}
    top = hits[0].explain()
    assert set(top["ranks"]) == {"vector", "bm25", "entity"} - {"entity"}
    assert 0 < hits[-1].score <= hits[0].score <= 1.0


def test_hybrid_without_vectors_or_query_vector(conn: Any) -> None:
    only = memory(conn, "The user's dog is named Biscuit.")
    assert [h.id for h in hybrid_search(conn, "dog name", None)] == [only]
    conn.execute("DROP TABLE memory_vectors")
    assert [h.id for h in hybrid_search(conn, "dog name", unit(1))] == [only]


def test_rescore_puts_the_newer_of_two_equals_first(conn: Any) -> None:
    old = memory(conn, "The user lives in Portland.", unit(1, 0.5), created_at=NOW - 120 * DAY)
    new = memory(conn, "The user lives in Denver.", unit(1, 0.5), created_at=NOW - 2 * DAY)
    plain = hybrid_search(conn, "where does the user live", unit(1, 0.5), k=2)
    assert {h.id for h in plain} == {old, new}
    rescored = hybrid_search(conn, "where does the user live", unit(1, 0.5), k=2, now=NOW)
    assert [h.id for h in rescored] == [new, old]
    breakdown = rescored[0].explain()["breakdown"]
    assert breakdown["memory"]["age_days"] == pytest.approx(2.0)


def test_rescore_relation_boost_counts_edges_inside_the_results(conn: Any) -> None:
    a = memory(conn, "The user plays tennis.", unit(1, 0.5))
    b = memory(conn, "The user plays chess.", unit(1, 0.5))
    c = memory(conn, "The user reads poems.", unit(0, 1))
    conn.execute(
        "INSERT INTO relations (from_id, to_id, strength, created_at) VALUES (?, ?, 0.9, ?)",
        (b, c, NOW),
    )
    weights = ScoringWeights(w_rel=0.5)
    hits = {
        h.id: h
        for h in hybrid_search(conn, "user plays", unit(1, 0.5), k=3, now=NOW, weights=weights)
    }
    assert hits[b].breakdown is not None and hits[b].breakdown.relation_boost == 0.45
    assert hits[a].breakdown is not None and hits[a].breakdown.relation_boost == 0.0
    assert c in hits  # its edge partner made it into the results


def test_turn_search_filters_sessions_and_skips_the_entity_list(conn: Any) -> None:
    here = turn(conn, "Biscuit needs his booster shot.", unit(1), NOW, session="now")
    there = turn(
        conn, "Biscuit needs a booster on Friday.", unit(1, 0.1), NOW - DAY, session="before"
    )
    hits = hybrid_search(
        conn, "biscuit booster", unit(1), corpus=TURNS, flt=Reach(exclude_session="now")
    )
    assert [h.id for h in hits] == [there]
    assert set(hits[0].fused.ranks) <= {"vector", "bm25", "context"}
    assert here not in [h.id for h in hits]
    assert TURNS.lists == ("vector", "bm25", "context") and "entity" in MEMORIES.lists


@pytest.mark.parametrize("text", ['"', "NEAR(", "*", "🙂" * 100, "x" * 10_000, "", "AND OR"])
def test_hostile_queries_are_plain_words(conn: Any, text: str) -> None:
    tea = memory(conn, "The user likes tea.", unit(1))
    said = turn(conn, "I like tea.", unit(1), NOW)
    # FTS5 syntax in the query is quoted away: the vector still finds the memory, and no word
    # list matches (nothing stored shares a word with these queries).
    (hit,) = hybrid_search(conn, text, unit(1), now=NOW)
    assert hit.id == tea and set(hit.fused.ranks) == {"vector"}
    (hit,) = hybrid_search(conn, text, unit(1), corpus=TURNS)
    # The turns' context list ranks by meaning too; no word list matched.
    assert hit.id == said and set(hit.fused.ranks) == {"vector", "context"}


def test_explain_is_json_serialisable(conn: Any) -> None:
    memory(conn, "The user likes tea.", unit(1))
    (hit,) = hybrid_search(conn, "tea", unit(1), now=NOW)
    explained = hit.explain()
    assert json.loads(json.dumps(explained)) == explained
    assert explained["breakdown"]["final"] == hit.score


def test_rescore_relation_boost_counts_edges_beyond_the_candidates(conn: Any) -> None:
    """Seed 001 §2 (issue 12): an edge to a memory the search did not find still counts;
    one to a soft-deleted memory does not."""
    a = memory(conn, "The user plays tennis.", unit(1, 0.5))
    far = memory(conn, "The user collects stamps.", unit(0, 1))
    gone = memory(conn, "The user plays squash.", unit(0, 1))
    for other in (far, gone):
        conn.execute(
            "INSERT INTO relations (from_id, to_id, strength, created_at) VALUES (?, ?, ?, ?)",
            (a, other, 0.8 if other == far else 0.95, NOW),
        )
    conn.execute("UPDATE memories SET status = 'soft_deleted' WHERE id = ?", (gone,))
    weights = ScoringWeights(w_rel=0.5)
    hits = {
        h.id: h for h in hybrid_search(conn, "tennis", unit(1, 0.5), k=1, now=NOW, weights=weights)
    }
    assert list(hits) == [a]  # the stamps are not a candidate of this search
    assert hits[a].breakdown is not None and hits[a].breakdown.relation_boost == 0.4
