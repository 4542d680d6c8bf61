"""Memories and turns ranked by one fusion, and the turns of a speaker a question names."""

from __future__ import annotations

from typing import Any

from memory_kit import MemoryEnv

from lobug.memory.query import QueryRequest
from lobug.memory.search import prompt_context, runner, when, who
from lobug.memory.search.scoring import WEIGHTS

DAY = 86_400.0


def line(ref: str, speaker: str, text: str, ts: float, role: str = "user") -> dict[str, Any]:
    return {"session_id": ref.split("/")[0], "role": role, "text": text, "ts": ts, "ref": ref,
            "speaker": speaker}  # fmt: skip


async def test_a_question_naming_a_speaker_prefers_their_turns(mem: MemoryEnv) -> None:
    start = mem.clock()
    refs = await mem.imported(
        [
            line(
                "s1/t1",
                "Liam",
                "My dad still lives in Keswick, I'm driving up next weekend.",
                start,
            ),
            line(
                "s1/t2",
                "Ava",
                "My dad lives in Leeds, near the old market.",
                start + 20,
                "assistant",
            ),
        ],
    )
    assert mem.value("SELECT speaker FROM turns WHERE ref = 's1/t1'") == "Liam"

    async def first(question: str) -> int:
        req = QueryRequest(query=question, kinds=["episode"], top_k=2)
        return (await mem.service.query(req))[0].id

    assert await first("Which town does Liam's father live in?") == refs["s1/t1"]
    assert await first("Which town does Ava's father live in?") == refs["s1/t2"]


async def test_a_weak_fact_does_not_outrank_the_turn_that_answers(mem: MemoryEnv) -> None:
    """Five facts and a long conversation: the best of the facts is first in its own small
    lists, but the joint fusion ranks it by its similarity among all candidates."""
    for fact in (
        "The user likes jazz records.",
        "The user owns a blue bicycle.",
        "The user works in a bakery.",
        "The user has a sister in Denver.",
        "The user drinks green tea.",
    ):
        await mem.service.remember(content=fact, actor="test")
    start = mem.clock() - 200 * DAY
    filler = [
        line(
            f"s{i}/t1",
            "Sam",
            f"Nothing much happened on day {i}, just errands and rain.",
            start + i * DAY,
        )
        for i in range(1, 40)
    ]
    answer = line(
        "s50/t1", "Sam", "We adopted a greyhound called Pepper from the rescue.", start + 50 * DAY
    )
    refs = await mem.imported([*filler, answer])
    await mem.run()
    req = QueryRequest(
        query="Which dog did we adopt from the rescue?", kinds=["fact", "episode"], top_k=5
    )
    results = await mem.service.query(req)
    assert (results[0].kind, results[0].id) == ("episode", refs["s50/t1"])


async def test_a_question_joining_two_speakers_names_neither(mem: MemoryEnv) -> None:
    start = mem.clock()
    await mem.imported(
        [
            line("s1/t1", "Jon", "Dancing is how I unwind after the shop closes.", start),
            line("s1/t2", "Gina", "Same here, a long run clears my head.", start + 20, "assistant"),
        ],
    )

    async def named(question: str) -> str | None:
        return await mem.db.read(lambda c: who.named_speaker(who.speakers(c, "default"), question))

    assert await named("How does Gina unwind?") == "Gina"
    assert await named("What did Jon tell Gina about the shop?") == "Jon"  # the first named
    assert await named("How do Jon and Gina both unwind?") is None
    assert await named("What do both gina & jon like?") is None
    # End to end: the search still answers a question about both.
    req = QueryRequest(query="How do Jon and Gina both clear their head?", kinds=["episode"])
    found = [r.text for r in await mem.service.query(req)]
    assert found[0] == "Same here, a long run clears my head."


def test_the_speakers_names_leave_the_text_whole_words_only() -> None:
    names = ["Liam", "Ava"]
    assert who.without_speakers("What did Liam's dad fix?", names) == "What did dad fix?"
    assert who.without_speakers("Did ava and LIAM’s sister meet?", names) == "Did and sister meet?"
    assert (
        who.without_speakers("Is Liamson Avalon's friend?", names) == "Is Liamson Avalon's friend?"
    )
    assert who.without_speakers("Liam?", names) == "Liam?"  # nothing else to embed: as asked
    assert who.without_speakers("What did Liam fix?", []) == "What did Liam fix?"


