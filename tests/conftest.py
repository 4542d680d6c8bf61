"""Shared fixtures: a fake Ollama server, configs on tmp_path, and the app under the test client."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

sys.path.insert(0, str(Path(__file__).parent))

from audio_fixtures import FakeTranscriber  # noqa: E402
from fake_ollama import FakeOllamaState, build_app  # noqa: E402
from faultkit import DaemonPool  # noqa: E402
from memory_kit import MemoryEnv, fast_constants, memory_env  # noqa: E402

from lobug import keys  # noqa: E402
from lobug.app import Overrides, create_app  # noqa: E402
from lobug.config import Config, load_config  # noqa: E402

# Nothing in the suite may reach a hub for a model.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class Clock:
    """A controllable clock: tests move time instead of sleeping."""

    def __init__(self, start: float = 1_750_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def aiohttp_client(aiohttp_server: Any, aiohttp_client: Any) -> Any:
    """pytest-aiohttp's client factory, set up after its server factory, so the fake model
    servers (Ollama's, the OpenAI-compatible one) close after the apps that call them: a job's
    model call in flight at teardown would otherwise wait out aiohttp's 60 s server shutdown."""
    return aiohttp_client


@pytest.fixture
async def ollama(aiohttp_server: Any) -> tuple[FakeOllamaState, str]:
    state = FakeOllamaState()
    server = await aiohttp_server(build_app(state))
    return state, str(server.make_url("")).rstrip("/")


@pytest.fixture
def make_config(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Config]:
    _, url = ollama
    fast_constants(monkeypatch)

    def factory(**overrides: Any) -> Config:
        values = {
            "storage.data_dir": str(tmp_path / "data"),
            "ollama.host": url,
            "ollama.timeout_s": 2.0,
            "embedding.backend": "hashing",
            "embedding.dim": 64,
            "log.level": "DEBUG",
            "memory.quiet_s": 0.0,  # memory work may follow a turn at once (still after it)
        }
        values.update(overrides)
        return load_config(None, env={}, overrides=values)

    return factory


@pytest.fixture
async def daemons(tmp_path: Path, ollama: tuple[FakeOllamaState, str]) -> AsyncIterator[DaemonPool]:
    """Real daemon processes on one data dir; none outlives the test."""
    pool = DaemonPool(tmp_path / "data", ollama[1])
    yield pool
    pool.stop_all()


@pytest.fixture
def transcriber() -> FakeTranscriber:
    return FakeTranscriber(text="what's the weather like")


@pytest.fixture
def make_client(
    aiohttp_client: Any,
    make_config: Callable[..., Config],
    transcriber: FakeTranscriber,
    clock: Clock,
) -> Callable[..., Any]:
    async def factory(config: Config | None = None, **overrides: Any) -> TestClient:
        app = create_app(
            config or make_config(**overrides), Overrides(transcriber=transcriber, clock=clock)
        )
        client: TestClient = await aiohttp_client(TestServer(app))
        await client.app[
            keys.SPEECH
        ].load()  # the app loads in the background; tests want it ready now
        return client

    return factory


@pytest.fixture
async def client(make_client: Callable[..., Any]) -> TestClient:
    return await make_client()


@pytest.fixture
async def mem(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Clock
) -> AsyncIterator[MemoryEnv]:
    """A memory service on a real DB with the default config (a file with other overrides
    defines its own `mem`)."""
    async with memory_env(tmp_path, ollama[1], clock) as env:
        yield env
