"""The `echo` list: the question widened with the words of its first answers."""

from __future__ import annotations

from memory_kit import MemoryEnv
from test_joint_search import line

from lobug.memory.query import QueryRequest, Reach
from lobug.memory.search.context import QuestionWords
from lobug.memory.search.echo import echo_ranks

CHAT = [
    ("Mel", "My hobbies? I love pottery, it calms me down."),
    ("Mel", "Finished a pottery bowl with a glaze of deep blue."),
    ("Mel", "The kiln at the studio cracked my glaze again, so annoying."),
    ("Caro", "I went to a support group meeting last night."),
]


async def test_the_first_answers_words_find_more_turns(mem: MemoryEnv) -> None:
    start = mem.clock() - 3600
    refs = await mem.imported(
        [line(f"s1/t{i}", who, text, start + i) for i, (who, text) in enumerate(CHAT)]
    )
    question = "What hobbies does Mel have?"
    first = [refs["s1/t0"]]  # the answer the question's own words find

    asked = QuestionWords("default", question)
    found = mem.db.read_sync(lambda c: echo_ranks(c, asked, first, 10, Reach()))
    # "pottery" (from the first answer) finds the bowl, which shares no word with the question;
    # the kiln shares a word with the bowl only ("glaze"), not with the first answer.
    assert found[0] == refs["s1/t0"] and refs["s1/t1"] in found
    assert refs["s1/t2"] not in found and refs["s1/t3"] not in found
    assert mem.db.read_sync(lambda c: echo_ranks(c, asked, [], 10, Reach())) == []


async def test_the_query_path_ranks_the_echo_list(mem: MemoryEnv) -> None:
    refs = await mem.imported([line("s1/t0", "Mel", CHAT[0][1], mem.clock() - 60)])
    results = await mem.service.query(
        QueryRequest(query="What hobbies does Mel have?", kinds=["episode"], top_k=1)
    )
    assert results[0].id == refs["s1/t0"] and "echo" in results[0].explain["ranks"]
