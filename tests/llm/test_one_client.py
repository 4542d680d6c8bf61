"""One LLM client per daemon (issue 24): the chat, memory work, the health probe and the Ollama
embedder share one `ollama.AsyncClient`; memory work passes its own bound on each call, and its
failures neither mark the server down on /health nor count as the chat's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_ollama import FakeOllamaState

from lobug.config import Config
from lobug.llm import client
from lobug.llm.backends import make_llm
from lobug.llm.client import LLMUnavailable
from lobug.llm.embedders import OllamaEmbedder, close_embedder, make_embedder

SAY = [{"role": "user", "content": "hi"}]


async def test_a_long_memory_call_timing_out_is_not_llm_down(
    make_config: Callable[..., Config],
    ollama: tuple[FakeOllamaState, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state, _ = ollama
    monkeypatch.setattr(client, "HEALTH_CACHE_S", 60.0)  # a mark stays what /health says
    llm = make_llm(make_config(**{"ollama.timeout_s": 0.2}))
    try:
        state.delay_s = 1.0
        with pytest.raises(LLMUnavailable) as memory_call:
            await llm.chat(SAY, timeout_s=0.3)  # memory work: its own bound
        assert memory_call.value.kind == "timeout"
        state.delay_s = 0.0
        assert (await llm.health()).reachable
        assert llm.memory_errors == {"timeout": 1} and llm.errors == {}

        state.delay_s = 1.0
        with pytest.raises(LLMUnavailable):
            await llm.chat(SAY)  # the chat, on ollama.timeout_s
        state.delay_s = 0.0
        health = await llm.health()
        assert not health.reachable and "timed out" in (health.error or "")
        assert llm.errors == {"timeout": 1} and llm.memory_errors == {"timeout": 1}
    finally:
        await llm.close()


async def test_a_memory_call_outlives_the_chats_bound(
    make_config: Callable[..., Config], ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    state.reply = "a summary"
    llm = make_llm(make_config(**{"ollama.timeout_s": 0.2}))
    try:
        state.delay_s = 0.5
        assert await llm.chat(SAY, timeout_s=5.0) == "a summary"
    finally:
        await llm.close()


async def test_the_ollama_embedder_borrows_the_chats_client(
    make_config: Callable[..., Config], ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    state.reply = "still here"
    config = make_config(**{"embedding.backend": "ollama", "embedding.dim": 768})
    llm: Any = make_llm(config)
    embedder = make_embedder(config, llm)
    assert isinstance(embedder, OllamaEmbedder) and embedder.client is llm.client
    assert len((await embedder.embed(["one pool"]))[0]) == 768
    await close_embedder(embedder)  # the client is the chat's to close
    assert await llm.chat(SAY) == "still here"
    await llm.close()
    alone = make_embedder(config)  # no chat client to borrow (doctor): its own, closed by it
    assert isinstance(alone, OllamaEmbedder) and alone.client is not llm.client
    assert len((await alone.embed(["own pool"]))[0]) == 768
    await close_embedder(alone)
