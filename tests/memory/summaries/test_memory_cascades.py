"""The cascades (seed 004 §7): thresholds and keep boundaries exactly, failures change nothing."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script, facts_json

from lobug import conversation as turns
from lobug.memory.search import prompt_context as prompt_search
from lobug.memory.summaries import base_memory
from lobug.memory.summaries.cascades import count_unincorporated, count_unsummarized
from lobug.memory.table import rows as store

BASE = (
    "User Profile:\n- Name: Alex, works at NASA\nPreferences:\n- Green tea\n"
    "Ongoing Topics:\n- The Lo-Bug build\nKey History:\n- Moved to Seattle"
)


@pytest.fixture
def script(ollama: tuple[FakeOllamaState, str]) -> Script:
    script = Script(
        summarize=lambda transcript: (
            f"The user and Lo-Bug talked ({transcript.count('message')} lines)."
        ),
        distill=lambda _: BASE,
    )
    ollama[0].script = script
    return script


async def messages(mem: MemoryEnv, count: int, start: int = 0) -> None:
    """`count` messages, user/assistant alternating, committed as the chat service does."""
    i = start
    while i < start + count:
        if i + 1 < start + count:
            await mem.exchange(f"message {i}", f"message {i + 1}")
            i += 2
        else:
            await mem.exchange(f"message {i}", None)  # a lone user turn (a degraded reply)
            i += 1


def unsummarized(mem: MemoryEnv) -> list[str]:
    return [r[0] for r in mem.rows("SELECT text FROM turns WHERE summarized = 0 ORDER BY id")]


async def test_short_cascade_fires_at_30_not_29_and_keeps_the_newest_10(
    mem: MemoryEnv, script: Script
) -> None:
    await messages(mem, 29)
    await mem.run()
    assert mem.jobs("cascade_short") == [], "29 unsummarised messages: no cascade yet"
    assert await mem.db.read(count_unsummarized, "default") == 29
    await messages(mem, 1, start=29)
    assert len(mem.jobs("cascade_short")) == 1
    await mem.run()
    (summary,) = mem.rows("SELECT * FROM memories WHERE kind = 'summary'")
    ids = [r[0] for r in mem.rows("SELECT id FROM turns ORDER BY id")]
    assert (summary["source_from"], summary["source_to"]) == (ids[0], ids[19])
    assert summary["content"] == "The user and Lo-Bug talked (20 lines)."
    assert unsummarized(mem) == [f"message {i}" for i in range(20, 30)]
    transcript = script.seen["summarize"][0][1]["content"]
    assert "User: message 0\nLo-Bug: message 1" in transcript
    assert "message 19" in transcript and "message 20" not in transcript
    linked = mem.rows(
        "SELECT turn_id FROM memory_sources WHERE memory_id = ? ORDER BY turn_id", summary["id"]
    )
    assert [r[0] for r in linked] == ids[:20]
    # The kept 10 plus 19 new: 29, nothing; one more: the next 20 are summarised.
    await messages(mem, 19, start=30)
    await mem.run()
    assert len(mem.rows("SELECT id FROM memories WHERE kind = 'summary'")) == 1
    await messages(mem, 1, start=49)
    await mem.run()
    sources = mem.rows("SELECT source_from, source_to FROM memories WHERE kind = 'summary'")
    assert [tuple(r) for r in sources] == [(ids[0], ids[19]), (ids[19] + 1, ids[19] + 20)]
    assert unsummarized(mem) == [f"message {i}" for i in range(40, 50)]


async def test_noise_does_not_count_toward_the_threshold(mem: MemoryEnv, script: Script) -> None:
    # An IGNORE turn (noise) and a degraded apology are logged but are not conversation.
    await mem.db.write(
        lambda c: c.executemany(
            "INSERT INTO turns (session_id, role, text, ts, action, degraded) VALUES"
            " ('s-test', ?, ?, 0, ?, ?)",
            [("user", "*clatter*", "IGNORE", 0), ("assistant", "Sorry, no brain today.", None, 1)],
        )
    )
    await messages(mem, 29)
    assert await mem.db.read(count_unsummarized, "default") == 29
    await mem.run()
    assert mem.jobs("cascade_short") == []
    await messages(mem, 1, start=29)
    await mem.run()
    transcript = script.seen["summarize"][0][1]["content"]
    assert "clatter" not in transcript and "Sorry" not in transcript
    assert transcript.count("message") == 20
    # The noise inside the summarised range is settled with it.
    assert unsummarized(mem) == [f"message {i}" for i in range(20, 30)]


async def test_a_failed_summary_changes_nothing_and_retries(
    mem: MemoryEnv, script: Script, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    await messages(mem, 30)
    state.memory_mode = "down"
    await mem.run()
    (job,) = mem.jobs("cascade_short")
    assert job["state"] == "pending" and "LLM unavailable" in job["last_error"]
    assert await mem.db.read(count_unsummarized, "default") == 30
    assert mem.rows("SELECT id FROM memories WHERE kind = 'summary'") == []
    state.memory_mode = "ok"
    clock.advance(60)
    await mem.run()
    assert mem.jobs("cascade_short")[0]["state"] == "done"
    assert await mem.db.read(count_unsummarized, "default") == 10


async def test_an_invalid_summary_twice_fails_loudly_and_changes_nothing(
    mem: MemoryEnv, script: Script, caplog: pytest.LogCaptureFixture
) -> None:
    script.summarize = lambda _: '{"summary": ""}'
    await messages(mem, 30)
    with caplog.at_level(logging.WARNING):
        await mem.run()
    (job,) = mem.jobs("cascade_short")
    assert job["state"] == "failed" and "not a summary paragraph" in job["last_error"]
    assert (await mem.db.read(store.counters))["summary_invalid_total"] == 1
    assert await mem.db.read(count_unsummarized, "default") == 30
    assert any("giving up" in r.getMessage() for r in caplog.records)


async def add_summaries(mem: MemoryEnv, count: int) -> list[int]:
    def insert(conn: Any) -> list[int]:
        first = conn.execute("SELECT COUNT(*) FROM memories WHERE kind = 'summary'").fetchone()[0]
        return [
            store.insert_memory(
                conn,
                user_id="default",
                kind="summary",
                content=f"Summary {first + i}.",
                now=mem.clock(),
                actor="test",
            )
            for i in range(count)
        ]

    return await mem.db.write(insert)


async def test_long_cascade_fires_at_20_not_19_and_keeps_the_newest_10(
    mem: MemoryEnv, script: Script, ollama: tuple[FakeOllamaState, str]
) -> None:
    # A fact and an old base memory, both of which the distillation must see.
    script.extract = lambda _: facts_json("The user's name is Alex.")
    await mem.exchange("I am Alex")
    await mem.run()
    await mem.db.write(
        lambda c: base_memory.set_base(
            c, "default", "User Profile:\n- Alex", now=1.0, actor="test", meta={}
        )
    )
    assert (
        await mem.service.prompt_sections(user_id="default", session_id="s", text="hi")
    ).all() == [
        "[Long-term memory]\nUser Profile:\n- Alex",
    ]
    # The long check is enqueued by a short cascade once ≥ 20 summaries are unincorporated.
    await add_summaries(mem, 18)
    await messages(mem, 30, start=100)  # the 19th summary
    await mem.run()
    assert await mem.db.read(count_unincorporated, "default") == 19
    assert mem.jobs("cascade_long") == [] and "distill" not in script.seen
    await messages(mem, 20, start=200)  # 10 kept + 20 = 30 again: the 20th summary
    await mem.run()
    assert len(mem.jobs("cascade_long")) == 1
    assert mem.value("SELECT content FROM base_memory WHERE user_id = 'default'") == BASE
    flags = [
        r[0]
        for r in mem.rows("SELECT incorporated FROM memories WHERE kind = 'summary' ORDER BY id")
    ]
    assert flags == [1] * 10 + [0] * 10
    prompt = script.seen["distill"][0]
    assert "at most 400 words" in prompt[0]["content"].lower()
    assert "User Profile:\n- Alex" in prompt[1]["content"]
    assert "1. Summary 0." in prompt[1]["content"] and "Summary 10." not in prompt[1]["content"]
    assert "- The user's name is Alex." in prompt[1]["content"]
    history = mem.rows(
        "SELECT event, old_value, new_value, actor FROM history WHERE memory_id IS NULL ORDER BY id"
    )
    assert tuple(history[-1]) == ("UPDATE", "User Profile:\n- Alex", BASE, "cascade")
    # The cached base memory was invalidated: the next prompt has the new document.
    sections = (
        await mem.service.prompt_sections(user_id="default", session_id="s", text="hi")
    ).all()
    assert sections[0] == f"[Long-term memory]\n{BASE}"


async def test_long_cascade_boundary_and_failure_changes_nothing(
    mem: MemoryEnv, script: Script, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    from lobug.memory import enqueue

    async def check() -> None:
        await mem.db.write(
            lambda c: enqueue.per_user(c, enqueue.CASCADE_LONG, user_id="default", now=clock())
        )
        await mem.run()

    await add_summaries(mem, 19)
    await check()
    assert "distill" not in script.seen and mem.rows("SELECT * FROM base_memory") == []
    await add_summaries(mem, 1)
    ollama[0].memory_mode = "down"
    await check()
    assert await mem.db.read(count_unincorporated, "default") == 20
    assert mem.rows("SELECT * FROM base_memory") == []
    ollama[0].memory_mode = "ok"
    script.distill = lambda _: "I'm sorry, I can't help with that."
    clock.advance(60)
    await mem.run()
    assert mem.jobs("cascade_long")[-1]["state"] == "failed"
    assert (await mem.db.read(store.counters))["distill_invalid_total"] == 1
    assert await mem.db.read(count_unincorporated, "default") == 20
    script.distill = lambda _: BASE
    await check()
    assert await mem.db.read(count_unincorporated, "default") == 10
    assert mem.value("SELECT content FROM base_memory") == BASE


async def test_a_turn_that_read_the_base_before_a_rewrite_does_not_cache_the_old_one(
    mem: MemoryEnv, monkeypatch: Any
) -> None:
    """Issue 25 finding 19: the turn reads the (empty) base, a cascade rewrites it and
    invalidates the cache, then the turn would put what it read in the cache for 30 s."""
    service = mem.service
    read_context = prompt_search.read_context

    def rewritten_while_read(*args: Any, **kwargs: Any) -> Any:
        got = read_context(*args, **kwargs)  # the old (empty) base was read
        service.base_cache.invalidate("default")  # a cascade's on_base_written, meanwhile
        return got

    monkeypatch.setattr(prompt_search, "read_context", rewritten_while_read)
    first = await service.prompt_sections(user_id="default", session_id="s", text="hi")
    assert first.stable == []  # this turn saw the old base; fine
    monkeypatch.setattr(prompt_search, "read_context", read_context)
    await mem.db.write(  # what the cascade wrote
        lambda c: base_memory.set_base(
            c, "default", "User Profile:\n- Alex", now=2.0, actor="cascade", meta={}
        )
    )
    second = await service.prompt_sections(user_id="default", session_id="s", text="hi")
    assert second.stable == ["[Long-term memory]\nUser Profile:\n- Alex"]


async def test_a_strangers_words_never_reach_the_summaries(mem: MemoryEnv) -> None:
    """Issue 25: turns of a session below the owner's trust are not summarised (so never reach
    the base memory every owner prompt carries)."""

    def stranger_turns(conn: Any) -> None:
        sid = turns.resolve_session(
            conn, device_id="lan", session_id=None, now=1.0, idle_s=60, trust="public"
        )
        for i in range(40):
            turns.insert_turn(conn, session_id=sid, role="user", text=f"I am Eve {i}", ts=1.0 + i)

    await mem.db.write(stranger_turns)
    assert await mem.db.read(count_unsummarized, "default") == 0
    await messages(mem, 3)
    assert await mem.db.read(count_unsummarized, "default") == 3


async def test_the_summary_is_asked_for_in_the_past_tense_with_the_decisions(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    """Seed 001 §9's episodic guard (docs/seeds.md row 160): the summarize call's instructions
    ask for the past tense, third person, and the decisions; the model's paragraph is stored
    as written, its label ("Summary:") left out."""
    said = (
        "The user and Lo-Bug discussed the garden. The user decided to plant tomatoes on Saturday"
        " and asked Lo-Bug to remind them."
    )
    script = Script(summarize=lambda _: f"Summary: {said}", distill=lambda _: BASE)
    ollama[0].script = script
    await messages(mem, 30)
    await mem.run()
    (system, _) = script.seen["summarize"][0][:2]
    assert system["role"] == "system"
    for rule in ("the past tense", "third person", "decisions", "3-5 sentences"):
        assert rule in system["content"], rule
    (summary,) = mem.rows("SELECT content FROM memories WHERE kind = 'summary'")
    assert summary["content"] == said