async def test_a_query_embeds_its_meaning_without_the_speakers_names(
    mem: MemoryEnv, monkeypatch: Any
) -> None:
    """The name says who (the `who` lists' part); in the vector it would match the turns that
    greet that person ("Thanks, Liam!") rather than what is asked."""
    start = mem.clock()
    await mem.imported(
        [
            line("s1/t1", "Liam", "I fixed the boiler at last.", start),
            line("s1/t2", "Ava", "Thanks, Liam!", start + 20, "assistant"),
        ],
    )
    embedder = mem.service.vectors.embedder
    asked: list[str] = []
    embed = embedder.embed

    async def recording(texts: list[str]) -> list[list[float]]:
        asked.extend(texts)
        return await embed(texts)

    monkeypatch.setattr(embedder, "embed", recording)
    await mem.service.query(QueryRequest(query="What did Liam fix?", top_k=3))
    await mem.service.query(QueryRequest(query="What did Noor fix?", top_k=3))
    assert asked == ["What did fix?", "What did Noor fix?"]


async def test_a_question_about_now_ranks_the_later_statement_of_its_matches(
    mem: MemoryEnv,
) -> None:
    """ "Where does Jen live now?": of the turns that match, the one said last is how things
    stand (the `latest` list); a question without "now" gets no such list."""
    start = mem.clock() - 200 * DAY
    refs = await mem.imported(
        [
            line("s1/t1", "Liam", "Jen lives in Portland, in a flat by the river.", start),
            line("s2/t1", "Liam", "Jen lives in Denver, in a flat by the park.", start + 90 * DAY),
            line("s3/t1", "Liam", "Jen lives for her garden.", start + 180 * DAY),
        ],
    )

    async def lists(question: str) -> dict[str, list[int]]:
        plan = runner.Plan.at(QueryRequest(query=question, kinds=["episode"]), WEIGHTS, mem.clock())
        found = await mem.db.read(runner.ranked_lists, plan, None, runner.WORD_LISTS + ("context",))
        return found["turns"]

    now = await lists("Where does Jen live now, which flat?")
    assert [i for i in now["latest"] if i != refs["s3/t1"]] == [refs["s2/t1"], refs["s1/t1"]]
    assert "latest" not in await lists("Where does Jen live, which flat?")
    assert when.asks_now("Who is her current employer?") and when.asks_now("Does he still swim?")
    assert not when.asks_now("Where did Jen live in 2019?")


async def test_a_question_about_what_happened_ranks_old_and_new_turns_alike(
    mem: MemoryEnv, clock: Any
) -> None:
    """ "When did Jen go to Lisbon?" is answered as well by what was said in March as in
    October: no recency prior (`when.asks_past`), so its results score the same a hundred
    days later. A question about how things stand, or about the last time, keeps the prior."""
    start = mem.clock() - 30 * DAY
    await mem.imported(
        [
            line("s1/t1", "Liam", "Jen went to Lisbon for the book fair.", start),
            line("s1/t2", "Ava", "Did she like Lisbon?", start + 20, "assistant"),
        ],
    )

    async def scores(question: str) -> list[float]:
        found = await mem.service.query(QueryRequest(query=question, kinds=["episode"]))
        assert found, question
        return [r.score for r in found]

    questions = (
        "When did Jen go to Lisbon?",
        "Where does Jen go for book fairs?",
        "When did Jen last go to Lisbon?",
    )
    before = [await scores(q) for q in questions]
    clock.advance(100 * DAY)
    after = [await scores(q) for q in questions]
    assert after[0] == before[0]
    assert after[1][0] < before[1][0] and after[2][0] < before[2][0]
    assert when.asks_past("What was the poster's slogan?")
    assert not when.asks_past("Where did Jen live now?")
    assert not when.asks_past("I was at the dentist yesterday.")  # says, does not ask


