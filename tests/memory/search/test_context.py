"""The `context` list: a turn scored with the question it answers, names left out of words."""

from __future__ import annotations

from typing import Any

from memory_kit import MemoryEnv
from test_joint_search import line

from lobug.conversation import insert_turn
from lobug.llm.embedders import EmbeddingUnavailable
from lobug.memory.query import QueryRequest, Reach
from lobug.memory.search.context import ContextWeights, QuestionWords, context_ranks
from lobug.memory.search.corpus import TURNS
from lobug.memory.search.hybrid import vector_knn
from lobug.memory.search.scoring import DEMOTED

CHAT = [
    ("Nate", "Hey Joanna, how have you been this week?"),
    ("Joanna", "Busy! I finally printed my first full screenplay last Friday."),
    ("Nate", "Congrats! What genre is the screenplay?"),
    ("Joanna", "Thanks, Nate! It's a mix of drama and romance!"),
    ("Nate", "I spent the weekend cleaning the turtle tank, it took hours."),
    ("Joanna", "Sounds tiring. Drama at work too, my boss shouted again."),
]


async def chat(mem: MemoryEnv) -> dict[str, int]:
    start = mem.clock() - 3600
    return await mem.imported(
        [
            line(f"s1/t{i}", who, text, start + i, "user" if who == "Nate" else "assistant")
            for i, (who, text) in enumerate(CHAT)
        ],
    )


async def test_the_reply_to_a_question_carries_it(mem: MemoryEnv) -> None:
    refs = await chat(mem)
    question = "What genre is Joanna's first screenplay?"
    (vector,) = await mem.service.embedder.embed([question])

    nearest = mem.db.read_sync(lambda c: vector_knn(c, vector, 200, corpus=TURNS))

    def ranks(weights: ContextWeights) -> list[int]:
        return mem.db.read_sync(
            lambda c: context_ranks(c, question, nearest, 10, flt=Reach(), weights=weights)
        )

    with_context = ranks(ContextWeights())
    without = ranks(ContextWeights(asked=0.0))
    reply = refs["s1/t3"]
    # The reply shares no word with the question; the question before it does.
    assert with_context.index(reply) < without.index(reply)
    assert with_context.index(reply) <= 2


async def test_a_speakers_name_is_not_a_search_word(mem: MemoryEnv) -> None:
    refs = await chat(mem)
    found = mem.db.read_sync(lambda c: context_ranks(c, "Joanna", [], 10, flt=Reach()))
    assert found == []  # only the name: no words left, no vector
    found = mem.db.read_sync(lambda c: context_ranks(c, "Joanna turtle", [], 10, flt=Reach()))
    assert found[0] == refs["s1/t4"]


async def test_the_query_path_finds_the_reply(mem: MemoryEnv) -> None:
    refs = await chat(mem)
    req = QueryRequest(query="What genre is Joanna's first screenplay?", kinds=["episode"], top_k=3)
    results = await mem.service.query(req)
    reply = next(r for r in results if r.id == refs["s1/t3"])
    assert "context" in reply.explain["ranks"]


async def test_within_a_speakers_turns_the_reply_carries_the_other_persons_question(
    mem: MemoryEnv,
) -> None:
    refs = await chat(mem)
    question = "What genre is Joanna's first screenplay?"
    (vector,) = await mem.service.embedder.embed([question])
    joanna = Reach(speaker="Joanna")
    nearest = mem.db.read_sync(lambda c: vector_knn(c, vector, 200, corpus=TURNS, flt=joanna))

    words = ContextWeights(meaning=0.0)  # by words alone: the reply shares none

    def ranks(outer: Reach | None) -> list[int]:
        return mem.db.read_sync(
            lambda c: context_ranks(
                c, question, nearest, 10, flt=joanna, outer=outer, weights=words
            )
        )

    # Nate asked; among Joanna's turns only, her reply still carries his question.
    reply = refs["s1/t3"]
    assert ranks(None) == [refs["s1/t1"], refs["s1/t5"], reply]
    assert ranks(Reach()) == [refs["s1/t1"], reply, refs["s1/t5"]]


