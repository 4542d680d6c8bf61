"""Issue 38, finding 2, on the OpenAI door through the real `openai` client: a conversation is
the token's that opened it, not its trust level's. An agent token with full trust and an
allowlist never joins the owner's door conversation nor reads its working memory, and two
tokens of one trust never read each other's chats."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import openai
import pytest
from api_kit import PLANNER, TOKEN_CONFIG, TOKENS, App, make_app

pytestmark = pytest.mark.timeout(60)

SECRET = "my new card PIN is 7311 and my HIV test came back positive"
# Two tokens of one trust, one agent and no name: only the tokens tell them apart.
KID_A = "kid-a-token-0123456789abcdef"
KID_B = "kid-b-token-0123456789abcdef"
KIDS = [{"token": t, "trust": "inner", "agent": "supervisor"} for t in (KID_A, KID_B)]


@pytest.fixture
async def app(make_client: Callable[..., Any]) -> App:
    return await make_app(make_client, **{"api.tokens": [*TOKEN_CONFIG, *KIDS]})


@asynccontextmanager
async def client(app: App, token: str) -> AsyncIterator[openai.AsyncOpenAI]:
    url = str(app.client.make_url("/v1"))
    async with openai.AsyncOpenAI(base_url=url, api_key=token, max_retries=0) as ai:
        yield ai


async def say(ai: openai.AsyncOpenAI, text: str, **extra: Any) -> str:
    """One turn; the session it landed in."""
    raw = await ai.chat.completions.with_raw_response.create(
        model="lobug", messages=[{"role": "user", "content": text}], **extra
    )
    raw.parse()
    return str(raw.headers["X-Session-Id"])


def last_prompt(ollama: Any) -> str:
    state, _ = ollama
    return json.dumps(state.chat_calls()[-1]["body"]["messages"])


async def test_an_agent_token_does_not_join_the_owners_door_conversation(
    app: App, ollama: Any
) -> None:
    async with client(app, TOKENS["full"]) as owner, client(app, PLANNER) as planner:
        mine = await say(owner, SECRET)  # no `user`: the door's current conversation
        theirs = await say(planner, "what did I just tell you?")
        assert theirs != mine
        assert "7311" not in last_prompt(ollama) and "HIV" not in last_prompt(ollama)
        # Naming the owner's session does not take the planner there either.
        named = await say(planner, "and now?", extra_headers={"X-Session-Id": mine})
        assert named != mine and "7311" not in last_prompt(ollama)
        # The planner keeps a conversation of its own …
        assert await say(planner, "still me") in (theirs, named)
        assert "what did I just tell you?" in last_prompt(ollama)
        # … and the owner's goes on, working memory and all.
        assert await say(owner, "what was my PIN?") == mine
        assert "7311" in last_prompt(ollama)


async def test_two_tokens_of_one_trust_do_not_read_each_others_chats(app: App, ollama: Any) -> None:
    async with client(app, KID_A) as a, client(app, KID_B) as b:
        first = await say(a, "my diary says I like Sam", user="diary")
        other = await say(b, "what does my diary say?", user="diary")
        assert other != first and "Sam" not in last_prompt(ollama)
        assert await say(b, "what does my diary say?") != first
        assert "Sam" not in last_prompt(ollama)
        assert await say(a, "who do I like?", user="diary") == first
        assert "Sam" in last_prompt(ollama)
