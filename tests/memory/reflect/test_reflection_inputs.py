"""Seed 003: the weekly reflection reads the last 7 days, up to 200 facts and episodes (the
week's summaries and what the user said in their own sessions), within what a small model's
context holds (`reflection.INPUT_CHARS`); through the schedule and the `reflect` job."""

from __future__ import annotations

from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv
from thinking_kit import add_facts, canned

from lobug import conversation
from lobug.memory.reflect import insights, reflection
from lobug.memory.reflect.jobs import REFLECT

DAY = 86400.0
FACTS = ("The user runs on Sundays.", "The user grows tomatoes.", "The user lives in Seattle.")


def asked(state: FakeOllamaState) -> str:
    (call,) = state.memory_calls("reflect")
    return str(call["body"]["messages"][-1]["content"])


async def reflect(mem: MemoryEnv) -> None:
    await mem.service._think()  # the periodic task
    await mem.run()
    assert [j["state"] for j in mem.jobs(REFLECT)] == ["done"]


async def test_the_week_s_facts_and_the_users_own_words(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.thinking = canned()
    await mem.exchange("I used to play chess every night.", session_id="s-old")
    await mem.run()
    clock.advance(8 * DAY)  # last week's words are not this week's
    await add_facts(mem, *FACTS)
    await mem.exchange("I am training for the Seattle half marathon.", "Good luck with it!")

    def guest(conn: Any) -> None:  # a lower-trust caller's session
        conn.execute(
            "INSERT INTO sessions (id, device_id, user_id, trust, started_at, last_active)"
            " VALUES ('g-1', 'test', 'default', 'guest', ?, ?)",
            (clock(), clock()),
        )
        conversation.insert_turn(
            conn, session_id="g-1", role="user", text="The owner hates jazz.", ts=clock()
        )

    await mem.db.write(guest)
    await mem.run()
    await reflect(mem)
    body = asked(state)
    assert all(f"- {fact}" in body for fact in FACTS)
    assert 'The user said: "I am training for the Seattle half marathon."' in body
    assert "chess" not in body  # eight days ago
    assert "Good luck" not in body  # Lo-Bug's words
    assert "hates jazz" not in body  # a guest's words never reach a reflection


async def test_a_busy_week_is_cut_to_what_a_small_model_holds(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    state.thinking = canned()
    facts = [
        f"The user noted item {i} about the garden, the bikes and the kids." for i in range(300)
    ]
    await add_facts(mem, *facts)

    def said(conn: Any) -> None:
        conn.execute(
            "INSERT INTO sessions (id, device_id, user_id, started_at, last_active)"
            " VALUES ('s-busy', 'test', 'default', ?, ?)",
            (clock(), clock()),
        )
        for i in range(300):
            conversation.insert_turn(
                conn, session_id="s-busy", role="user", text=f"Remember thing {i} " * 40,
                ts=clock() - i, action="RESPOND",
            )  # fmt: skip

    await mem.db.write(said)
    await reflect(mem)
    body = asked(state)
    items = [line for line in body.splitlines() if line.startswith("- ")]
    assert len(items) <= reflection.MAX_ITEMS
    shown = sum(len(line) + 1 for line in items)
    assert shown <= reflection.INPUT_CHARS
    assert shown > reflection.INPUT_CHARS * 0.9  # filled, not starved
    fact_lines = [line for line in items if line.startswith("- The user noted")]
    said_lines = [line for line in items if line.startswith('- The user said: "Remember')]
    # Half each; a long turn is clipped to TURN_CHARS.
    assert fact_lines and said_lines
    assert abs(sum(map(len, fact_lines)) - sum(map(len, said_lines))) < reflection.INPUT_CHARS / 4
    assert all(len(line) <= reflection.TURN_CHARS + 20 for line in said_lines)


async def test_a_memory_past_its_expires_at_is_not_read(mem: MemoryEnv, clock: Any) -> None:
    """Seed 002: a memory past its `expires_at` is hidden at once, before the GC deletes it;
    neither the reflection nor the insights read it."""
    kept, gone = await add_facts(mem, "The user grows tomatoes.", "The user has a cold.")
    await mem.db.write(
        lambda c: c.execute("UPDATE memories SET expires_at = ? WHERE id = ?", (clock() + 60, gone))
    )
    read = await mem.db.read(reflection.inputs, "default", clock())
    assert set(read.facts) == {"The user has a cold.", "The user grows tomatoes."}
    assert sorted(read.source_ids) == sorted([kept, gone])
    assert (await mem.db.read(insights.inputs, "default", clock()))[0] == [
        "The user has a cold.",
        "The user grows tomatoes.",
    ]
    clock.advance(120)
    read = await mem.db.read(reflection.inputs, "default", clock())
    assert (read.facts, read.source_ids) == (["The user grows tomatoes."], [kept])
    assert (await mem.db.read(insights.inputs, "default", clock()))[0] == [
        "The user grows tomatoes."
    ]