async def test_a_question_asking_when_prefers_the_turns_that_tell_a_time(mem: MemoryEnv) -> None:
    start = mem.clock() - 3600
    refs = await mem.imported(
        [
            line("s1/t0", "Mel", "Yesterday I took the kids to the museum.", start),
            line("s1/t1", "Mel", "The kids loved the museum's dinosaur exhibit.", start + 1),
        ],
    )
    req = QueryRequest(query="When did Mel go to the museum?", kinds=["episode"], top_k=2)
    results = {r.id: r for r in await mem.service.query(req)}
    told, untold = results[refs["s1/t0"]], results[refs["s1/t1"]]
    assert "dated" in told.explain["ranks"] and "dated" not in untold.explain["ranks"]
    asked = await mem.service.query(req.model_copy(update={"query": "What did Mel see?"}))
    assert all("dated" not in r.explain["ranks"] for r in asked)


async def test_a_turn_that_only_asks_ranks_below_what_was_said(mem: MemoryEnv) -> None:
    start = mem.clock() - 7 * 86400
    said = [
        ("s1", "Joanna", "My favorite movie is Alien, I watched it three times."),
        ("s1", "Nate", "Scary! I only know the poster."),
        ("s2", "Joanna", "That sounds great! What's your favorite movie these days?"),
        ("s2", "Nate", "Hard to pick, honestly."),
    ]
    refs = await mem.imported(
        [
            line(
                f"{s}/t{i}", who, text, start + i * 86400, "user" if who == "Nate" else "assistant"
            )
            for i, (s, who, text) in enumerate(said)
        ],
    )
    req = QueryRequest(query="What is Joanna's favorite movie?", kinds=["episode"], top_k=4)
    results = await mem.service.query(req)
    # The newer question shares as many words with what is asked, but says nothing of it.
    assert results[0].id == refs["s1/t0"]
    asking = next(r for r in results if r.id == refs["s2/t2"])
    assert asking.explain["status_mult"] == DEMOTED < 1


async def test_with_the_embedder_down_the_context_list_still_finds_a_turn_by_one_word(
    mem: MemoryEnv,
) -> None:
    start = mem.clock() - 3600
    refs = await mem.imported(
        [
            line("s1/t0", "Sam", "I sold my Honda Civic last month.", start),
            line("s1/t1", "Sam", "I drive a Tesla Model 3 now.", start + 1),
        ],
    )

    async def down(texts: Any) -> list[list[float]]:
        raise EmbeddingUnavailable("down")

    mem.service.embedder.embed = down  # type: ignore[method-assign]
    req = QueryRequest(query="What car do I drive now?", kinds=["episode"], top_k=3)
    results = await mem.service.query(req)
    # "car" and "drive": the bm25 list wants both; the context list ranks any one by its words.
    assert [r.id for r in results] == [refs["s1/t1"]]
    assert "context" in results[0].explain["ranks"] and "bm25" not in results[0].explain["ranks"]


async def test_the_words_of_a_period_or_a_speaker_are_ranked_within_it(mem: MemoryEnv) -> None:
    """A speaker's or a period's turns: the question's words are ranked among them (the filter
    inside the FTS5 query), not among every turn and narrowed afterwards: the one turn about
    the kiln is found behind a depth's worth of other turns, of other users, that say it more."""

    def fill(conn: Any) -> int:
        for n in range(30):
            insert_turn(conn, session_id=f"o{n}", role="user", text="kiln kiln kiln fired",
                        ts=1000.0 + n, user_id="other")  # fmt: skip
        insert_turn(conn, session_id="d1", role="user", text="the kiln broke", ts=2000.0,
                    speaker="Ann")  # fmt: skip
        return insert_turn(conn, session_id="d2", role="user", text="I fixed the kiln today",
                           ts=3000.0, speaker="Bo").id  # fmt: skip

    bo = mem.db.write_sync(fill)
    words = QuestionWords("default", "Who fixed the kiln?")
    said_by = Reach(user_id="default", speaker="Bo")
    assert mem.db.read_sync(lambda c: list(words.best(c, 5, said_by))) == [bo]
    said_then = Reach(user_id="default", said_in=(2500.0, 3500.0))
    assert mem.db.read_sync(lambda c: list(words.best(c, 5, said_then))) == [bo]
