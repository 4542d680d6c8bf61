"""llm.backend = "openai": the daemon's turns, streams, memory jobs, embeddings, /health and
doctor against the protocol-faithful fake OpenAI-compatible server, over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from api_kit import TOKENS, make_app
from audio_fixtures import FakeTranscriber
from contract import assert_valid
from fake_ollama import FakeOllamaState
from fake_openai_llm import FakeOpenAIState
from memory_kit import Script, facts_json, memory_env

from lobug import keys
from lobug.config import Config
from lobug.llm.backends import make_llm
from lobug.llm.client import LLMUnavailable
from lobug.llm.embedders import EmbeddingUnavailable, close_embedder, make_embedder
from lobug.llm.openai_chat import OpenAIChat
from lobug.llm.replies import REPLY_SCHEMA
from lobug.memory.extract.llm import FACTS_SCHEMA
from lobug.ops import doctor

TEA = "The user likes green tea."


async def turn(client: Any, text: str = "hello") -> dict[str, Any]:
    resp = await client.post("/chat/text", json={"text": text})
    body: dict[str, Any] = await resp.json()
    assert resp.status == 200, body
    return body


def calls(state: FakeOpenAIState) -> list[dict[str, Any]]:
    return [r for r in state.requests if r["path"] == "/v1/chat/completions"]


async def test_a_turn_goes_to_the_openai_server_with_the_reply_schema(
    make_client: Callable[..., Any],
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
    ollama: tuple[FakeOllamaState, str],
) -> None:
    state, _ = openai_llm
    client = await make_client(openai_config())
    body = await turn(client, "My name is Alex")
    assert body["action"] == "RESPOND" and body["response"] == "You said: My name is Alex"
    sent = calls(state)[-1]
    assert sent["auth"] == "Bearer sk-local-1"
    assert sent["body"]["model"] == "gemma-3-270m"  # llm.chat_model unset: the server's first
    assert sent["body"]["stream"] is False
    assert sent["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": REPLY_SCHEMA.schema},
    }
    assert [r["path"] for r in ollama[0].requests] == []  # Ollama is configured, never asked


@pytest.mark.parametrize(
    ("mode", "kind"),
    [("down", "error"), ("malformed", "error"), ("reset", "down"), ("slow", "timeout")],
)
async def test_outages_answer_degraded_as_on_ollama(
    make_client: Callable[..., Any],
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
    mode: str,
    kind: str,
) -> None:
    state, _ = openai_llm
    client = await make_client(openai_config(**{"ollama.timeout_s": 0.5}))
    await turn(client)  # resolves the model name while the server is up
    state.mode, state.delay_s = mode, 2.0 if mode == "slow" else 0.0
    body = await turn(client, "are you there?")
    assert body["degraded"] is True and body["response"].startswith("Sorry")
    assert client.app[keys.LLM].errors == {kind: 1}


async def test_a_missing_model_is_named_on_health_and_degrades_turns(
    make_client: Callable[..., Any], openai_config: Callable[..., Config]
) -> None:
    client = await make_client(openai_config(**{"llm.chat_model": "qwen3-0.6b"}))
    body = await turn(client)
    assert body["degraded"] is True
    assert client.app[keys.LLM].errors == {"model_missing": 1}
    health = await (await client.get("/health")).json()
    assert_valid("health.response", health)
    assert health["status"] == "degraded" and health["ollama"] is False
    assert health["llm"] == {"backend": "openai", "ok": False}
    assert any("has no model 'qwen3-0.6b'" in p for p in health["problems"]), health


async def test_health_names_the_backend_and_never_shows_the_key(
    make_client: Callable[..., Any],
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
) -> None:
    state, _ = openai_llm
    client = await make_client(openai_config())
    resp = await client.get("/health")
    text = await resp.text()
    health = json.loads(text)
    assert health["status"] == "ok" and health["llm"] == {"backend": "openai", "ok": True}
    assert "sk-local" not in text
    assert "sk-local" not in json.dumps(client.app[keys.CONFIG].to_dict())
    assert state.requests[-1]["auth"] == "Bearer sk-local-1"  # the model check sent it
    state.mode = "reset"
    health = await (await client.get("/health")).json()
    assert health["status"] == "degraded" and health["llm"]["ok"] is False
    assert any("openai server at" in p and "unreachable" in p for p in health["problems"])


async def test_the_openai_door_streams_from_the_openai_backend(
    make_client: Callable[..., Any], openai_config: Callable[..., Config]
) -> None:
    app = await make_app(make_client, **_door(openai_config))
    async with openai.AsyncOpenAI(
        base_url=str(app.client.make_url("/v1")), api_key=TOKENS["full"], max_retries=0
    ) as ai:
        stream = await ai.chat.completions.create(
            model="lobug", stream=True, messages=[{"role": "user", "content": "tell me a joke"}]
        )
        pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        assert "".join(pieces) == "You said: tell me a joke"
        assert len([p for p in pieces if p]) > 1  # piece by piece, as the server sent them
        reply = await ai.chat.completions.create(
            model="gemma-3-270m", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content == "You said: hi"


def _door(openai_config: Callable[..., Config]) -> dict[str, Any]:
    from api_kit import TOKEN_CONFIG

    config = openai_config()
    return {
        "llm.backend": config.llm.backend,
        "llm.base_url": config.llm.base_url,
        "api.tokens": TOKEN_CONFIG,
    }


@pytest.mark.parametrize("cut", ["data", "llama", "reset"])
async def test_a_stream_cut_short_is_llm_unavailable(
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
    cut: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    state, _ = openai_llm
    state.reply = "one two three four five"
    state.stream_cut_after = 2
    state.stream_cut = "reset" if cut == "reset" else "error"
    state.stream_error_style = cut
    llm = make_llm(openai_config())
    got: list[str] = []
    try:
        with pytest.raises(LLMUnavailable) as raised:
            async for piece in llm.stream([{"role": "user", "content": "count"}]):
                got.append(piece)
    finally:
        await llm.close()
    # A reset may lose what was still in the server's buffers; an error event comes after it.
    assert got == ["one ", "two "] if cut != "reset" else ["one ", "two "][: len(got)] == got
    assert raised.value.kind == ("down" if cut == "reset" else "error")
    if cut != "reset":  # the server's words go to the owner's log, not to callers
        assert "answered 500" in str(raised.value)
        assert "stopped mid-stream" not in str(raised.value)
        assert "it said: fake server: the model stopped mid-stream" in caplog.text


async def test_extraction_and_embeddings_run_on_the_openai_server(
    tmp_path: Path,
    openai_llm: tuple[FakeOpenAIState, str],
    openai_overrides: dict[str, Any],
    ollama: tuple[FakeOllamaState, str],
    clock: Any,
) -> None:
    state, _ = openai_llm
    state.script = Script(extract=lambda _: facts_json(TEA, kind="preference"))
    state.models.append("house-embed")
    overrides = {
        **openai_overrides,
        "embedding.backend": "openai",
        "embedding.model": "house-embed",  # the fake answers 768-d for any model
        "embedding.dim": 768,
    }
    async with memory_env(tmp_path, ollama[1], clock, **overrides) as mem:
        await mem.exchange("I love green tea", "Lovely!")
        await mem.run()
        assert mem.facts() == [TEA]
        assert mem.value("SELECT COUNT(*) FROM memory_vectors") == 1
        assert mem.service.llm.outputs == {("fact extraction", True): 1}
    extraction = state.memory_calls("extract")[-1]["body"]
    assert extraction["response_format"]["json_schema"]["schema"] == FACTS_SCHEMA.schema
    embedded = [r for r in state.requests if r["path"] == "/v1/embeddings"]
    assert embedded and all(r["auth"] == "Bearer sk-local-1" for r in embedded)
    assert ollama[0].requests == []


async def test_an_embedding_of_another_size_is_refused(
    openai_config: Callable[..., Config],
) -> None:
    config = openai_config(
        **{"embedding.backend": "openai", "embedding.model": "all-minilm", "embedding.dim": 384}
    )
    embedder = make_embedder(config)
    try:
        with pytest.raises(EmbeddingUnavailable, match="768 dimensions; expected 1 of 384"):
            await embedder.embed(["hello"])
    finally:
        await close_embedder(embedder)


async def test_switching_backends_keeps_the_conversation(
    make_client: Callable[..., Any],
    make_config: Callable[..., Config],
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
) -> None:
    on_ollama = await make_client(make_config())
    first = await turn(on_ollama, "My cat is called Tom")
    await on_ollama.close()
    on_openai = await make_client(openai_config())
    again = await turn(on_openai, "What is my cat called?")
    assert again["session_id"] == first["session_id"]
    said = [m["content"] for m in calls(openai_llm[0])[-1]["body"]["messages"]]
    assert any("My cat is called Tom" in m for m in said)


async def test_doctor_checks_the_openai_server(
    openai_config: Callable[..., Config], openai_llm: tuple[FakeOpenAIState, str]
) -> None:
    config = openai_config(
        **{"embedding.backend": "openai", "embedding.model": "house-embed", "embedding.dim": 768}
    )
    openai_llm[0].models.append("house-embed")
    checks = {c.name: c for c in await doctor.run_checks(config, transcriber=FakeTranscriber())}
    assert checks["openai"].status == "ok" and openai_llm[1] in checks["openai"].detail
    assert checks["chat model"].status == "ok" and "gemma-3-270m" in checks["chat model"].detail
    assert checks["embedding model"].status == "ok"
    assert "768-d" in checks["embedding model"].detail
    missing = openai_config(**{"llm.chat_model": "qwen3-0.6b"})
    checks = {c.name: c for c in await doctor.run_checks(missing, transcriber=FakeTranscriber())}
    assert checks["chat model"].status == "FAIL" and "qwen3-0.6b" in checks["chat model"].detail
    assert "llm.chat_model" in (checks["chat model"].fix or "")
    openai_llm[0].mode = "down"
    checks = {c.name: c for c in await doctor.run_checks(config, transcriber=FakeTranscriber())}
    assert checks["openai"].status == "FAIL" and "llm.base_url" in (checks["openai"].fix or "")


async def test_the_client_is_the_openai_one(openai_config: Callable[..., Config]) -> None:
    llm = make_llm(openai_config())
    assert isinstance(llm, OpenAIChat) and llm.backend == "openai"
    await llm.close()


async def test_a_server_with_no_model_fails_memory_work_as_memory_works_failure(
    openai_config: Callable[..., Config], openai_llm: tuple[FakeOpenAIState, str]
) -> None:
    """The model lookup is part of the call: a memory call that finds no model is counted as
    memory work's failure, not the chat's (issue 24: one client, two counts)."""
    state, _ = openai_llm
    state.models = []
    llm = make_llm(openai_config())
    try:
        with pytest.raises(LLMUnavailable) as memory_call:
            await llm.chat([{"role": "user", "content": "hi"}], timeout_s=5.0)
        assert memory_call.value.kind == "model_missing"
        assert "lists no model" in str(memory_call.value)
        assert llm.memory_errors == {"model_missing": 1} and llm.errors == {}
        with pytest.raises(LLMUnavailable):
            await llm.chat([{"role": "user", "content": "hi"}])  # the chat's own call
        assert llm.errors == {"model_missing": 1}
    finally:
        await llm.close()
