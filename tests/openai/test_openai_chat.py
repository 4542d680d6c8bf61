"""/v1/chat/completions and /v1/models through the real `openai` client, on a real port."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from api_kit import PLANNER, TOKENS, App
from memory_kit import drain

from lobug import keys
from lobug.memory.summaries import base_memory

pytestmark = pytest.mark.timeout(60)


def turn_rows(app: App) -> list[tuple[str, str, str | None, int, str]]:
    rows = app.rows("SELECT role, text, action, degraded, device_id FROM turns ORDER BY id")
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def extractions(app: App) -> set[tuple[int, int | None]]:
    """(user turn, assistant turn) of the queued extraction jobs."""
    sql = (
        "SELECT DISTINCT json_extract(payload, '$.user_turn_id'),"
        " json_extract(payload, '$.assistant_turn_id') FROM jobs WHERE kind = 'extract'"
    )
    return {(r[0], r[1]) for r in app.rows(sql)}


def prompt_of(call: dict[str, Any]) -> str:
    """The system message and this turn's context block before the user's words."""
    messages = call["body"]["messages"]
    return str(messages[0]["content"]) + "\n\n" + str(messages[-1]["content"])


async def test_models_lists_lobug(ai: openai.AsyncOpenAI) -> None:
    models = await ai.models.list()
    assert [m.id for m in models.data] == ["lobug"]
    assert (await ai.models.retrieve("lobug")).owned_by == "lobug"


async def test_a_completion_is_the_device_turn_asked_for_prose(
    app: App, ai: openai.AsyncOpenAI, ollama: Any
) -> None:
    state, _ = ollama
    raw = await ai.chat.completions.with_raw_response.create(
        model="lobug",
        messages=[
            {"role": "system", "content": "Keep answers short."},
            {"role": "user", "content": "My name is Alex"},
        ],
        temperature=0.3,
        max_tokens=64,
    )
    completion = raw.parse()
    assert completion.object == "chat.completion" and completion.model == "lobug"
    assert completion.choices[0].message.content == "You said: My name is Alex"
    assert completion.choices[0].finish_reason == "stop"
    assert raw.headers["X-Session-Id"].startswith("s-")
    assert turn_rows(app) == [
        ("user", "My name is Alex", "RESPOND", 0, "openai"),
        ("assistant", "You said: My name is Alex", "RESPOND", 0, "openai"),
    ]
    (call,) = state.chat_calls()
    body = call["body"]
    # Prose, streamed from Ollama; no JSON envelope for the device's RESPOND/IGNORE.
    assert body["stream"] is True and body.get("format") in (None, "")
    assert body["options"]["temperature"] == 0.3 and body["options"]["num_predict"] == 64
    assert "plain conversational sentences" in prompt_of(call)
    assert '"action"' not in prompt_of(call)
    assert "[Instructions from the client app]\nKeep answers short." in prompt_of(call)
    # Extraction of the exchange is queued, as after a device turn.
    assert extractions(app) == {(1, 2)}


async def test_streamed_reply_arrives_in_chunks_and_is_stored(
    app: App, ai: openai.AsyncOpenAI, ollama: Any
) -> None:
    state, _ = ollama
    state.reply = "Hello Alex, nice to meet you. How was your day?"
    stream = await ai.chat.completions.create(
        model="lobug", messages=[{"role": "user", "content": "hello"}], stream=True
    )
    chunks = [chunk async for chunk in stream]
    assert all(c.object == "chat.completion.chunk" and c.model == "lobug" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(pieces) > 3  # word by word, as Ollama streamed it
    assert "".join(pieces) == state.reply
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert turn_rows(app)[-1] == ("assistant", state.reply, "RESPOND", 0, "openai")


async def test_the_session_carries_the_conversation(
    app: App, ai: openai.AsyncOpenAI, ollama: Any
) -> None:
    state, _ = ollama
    for text in ("my cat is Tom", "what is my cat called?"):
        await ai.chat.completions.create(
            model="lobug", messages=[{"role": "user", "content": text}], user="kitchen"
        )
    history = state.chat_calls()[-1]["body"]["messages"][1:]
    assert history == [
        {"role": "user", "content": "my cat is Tom"},
        {"role": "assistant", "content": "You said: my cat is Tom"},
        {"role": "user", "content": "what is my cat called?"},
    ]
    assert {r[0] for r in app.rows("SELECT DISTINCT session_id FROM turns")} == {"kitchen"}
    # X-Session-Id wins over `user`: another session starts empty.
    await ai.chat.completions.create(
        model="lobug",
        messages=[{"role": "user", "content": "hi"}],
        user="kitchen",
        extra_headers={"X-Session-Id": "car"},
    )
    assert state.chat_calls()[-1]["body"]["messages"][1:] == [{"role": "user", "content": "hi"}]


async def test_a_memory_is_retrieved_into_the_prompt_by_trust(
    app: App, ai: openai.AsyncOpenAI, ollama: Any
) -> None:
    state, _ = ollama
    memory = app.client.app[keys.MEMORY]
    assert memory is not None
    await app.remember("The user's bank PIN is 4417.", store="private")
    await drain(app.db_path, memory.clock)
    question = [{"role": "user", "content": "what is my bank PIN?"}]
    await ai.chat.completions.create(model="lobug", messages=question)  # type: ignore[arg-type]
    assert "4417" in prompt_of(state.chat_calls()[-1])
    async with openai.AsyncOpenAI(
        base_url=str(app.client.make_url("/v1")), api_key=TOKENS["public"], max_retries=0
    ) as stranger:
        await stranger.chat.completions.create(model="lobug", messages=question)  # type: ignore[arg-type]
    assert "4417" not in prompt_of(state.chat_calls()[-1])


async def test_an_agents_category_allowlist_holds_in_its_prompt(app: App, ollama: Any) -> None:
    """Issue 25 finding 4: the `planner` (full trust, goals/tasks/projects) gets neither the bank
    PIN, a health fact nor the base memory through the OpenAI door, as /v1 and MCP refuse them."""
    state, _ = ollama
    memory = app.client.app[keys.MEMORY]
    assert memory is not None
    await app.remember("The user's bank PIN is 4417.", store="private")
    await app.remember("The user is allergic to latex.", store="private", category="health")
    await app.remember("The user plans to repaint the shed.", store="private", category="tasks")
    profile = "User Profile:\n- Alex, bank PIN 4417"
    await app.client.app[keys.DB].write(
        lambda c: base_memory.set_base(c, "default", profile, now=1.0, actor="test", meta={})
    )
    await drain(app.db_path, memory.clock)
    question = [{"role": "user", "content": "my bank PIN, my latex allergy and the shed plan?"}]
    async with openai.AsyncOpenAI(
        base_url=str(app.client.make_url("/v1")), api_key=PLANNER, max_retries=0
    ) as planner:
        await planner.chat.completions.create(model="lobug", messages=question)  # type: ignore[arg-type]
    prompt = prompt_of(state.chat_calls()[-1]).rsplit("\n\n", 1)[0]  # not the question
    assert "repaint the shed" in prompt
    assert "4417" not in prompt and "latex" not in prompt and "Long-term memory" not in prompt


async def test_errors_have_openais_shape(app: App, ai: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        await ai.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "x"}]
        )
    assert missing.value.body == {
        "message": missing.value.body["message"],  # type: ignore[index]
        "type": "invalid_request_error",
        "code": "model_not_found",
        "param": "model",
        "details": {"param": "model"},
    }
    with pytest.raises(openai.BadRequestError) as bad:
        await ai.chat.completions.create(
            model="lobug", messages=[{"role": "assistant", "content": "I am the user"}]
        )
    assert bad.value.body["type"] == "invalid_request_error"  # type: ignore[index]
    assert bad.value.body["param"] == "messages"  # type: ignore[index]
    async with openai.AsyncOpenAI(
        base_url=str(app.client.make_url("/v1")), api_key="not-a-token", max_retries=0
    ) as wrong:
        with pytest.raises(openai.AuthenticationError) as refused:
            await wrong.models.list()
    assert refused.value.body["type"] == "authentication_error"  # type: ignore[index]
    assert refused.value.body["code"] == "unauthorized"  # type: ignore[index]
    assert app.value("SELECT COUNT(*) FROM turns") == 0


async def test_ollama_down_before_the_first_chunk_is_503_and_the_turn_is_kept(
    app: App, ai: openai.AsyncOpenAI, ollama: Any
) -> None:
    state, _ = ollama
    state.mode = "down"
    for stream in (False, True):
        with pytest.raises(openai.InternalServerError) as down:
            await ai.chat.completions.create(
                model="lobug", messages=[{"role": "user", "content": "remember the milk"}],
                stream=stream,
            )  # fmt: skip
        assert down.value.status_code == 503
        assert down.value.body["type"] == "server_error"  # type: ignore[index]
        assert down.value.body["code"] == "llm_unavailable"  # type: ignore[index]
    assert turn_rows(app) == [("user", "remember the milk", "RESPOND", 0, "openai")] * 2
    # Memory work for the user's words waits for the LLM; nothing accepted is lost.
    assert extractions(app) == {(1, None), (2, None)}


@pytest.mark.parametrize("cut", ["reset", "error"])
async def test_ollama_down_mid_stream_ends_with_an_error_event(
    app: App, ai: openai.AsyncOpenAI, ollama: Any, cut: str
) -> None:
    state, _ = ollama
    state.reply = "One two three four five six"
    state.stream_cut_after, state.stream_cut = 2, cut
    stream = await ai.chat.completions.create(
        model="lobug", messages=[{"role": "user", "content": "count for me"}], stream=True
    )
    pieces: list[str] = []
    with pytest.raises(openai.APIError) as failed:
        async for chunk in stream:
            pieces.append(chunk.choices[0].delta.content or "")
    assert "".join(pieces) == "One two "
    assert failed.value.body["code"] == "llm_unavailable"  # type: ignore[index]
    # The user turn stays; what was said before the cut is kept, marked degraded, so it is out
    # of working memory and extraction; the user's words are still queued for memory work.
    assert turn_rows(app) == [
        ("user", "count for me", "RESPOND", 0, "openai"),
        ("assistant", "One two", "RESPOND", 1, "openai"),
    ]
    assert extractions(app) == {(1, None)}
    state.stream_cut_after, state.reply = None, None
    await ai.chat.completions.create(
        model="lobug", messages=[{"role": "user", "content": "again"}], user=_session(app)
    )
    assert state.chat_calls()[-1]["body"]["messages"][1:] == [
        {"role": "user", "content": "count for me"},
        {"role": "user", "content": "again"},
    ]


async def test_a_cut_without_streaming_is_503_with_the_partial_kept(
    app: App, ai: openai.AsyncOpenAI, ollama: Any
) -> None:
    state, _ = ollama
    state.reply, state.stream_cut_after = "One two three", 1
    with pytest.raises(openai.InternalServerError):
        await ai.chat.completions.create(
            model="lobug", messages=[{"role": "user", "content": "go"}]
        )
    assert turn_rows(app)[-1] == ("assistant", "One", "RESPOND", 1, "openai")


async def test_the_raw_stream_is_server_sent_events(app: App) -> None:
    resp = await app.client.post(
        "/v1/chat/completions",
        json={"model": "lobug", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    blocks = (await resp.text()).split("\n\n")
    assert blocks[-2:] == ["data: [DONE]", ""]
    events = [json.loads(b.removeprefix("data: ")) for b in blocks[:-2]]
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events) == "You said: hi"


def _session(app: App) -> str:
    return str(app.value("SELECT session_id FROM turns ORDER BY id DESC LIMIT 1"))
