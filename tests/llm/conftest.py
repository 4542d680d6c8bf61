"""The fake OpenAI-compatible server (tests/fake_openai_llm.py) and configs pointing at it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_openai_llm import FakeOpenAIState, build_app

from lobug.config import Config


@pytest.fixture
async def openai_llm(aiohttp_server: Any) -> tuple[FakeOpenAIState, str]:
    """The fake server and its API root (…/v1)."""
    state = FakeOpenAIState()
    server = await aiohttp_server(build_app(state))
    return state, str(server.make_url("/v1"))


@pytest.fixture
def openai_overrides(openai_llm: tuple[FakeOpenAIState, str]) -> dict[str, Any]:
    """Config overrides that move chat and memory onto the OpenAI-compatible backend (the
    fake Ollama stays configured, and must see no request)."""
    return {"llm.backend": "openai", "llm.base_url": openai_llm[1], "llm.api_key": "sk-local-1"}


@pytest.fixture
def openai_config(
    make_config: Callable[..., Config], openai_overrides: dict[str, Any]
) -> Callable[..., Config]:
    def factory(**overrides: Any) -> Config:
        return make_config(**{**openai_overrides, **overrides})

    return factory
