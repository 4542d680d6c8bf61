"""The first results re-scored by the size of their context score (`runner.lead`)."""

from __future__ import annotations

from memory_kit import MemoryEnv
from test_context import chat
from test_joint_search import line

from lobug.memory.query import QueryRequest
from lobug.memory.search.context import ContextWeights, context_scores
from lobug.memory.search.scoring import WEIGHTS

WORDS = ContextWeights(meaning=0.0)  # by words alone: no vector needed


def no_vector(_: int) -> float | None:
    return None


async def test_a_reply_scores_with_the_question_it_answers(mem: MemoryEnv) -> None:
    refs = await chat(mem)
    question = "What genre is Joanna's first screenplay?"
    ids = [refs["s1/t1"], refs["s1/t3"], refs["s1/t5"]]
    scores = mem.db.read_sync(
        lambda c: context_scores(c, "default", question, ids, no_vector, weights=WORDS)
    )
    # The reply (t3) holds none of the words, the question before it ("What genre is the
    # screenplay?") two, the most of these turns: 0.8 of the full words score (1 by words alone).
    assert scores[refs["s1/t3"]] == 0.8 * 1.0
    assert 0 < scores[refs["s1/t1"]] < 1.0  # "first … screenplay": below "genre … screenplay"
    assert scores[refs["s1/t5"]] == 0.0


async def test_one_shared_word_scores_nothing_when_the_question_has_more(mem: MemoryEnv) -> None:
    start = mem.clock() - 3600
    refs = await mem.imported(
        [
            line("s1/t0", "Mateo", "Big news! How do you feel?", start),
            line("s1/t1", "Mateo", "I spoke to a big audience at the conference.", start + 1),
        ],
    )
    ids = [refs["s1/t0"], refs["s1/t1"]]

    def scores(question: str) -> dict[int, float]:
        return mem.db.read_sync(
            lambda c: context_scores(c, "default", question, ids, no_vector, weights=WORDS)
        )

    both = scores("How big was the audience at the conference?")
    assert both[refs["s1/t0"]] == 0.0 and both[refs["s1/t1"]] == 1.0
    alone = scores("Big?")  # one word asked: one is enough
    assert alone[refs["s1/t0"]] > 0 and alone[refs["s1/t1"]] > 0


async def test_the_query_path_adds_the_context_term_to_the_first_turns(mem: MemoryEnv) -> None:
    refs = await chat(mem)
    req = QueryRequest(query="What genre is Joanna's first screenplay?", kinds=["episode"])
    results = await mem.service.query(req)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert all(r.score == r.explain["final"] for r in results)
    first = results[: WEIGHTS.context_top]
    assert all(r.explain["context"] >= 0 for r in first)
    assert any(r.explain["context"] > 0 for r in first)
    mem.service.weights = WEIGHTS.changed({"w_context": 0.0})
    plain = await mem.service.query(req)
    assert all(r.explain["context"] == 0.0 for r in plain)
    # The term only raises a turn among the first: each score is the plain one plus its term.
    by_id = {r.id: r.score for r in plain}
    assert all(r.score == by_id[r.id] + r.explain["context"] for r in results)
    assert refs["s1/t3"] in by_id


async def test_a_turn_counts_the_words_it_states_not_those_it_asks_with(mem: MemoryEnv) -> None:
    start = mem.clock() - 3600
    refs = await mem.imported(
        [
            line("s1/t0", "Nate", "Sounds fun! What books do you enjoy reading lately?", start),
            line("s1/t1", "Joanna", "I enjoy fantasy books, mostly long series.", start + 1),
        ],
    )
    ids = [refs["s1/t0"], refs["s1/t1"]]
    scores = mem.db.read_sync(
        lambda c: context_scores(
            c, "default", "What books does Joanna enjoy?", ids, no_vector, weights=WORDS
        )
    )
    # "books" and "enjoy" are in the asking turn's question only: it says nothing of them.
    assert scores[refs["s1/t0"]] == 0.0
    # The reply: its own words, and 0.8 of the question it answers, which counts by what it asks.
    assert scores[refs["s1/t1"]] > 0.5
