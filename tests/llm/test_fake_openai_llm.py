"""The fake OpenAI-compatible server speaks the protocol: the real `openai` client reads its
model list, completions (plain and streamed, with usage), embeddings and error bodies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import openai
import pytest
from fake_openai_llm import FakeOpenAIState

from lobug.memory.extract.llm import FACTS_SCHEMA


@pytest.fixture
async def ai(openai_llm: tuple[FakeOpenAIState, str]) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=openai_llm[1], api_key="sk-x", max_retries=0) as c:
        yield c


HI = [{"role": "user", "content": "hi"}]


async def test_models_completions_and_embeddings(
    ai: openai.AsyncOpenAI, openai_llm: tuple[FakeOpenAIState, str]
) -> None:
    assert [m.id async for m in ai.models.list()] == ["gemma-3-270m", "all-minilm"]
    reply = await ai.chat.completions.create(model="gemma-3-270m", messages=HI)
    assert reply.choices[0].message.content == "You said: hi"
    assert reply.choices[0].finish_reason == "stop" and reply.usage is not None
    stream = await ai.chat.completions.create(
        model="gemma-3-270m",
        messages=HI,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "You said: hi"
    )
    assert chunks[-1].usage is not None and chunks[-1].choices == []
    vectors = await ai.embeddings.create(model="all-minilm", input=["a", "b"])
    assert [len(v.embedding) for v in vectors.data] == [768, 768]
    assert openai_llm[0].requests[-1]["auth"] == "Bearer sk-x"


async def test_a_schema_constrains_the_answer_unless_ignored(
    ai: openai.AsyncOpenAI, openai_llm: tuple[FakeOpenAIState, str]
) -> None:
    state, _ = openai_llm
    state.reply = "Here are the facts: none."
    fmt = {"type": "json_schema", "json_schema": {"name": "facts", "schema": FACTS_SCHEMA.schema}}
    reply = await ai.chat.completions.create(
        model="gemma-3-270m",
        messages=HI,
        response_format=fmt,
    )
    assert json.loads(reply.choices[0].message.content or "") == []
    state.ignore_schema = True
    reply = await ai.chat.completions.create(
        model="gemma-3-270m",
        messages=HI,
        response_format=fmt,
    )
    assert reply.choices[0].message.content == "Here are the facts: none."


async def test_errors_are_the_apis_error_bodies(
    ai: openai.AsyncOpenAI, openai_llm: tuple[FakeOpenAIState, str]
) -> None:
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        await ai.chat.completions.create(model="nope", messages=HI)
    openai_llm[0].mode = "down"
    with pytest.raises(openai.InternalServerError, match="fake server is down"):
        await ai.chat.completions.create(model="gemma-3-270m", messages=HI)
