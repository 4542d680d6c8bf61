"""A reply's bounds on both backends (lobug.llm.client): the daemon's ceiling on max_tokens, a
reply cut at its length, a stream ended at its time, a body too large refused unread (issue 38,
finding 3), against the protocol-faithful fakes serving a huge or endless reply."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from fake_ollama import FakeOllamaState

from lobug.config import Config
from lobug.llm.backends import make_llm
from lobug.llm.client import CHARS_PER_TOKEN, LLMUnavailable

CEILING = 64  # ollama.max_tokens in these tests: a reply of at most 1,024 characters
ASK = [{"role": "user", "content": "tell me the longest story you know"}]


@pytest.fixture(params=["ollama", "openai"])
def backend(
    request: pytest.FixtureRequest,
    make_config: Callable[..., Config],
    ollama: tuple[FakeOllamaState, str],
    openai_llm: tuple[FakeOllamaState, str],
) -> tuple[Config, FakeOllamaState]:
    """A config on each backend with a small ceiling, and that backend's fake."""
    limits = {"ollama.max_tokens": CEILING, "ollama.timeout_s": 0.5}
    if request.param == "ollama":
        return make_config(**limits), ollama[0]
    state, url = openai_llm
    return make_config(**limits, **{"llm.backend": "openai", "llm.base_url": url}), state


def asked_tokens(state: FakeOllamaState) -> Any:
    body = state.requests[-1]["body"]
    return body.get("max_tokens", (body.get("options") or {}).get("num_predict"))


async def test_a_callers_max_tokens_is_lowered_to_the_ceiling_and_none_gets_it(
    backend: tuple[Config, FakeOllamaState],
) -> None:
    config, state = backend
    llm = make_llm(config)
    try:
        await llm.chat(ASK, max_tokens=1_000_000)
        assert asked_tokens(state) == CEILING
        await llm.chat(ASK)  # Wyoming's turns named none
        assert asked_tokens(state) == CEILING
        await llm.chat(ASK, max_tokens=16)
        assert asked_tokens(state) == 16
        async for _ in llm.stream(ASK, max_tokens=1_000_000):
            pass
        assert asked_tokens(state) == CEILING
    finally:
        await llm.close()


async def test_an_endless_stream_is_cut_at_its_length_in_bounded_memory(
    backend: tuple[Config, FakeOllamaState],
) -> None:
    """The server ignores the token limit and never stops: the reply ends at the ceiling's
    characters; the daemon never holds more than that."""
    config, state = backend
    state.stream_endless = True
    state.reply = "la"
    llm = make_llm(config)
    tracemalloc.start()
    try:
        said = "".join([p async for p in llm.stream(ASK, max_tokens=1_000_000)])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await llm.close()
    assert len(said) == CEILING * CHARS_PER_TOKEN and said.startswith("la la ")
    assert peak < 8 << 20


async def test_an_endless_slow_stream_ends_at_its_time_limit(
    backend: tuple[Config, FakeOllamaState], monkeypatch: pytest.MonkeyPatch
) -> None:
    config, state = backend
    state.stream_endless = True
    state.stream_delay_s = 0.05  # a piece in time, for ever: only the whole reply's bound ends it
    state.reply = "la"
    llm = make_llm(config)
    began = time.monotonic()
    try:
        said = "".join([p async for p in llm.stream(ASK)])
    finally:
        await llm.close()
    assert 0 < len(said) < CEILING * CHARS_PER_TOKEN
    assert time.monotonic() - began < 20  # STREAM_TIMEOUTS × 0.5 s, and then some


async def test_a_huge_plain_reply_is_refused_or_cut_never_held(
    backend: tuple[Config, FakeOllamaState],
) -> None:
    """A body 16 times the byte bound (64 KB here: 1 KB a token) is refused as it arrives (the
    caller answers degraded); a reply within it but past the ceiling's characters is cut."""
    config, state = backend
    llm = make_llm(config)
    try:
        state.reply = "la " * 350_000  # 1 MB (the finding's was 50 MB: refused alike)
        with pytest.raises(LLMUnavailable) as failed:
            await llm.chat(ASK)
        assert failed.value.kind == "error" and "bytes" in str(failed.value)
        state.reply = "la " * 5_000  # 15 KB: within the byte bound, past 1,024 characters
        said = await llm.chat(ASK)
        assert said == ("la " * 5_000)[: CEILING * CHARS_PER_TOKEN]
    finally:
        await llm.close()