async def test_a_question_in_the_base_form_finds_the_turn_in_the_past(mem: MemoryEnv) -> None:
    """ "What did the team win?" asks with "win"; the turn that answers says "won", which no
    prefix of "win" finds (`wordforms`). Among turns about the team, it comes first."""
    start = mem.clock() - 60 * DAY
    said = [
        "The team trained in the rain all week.",
        "Team photos are up on the fridge.",
        "Our team bus broke down on the way to the away match.",
        "We even won a trophy at the finals!",
        "The coach wants the team to stretch more.",
    ]
    await mem.imported([line(f"s{i}/t1", "Liam", t, start + i * DAY) for i, t in enumerate(said)])
    found = await mem.service.query(
        QueryRequest(query="What did Liam's team win?", kinds=["episode"], top_k=3)
    )
    assert [r.text for r in found][0] == "We even won a trophy at the finals!"


async def test_a_fact_first_in_its_lists_does_not_lose_to_a_turn_second_in_two(
    mem: MemoryEnv,
) -> None:
    """Turns enter lists a fact cannot (context, echo, …): fused over every list, a fact first
    in each of its own counted as a fraction and lost to a turn second in two of the turns'
    (issue 39). The prompt's search (`prompt_context.context_plan`) normalises per kind: it
    leads."""
    fact = await mem.service.remember(content="The user's cat is called Biscuit.", actor="t")
    start = mem.clock() - DAY
    refs = await mem.imported(
        [
            line("s1/t1", "Sam", "The neighbours have a new kitten.", start),
            line("s1/t2", "Sam", "It sleeps on their porch every afternoon.", start + 1),
        ]
    )
    first, second = refs["s1/t1"], refs["s1/t2"]
    lists = {
        "memories": {"vector": [fact["id"]], "bm25": [fact["id"]]},
        "turns": {"vector": [second], "context": [first, second]},
    }
    req = QueryRequest(query="zzz", kinds=["fact", "episode"])
    assert {"fact", "episode"} <= set(prompt_context.PROMPT_KINDS)
    plan = prompt_context.context_plan(
        req.query, user_id="default", session_id="now", k=5, min_similarity=0.3,
        weights=WEIGHTS, window_start=None, now=mem.clock(),
    )  # fmt: skip
    ranked = mem.db.read_sync(lambda c: runner.finish(c, plan, lists, now=mem.clock()))
    # The joint vector list interleaves the kinds' ranks: the fact, then `second`; `second`
    # is second in the context list too.
    order = [(r.kind, r.hit.id) for r in ranked]
    assert order.index(("fact", fact["id"])) < order.index(("episode", second))


async def test_the_speakers_are_remembered_and_checked_by_the_words_read(mem: MemoryEnv) -> None:
    """A query leaves the speakers' names out of what it embeds before reading anything: it
    takes the names last read, and its word lists' read checks them, so turns written since
    with a new speaker are seen by the next query (asked again with the new names)."""
    req = QueryRequest(query="Which town does Liam's father live in?", kinds=["episode"])
    assert await mem.service.query(req) == []
    assert mem.service.speakers.known("default") == ()
    start = mem.clock()
    refs = await mem.imported(
        [
            line("s1/t1", "Liam", "My dad still lives in Keswick, I'm driving up.", start),
            line("s1/t2", "Ava", "My dad lives in Leeds, near the market.", start + 20),
        ],
    )
    embedded: list[str] = []
    later = mem.service.vectors.later

    async def spy(text: str) -> Any:
        embedded.append(text)
        return await later(text)

    mem.service.vectors.later = spy  # type: ignore[method-assign]
    reads = 0
    read = mem.service.db.read

    async def counted(*args: Any) -> Any:
        nonlocal reads
        reads += 1
        return await read(*args)

    mem.service.db.read = counted  # type: ignore[method-assign]
    assert (await mem.service.query(req))[0].id == refs["s1/t1"]
    # Embedded first with the names last read (none), then again without "Liam's".
    assert embedded == [req.query, "Which town does father live in?"]
    assert set(mem.service.speakers.known("default") or ()) == {"Liam", "Ava"}
    assert reads == 3  # the words (stale names), the words again, the vector list and fusion
    embedded.clear()
    reads = 0
    assert (await mem.service.query(req))[0].id == refs["s1/t1"]
    assert embedded == ["Which town does father live in?"] and reads == 2
