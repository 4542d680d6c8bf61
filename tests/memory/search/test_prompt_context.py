"""The prompt's memory through /chat/text: the joint search (facts, summaries, the owner's own
past exchanges), cut to a budget, exchanges as dated snippets; GET /v1/context shows exactly
the prompt's sections (issue 39)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_ollama import FakeOllamaState
from memory_kit import Script, drain

from lobug import keys
from lobug.memory.query import tokens_of
from lobug.memory.search import prompt_context, snippet

DAY = 86_400.0
DIM = 256  # the hashing embedder at 64-d collides too often
QUIET = Script(reply=lambda _: json.dumps({"action": "RESPOND", "response": "Okay."}))


@pytest.fixture
async def client(make_client: Any, ollama: tuple[FakeOllamaState, str]) -> Any:
    state, _ = ollama
    state.script = QUIET  # Lo-Bug's replies say nothing to find; extraction finds nothing
    return await make_client(**{"embedding.dim": DIM})


async def say(client: Any, text: str, session: str) -> None:
    resp = await client.post("/chat/text", json={"text": text, "session_id": session})
    assert resp.status == 200, await resp.text()


def turn_block(state: FakeOllamaState) -> str:
    """The last prompt's memory: its last user message without the user's words."""
    return str(state.chat_calls()[-1]["body"]["messages"][-1]["content"]).rsplit("\n\n", 1)[0]


def relevant(state: FakeOllamaState) -> list[str]:
    block = turn_block(state)
    if "[Relevant memories]\n" not in block:
        return []
    lines = block.split("[Relevant memories]\n", 1)[1].split("\n\n")[0]
    return [line.removeprefix("- ") for line in lines.splitlines()]


async def test_a_detail_said_in_an_earlier_session_is_in_a_later_prompt(
    client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    path = client.app[keys.CONFIG].storage.db_path
    await say(client, "Good morning! The plumber is coming on Thursday at nine.", "monday")
    await say(
        client,
        "My sister Ana visits next week. She is allergic to peanuts, so no satay. "
        "The weather is lovely today.",
        "monday",
    )
    await say(client, "Can you set a timer for the pasta?", "monday")
    await drain(path, clock)  # the turns' vectors
    clock.advance(3 * DAY)
    await say(client, "What should I cook when my sister comes over?", "thursday")
    shown = relevant(state)
    said = snippet.said_on(clock() - 3 * DAY, "user")
    assert f"{said} My sister Ana visits next week. She is allergic to peanuts, so no satay." in (
        shown
    )
    # Only the matching sentences: the weather was not asked about.
    assert not any("weather" in line for line in shown)
    assert sum(tokens_of(line) for line in shown) <= prompt_context.BUDGET_TOKENS


async def test_did_i_feed_biscuit_this_morning_prefers_this_mornings_statement(
    client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    path = client.app[keys.CONFIG].storage.db_path
    clock.now = 1_750_000_000.0 - 1_750_000_000.0 % DAY + 7 * 3600  # 07:00 UTC
    await say(client, "I fed Biscuit this morning, he was very hungry.", "yesterday")
    clock.advance(DAY)
    await say(client, "Biscuit had his food.", "today")
    await drain(path, clock)
    clock.advance(3 * 3600)
    await say(client, "Did I feed Biscuit this morning?", "now")
    shown = relevant(state)
    assert shown and shown[0].startswith("Today the user said:"), shown
    assert snippet.said_on(clock(), "user", clock()) == "Today the user said:"


async def test_v1_context_is_the_prompts_memory(
    client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    path = client.app[keys.CONFIG].storage.db_path
    memory = client.app[keys.MEMORY]
    await memory.remember(content="The user's sister Ana is allergic to peanuts.", actor="test")
    await say(client, "Ana loves the lemon cake from the bakery on Hill Street.", "earlier")
    await drain(path, clock)
    clock.advance(DAY)
    question = "What cake should I buy for Ana?"
    await say(client, question, "later")
    resp = await client.get("/v1/context", params={"session_id": "later", "q": question})
    assert resp.status == 200
    context = await resp.json()
    messages = state.chat_calls()[-1]["body"]["messages"]
    sections = context["sections"]
    assert messages[-1]["content"] == "\n\n".join([*sections["turn"], question])
    assert all(section in messages[0]["content"] for section in sections["stable"])
    assert [m["shown"] for m in context["memories"]] == relevant(state)
    assert {m["kind"] for m in context["memories"]} == {"fact", "episode"}
