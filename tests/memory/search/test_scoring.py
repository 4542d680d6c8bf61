"""Scoring formulas: RRF, Ebbinghaus and the re-score (seed 000: table/test_salience)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lobug.memory.search.asking import only_asks
from lobug.memory.search.scoring import (
    DEMOTED,
    Fused,
    ScoringWeights,
    fuse,
    list_ranks,
    rescore,
    rrf,
    status_weight,
)
from lobug.memory.table.salience import DAY

NOW = 1_750_000_000.0
W = ScoringWeights()


def test_rrf_and_ranks() -> None:
    lists = {"vector": [1, 2, 3], "bm25": [3, 1], "entity": []}
    scores = rrf(lists, k=60)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[2] == pytest.approx(1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert list_ranks(lists) == {
        1: {"vector": 1, "bm25": 2},
        2: {"vector": 2},
        3: {"vector": 3, "bm25": 1},
    }


def test_rrf_counts_a_repeated_id_once_at_its_best_rank() -> None:
    assert rrf({"a": [5, 5, 6]}, k=60) == {5: pytest.approx(1 / 61), 6: pytest.approx(1 / 62)}


def test_weighted_rrf() -> None:
    scores = rrf({"vector": [1], "bm25": [2]}, k=60, weights={"vector": 2.0})
    assert scores[1] == pytest.approx(2 / 61)
    assert scores[2] == pytest.approx(1 / 61)


def test_fuse_orders_and_normalises() -> None:
    fused = fuse({"vector": [1, 2], "bm25": [1, 3]})
    assert [f.id for f in fused] == [1, 2, 3]
    assert fused[0].rrf_norm == pytest.approx(1.0)
    assert fused[0].ranks == {"vector": 1, "bm25": 1}
    assert fused[1].rrf_norm == pytest.approx((1 / 62) / (2 / 61))


@given(
    st.dictionaries(
        st.sampled_from(["v", "b", "e"]), st.lists(st.integers(0, 30), max_size=20), max_size=3
    )
)
def test_rrf_norm_within_unit_interval(lists: dict[str, list[int]]) -> None:
    for f in fuse(lists):
        assert 0.0 < f.rrf_norm <= 1.0 + 1e-12


def fused(norm: float) -> Fused:
    return Fused(id=1, rrf=norm * 2 / 61, rrf_norm=norm, ranks={"vector": 1})


def test_rescore_terms() -> None:
    row = {"hits": 0, "importance": 0.5, "created_at": NOW, "confidence": 1.0}
    score, b = rescore(fused(1.0), row, W, NOW, related_strength=0.8)
    memory_norm = (0 + 1.0 + 1.0) / W.salience.most
    assert b.memory_norm == pytest.approx(memory_norm)
    assert b.confidence_mult == 1.0
    assert b.relation_boost == pytest.approx(0.08)
    assert b.retrievability == 1.0  # seen now
    assert score == pytest.approx(1.0 + W.w_memory * memory_norm + W.w_strength + 0.08)
    assert b.final == score
    assert b.strength == pytest.approx(W.w_strength)
    assert b.as_dict()["memory"]["hits"] == 0


def test_a_timeless_score_shows_retrievability_adding_nothing() -> None:
    """A question about the past ranks without a recency prior: its explain still shows how
    retrievable the row is, and that it added nothing (`strength`, the memory's recency)."""
    row = {"hits": 0, "importance": 0.5, "created_at": NOW - 30 * 86_400.0, "confidence": 1.0}
    score, b = rescore(fused(1.0), row, W.timeless(), NOW)
    assert 0.0 < b.retrievability < 1.0
    assert b.strength == 0.0 and b.memory.recency == 0.0
    assert score == pytest.approx(1.0 + W.w_memory * b.memory_norm)


def test_confidence_multiplier_has_a_floor() -> None:
    row = {"importance": 0.5, "created_at": NOW, "confidence": 0.0}
    _, b = rescore(fused(1.0), row, W, NOW)
    assert b.confidence_mult == 0.5


def test_recency_breaks_ties_but_not_relevance() -> None:
    old = {"importance": 0.5, "created_at": NOW - 60 * DAY}
    new = {"importance": 0.5, "created_at": NOW - 1 * DAY}
    tie_old, _ = rescore(fused(0.95), old, W, NOW)
    tie_new, _ = rescore(fused(0.95), new, W, NOW)
    assert tie_new > tie_old
    # A clearly more relevant old memory still wins over a barely relevant new one.
    strong_old, _ = rescore(fused(0.95), old, W, NOW)
    weak_new, _ = rescore(fused(0.6), new, W, NOW)
    assert strong_old > weak_new


def test_relation_strength_is_clamped() -> None:
    row = {"created_at": NOW}
    s1, _ = rescore(fused(0.5), row, W, NOW, related_strength=5.0)
    s2, _ = rescore(fused(0.5), row, W, NOW, related_strength=1.0)
    assert s1 == s2


def test_empty_lists_do_not_lower_the_normalisation() -> None:
    (only,) = fuse({"vector": [7], "bm25": [], "entity": []})
    assert only.rrf_norm == pytest.approx(1.0)


def test_a_turn_that_only_asks_is_told_from_one_that_says_something() -> None:
    assert only_asks("That sounds great! What's your favorite movie that you've seen recently?")
    assert only_asks("How's Frankie?")
    assert not only_asks("Wow, nice pic! One special memory for me was this pride parade. Yours?")
    assert not only_asks("I adopted a pup from the shelter last week.")
    assert status_weight({"text": "Any fun hobbies?", "valid_until": None}) == DEMOTED < 1
    assert status_weight({"text": "I paint on weekends.", "valid_until": None}) == 1.0
    assert status_weight({"content": "Any fun hobbies?", "kind": "fact"}) == 1.0
    replaced = {"content": "Jen lives in Leeds.", "kind": "insight", "valid_until": 1.0}
    assert status_weight(replaced) == DEMOTED * DEMOTED


def test_a_question_that_asks_to_keep_something_says_it() -> None:
    assert not only_asks("Can you remember that Jen's birthday is on the 3rd of May?")
    assert not only_asks("Could you remind me that the passport expires in March?")
    assert only_asks("What did Jen say about her birthday?")
