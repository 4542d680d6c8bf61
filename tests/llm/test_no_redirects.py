"""Issue 38, finding 14: the openai backend followed a 307, re-sending the prompt (and the
private memories in it) to another origin. Neither backend nor embedder follows a redirect:
the call fails as the server's error and the turn answers degraded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_ollama import FakeOllamaState
from fake_ollama import build_app as build_ollama
from fake_openai_llm import FakeOpenAIState
from fake_openai_llm import build_app as build_openai

from lobug.config import Config
from lobug.llm.embedders import EmbeddingUnavailable, close_embedder, make_embedder

SECRET = "my bank PIN is 7311"


@pytest.mark.parametrize("status", [307, 308, 302])
async def test_the_openai_backend_does_not_follow_a_redirect(
    make_client: Callable[..., Any],
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
    aiohttp_server: Any,
    status: int,
) -> None:
    elsewhere = FakeOpenAIState()
    other = await aiohttp_server(build_openai(elsewhere))
    state, _ = openai_llm
    state.redirect, state.redirect_to = status, str(other.make_url("")).rstrip("/")
    config = openai_config(
        **{"embedding.backend": "openai", "embedding.model": "house-embed", "embedding.dim": 768}
    )
    client = await make_client(config)
    resp = await client.post("/chat/text", json={"text": SECRET})
    body = await resp.json()
    assert resp.status == 200 and body["degraded"] is True, body
    health = await (await client.get("/health")).json()
    assert any(f"answered {status}" in p for p in health["problems"]), health
    embedder = make_embedder(config)
    try:
        with pytest.raises(EmbeddingUnavailable, match=f"answered {status}"):
            await embedder.embed([SECRET])
    finally:
        await close_embedder(embedder)
    assert elsewhere.requests == []  # nothing reached the other origin


async def test_the_ollama_backend_does_not_follow_a_redirect(
    make_client: Callable[..., Any],
    ollama: tuple[FakeOllamaState, str],
    aiohttp_server: Any,
) -> None:
    elsewhere = FakeOllamaState()
    other = await aiohttp_server(build_ollama(elsewhere))
    state, _ = ollama
    state.redirect, state.redirect_to = 307, str(other.make_url("")).rstrip("/")
    client = await make_client()
    resp = await client.post("/chat/text", json={"text": SECRET})
    body = await resp.json()
    assert resp.status == 200 and body["degraded"] is True, body
    assert elsewhere.requests == []
