"""Seed 002's session summary, written by the `consolidate_session` job on a real DB through the
memory hooks, the job runner and the fake Ollama: one LLM call per ended session (none again
on a re-run), an outage retried, an answer invalid twice counted without blocking the
consolidation, a lower-trust caller's session never sent to the model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Reply, Script

from lobug.memory.upkeep.jobs import CONSOLIDATE_SESSION
from lobug.memory.upkeep.sessions import SUMMARY_INVALID

HIKE = {
    "request": "The user asked for help planning a hike on Saturday.",
    "outcome": "Lo-Bug suggested the ridge trail and a 7 am start.",
    "decisions": ["The user will take the ridge trail."],
    "open_items": ["The user still has to check the weather."],
}


@dataclass
class Summaries(Script):
    """The default answers, plus the session record: `session` gets the transcript."""

    session: Reply = lambda _: json.dumps(HIKE)  # noqa: E731


def summary(mem: MemoryEnv, session_id: str) -> Any:
    rows = mem.rows("SELECT * FROM session_summaries WHERE session_id = ?", session_id)
    return rows[0] if rows else None


def consolidated(mem: MemoryEnv, session_id: str) -> Any:
    return mem.value("SELECT consolidated_at FROM sessions WHERE id = ?", session_id)


async def test_an_ended_session_gets_one_structured_summary(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    script = state.script = Summaries()
    await mem.exchange("Can you help me plan a hike on Saturday?", "Sure: where?", session_id="s-a")
    clock.advance(60)
    await mem.exchange(
        "The ridge trail, I think. Start at 7.",
        "Good plan. Want me to remind you on Friday?",
        session_id="s-a",
    )
    await mem.run()
    assert state.memory_calls("session") == []  # still going: nothing to summarise
    await mem.exchange("What's the time?", "Nine.", session_id="s-b")
    await mem.run()

    (call,) = state.memory_calls("session")  # one call for the ended session
    transcript = call["body"]["messages"][-1]["content"]
    assert "User: Can you help me plan a hike on Saturday?" in transcript
    assert "User: The ridge trail, I think. Start at 7." in transcript  # the user's words whole
    assert "Lo-Bug: Good plan.\n" in transcript + "\n"  # a reply's first sentence only
    assert "remind you" not in transcript and "What's the time?" not in transcript
    row = summary(mem, "s-a")
    assert (row["request"], row["outcome"]) == (HIKE["request"], HIKE["outcome"])
    assert json.loads(row["decisions"]) == HIKE["decisions"]
    assert json.loads(row["open_items"]) == HIKE["open_items"]
    assert (row["turn_count"], row["user_id"]) == (4, "default")
    facts = mem.value(
        "SELECT COUNT(*) FROM memories WHERE session_id = 's-a' AND status = 'active'"
    )
    assert row["observation_count"] == facts
    assert consolidated(mem, "s-a") is not None and summary(mem, "s-b") is None
    assert len(script.seen["session"]) == 1

    # A re-run of the job makes no second call; the user coming back and leaving again does.
    (job,) = mem.jobs(CONSOLIDATE_SESSION)
    await mem.db.write(
        lambda c: c.execute(
            "UPDATE sessions SET consolidated_at = NULL WHERE id = 's-a'"
        ).connection.execute(
            "UPDATE jobs SET state = 'pending', run_after = 0 WHERE id = ?", (job["id"],)
        )
    )
    await mem.run()
    assert len(state.memory_calls("session")) == 1
    clock.advance(60)
    await mem.exchange("One more thing: bring water.", "Noted.", session_id="s-a")
    await mem.exchange("Back to the other thing.", "Sure.", session_id="s-b")
    await mem.run()
    assert len(state.memory_calls("session")) == 2
    assert summary(mem, "s-a")["turn_count"] == 6


async def test_an_outage_waits_and_an_invalid_answer_does_not_block(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.script = Summaries(session=lambda _: "The user talked about a hike.")  # not JSON
    state.memory_mode = "down"
    await mem.exchange("I need new boots for the hike.", "Which size?", session_id="s-a")
    await mem.exchange("Size 44, waterproof.", "Noted.", session_id="s-a")
    await mem.exchange("Hello again.", "Hi.", session_id="s-b")
    await mem.run()
    (job,) = mem.jobs(CONSOLIDATE_SESSION)
    assert job["state"] == "pending" and "LLM unavailable" in job["last_error"], dict(job)
    assert summary(mem, "s-a") is None and consolidated(mem, "s-a") is None

    state.memory_mode = "ok"
    clock.advance(3600)
    await mem.run()
    (job,) = mem.jobs(CONSOLIDATE_SESSION)
    assert job["state"] == "done", dict(job)
    # The one refused in the outage, then the answer and the reminder's: both prose.
    assert len(state.memory_calls("session")) == 3
    assert summary(mem, "s-a") is None and consolidated(mem, "s-a") is not None
    assert mem.value("SELECT value FROM meta WHERE key = ?", f"counter.{SUMMARY_INVALID}") == "1"


async def test_a_lower_trust_or_one_question_session_is_never_summarised(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state = ollama[0]
    state.script = Summaries()
    await mem.exchange("Set a timer for ten minutes.", "Timer set.", session_id="s-timer")
    await mem.exchange("I'm a guest; where is the bathroom?", "Upstairs.", session_id="s-guest")
    await mem.exchange("And the towels?", "In the cupboard.", session_id="s-guest")
    await mem.db.write(
        lambda c: c.execute("UPDATE sessions SET trust = 'public' WHERE id = 's-guest'")
    )
    await mem.exchange("Hi, it's me.", "Hello.", session_id="s-owner")
    await mem.run()
    jobs = mem.jobs(CONSOLIDATE_SESSION)
    assert [j["state"] for j in jobs] == ["done", "done"], [dict(j) for j in jobs]
    assert state.memory_calls("session") == [] and summary(mem, "s-guest") is None
    assert summary(mem, "s-timer") is None and consolidated(mem, "s-timer") is not None
