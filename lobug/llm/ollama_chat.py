"""The Ollama chat client: one explicit timeout per call, errors mapped to LLMUnavailable."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import ollama

from lobug.config import OllamaConfig
from lobug.llm.lane import LLMLane
from lobug.llm.transport import AiohttpTransport

log = logging.getLogger(__name__)


class LLMUnavailable(Exception):
    """Ollama is down, timed out, answered with an error, or the model is missing."""

    def __init__(self, message: str, *, kind: str = "down") -> None:
        super().__init__(message)
        self.kind = kind  # down | timeout | model_missing | error


@dataclass(frozen=True)
class OllamaHealth:
    reachable: bool
    models: tuple[str, ...] = ()
    error: str | None = None

    def has_model(self, name: str) -> bool:
        wanted = name if ":" in name else f"{name}:latest"
        return wanted in self.models or name in self.models


class OllamaChat:
    """Chat and health calls against a local Ollama through `ollama.AsyncClient`.

    `lane`: where chat calls wait their turn (lobug.llm.lane); the daemon's chat and memory
    clients share one. Without one, calls go straight to Ollama (the CLI, doctor)."""

    def __init__(self, config: OllamaConfig, *, lane: LLMLane | None = None) -> None:
        self.config = config
        self.lane = lane or LLMLane(enabled=False)
        self.client = ollama.AsyncClient(
            host=config.host, timeout=config.timeout_s, transport=AiohttpTransport()
        )
        self._health_client = ollama.AsyncClient(
            host=config.host, timeout=config.health_timeout_s, transport=AiohttpTransport(limit=2)
        )
        # Streamed replies need a transport that hands chunks on as they arrive.
        self._stream_client = ollama.AsyncClient(
            host=config.host,
            timeout=config.timeout_s,
            transport=AiohttpTransport(limit=16, streaming=True),
        )
        # Failed calls by LLMUnavailable.kind, read by /metrics (lobug.metrics).
        self.errors: Counter[str] = Counter()
        self._health: OllamaHealth | None = None
        self._health_at = 0.0
        self._health_lock = asyncio.Lock()

    async def close(self) -> None:
        for client in (self.client, self._health_client, self._stream_client):
            await client._client.aclose()  # the ollama client exposes no close() of its own

    async def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        json_mode: bool = False,
        timeout_s: float | None = None,
        temperature: float | None = None,
        model: str | None = None,
    ) -> str:
        """One non-streaming chat call (in its place in the lane); returns the content."""
        timeout = timeout_s or self.config.timeout_s
        options = {"temperature": self.config.temperature if temperature is None else temperature}

        async def call() -> Any:
            with self._mapped_errors(timeout):
                return await asyncio.wait_for(
                    self.client.chat(
                        model=model or self.config.chat_model,
                        messages=list(messages),
                        stream=False,
                        format="json" if json_mode else None,
                        options=options,
                        keep_alive=self.config.keep_alive,
                    ),
                    timeout,
                )

        return _content(await self.lane.call(call))

    async def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str]:
        """A streamed chat call: the reply's text pieces as Ollama produces them.

        `timeout_s` bounds the wait for each piece (the first one included), not the whole
        reply: a long answer that keeps coming is fine, a stalled one is not. Every failure,
        before the first piece or in the middle, is an LLMUnavailable."""
        timeout = self.config.timeout_s
        options: dict[str, Any] = {
            "temperature": self.config.temperature if temperature is None else temperature
        }
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        with self._mapped_errors(timeout):
            parts = await asyncio.wait_for(
                self._stream_client.chat(
                    model=self.config.chat_model,
                    messages=list(messages),
                    stream=True,
                    options=options,
                    keep_alive=self.config.keep_alive,
                ),
                timeout,
            )
        iterator = aiter(parts)
        try:
            while True:
                with self._mapped_errors(timeout):
                    try:
                        part = await asyncio.wait_for(anext(iterator), timeout)
                    except StopAsyncIteration:
                        return
                piece = _content(part)
                if piece:
                    yield piece
                if getattr(part, "done", False):
                    return
        finally:
            await _aclose(iterator)

    @contextlib.contextmanager
    def _mapped_errors(self, timeout: float) -> Iterator[None]:
        """The ollama client's and the transport's failures as LLMUnavailable, counted."""
        try:
            yield
        except LLMUnavailable:
            raise
        except TimeoutError:
            self._mark_down(f"chat timed out after {timeout:.0f}s")
            raise self._failed(
                f"Ollama did not answer within {timeout:.0f}s", kind="timeout"
            ) from None
        except ollama.ResponseError as exc:
            kind = "model_missing" if exc.status_code == 404 else "error"
            raise self._failed(f"Ollama answered {exc.status_code}: {exc.error}", kind) from None
        except (httpx.HTTPError, ConnectionError, OSError) as exc:
            self._mark_down(str(exc))
            raise self._failed(f"cannot reach Ollama at {self.config.host}: {exc}") from None
        except (ValueError, TypeError, KeyError) as exc:  # a reply that is not Ollama's JSON
            raise self._failed(f"Ollama sent a malformed reply: {exc}", "error") from None

    def _failed(self, message: str, kind: str = "down") -> LLMUnavailable:
        self.errors[kind] += 1
        return LLMUnavailable(message, kind=kind)

    async def health(self, *, fresh: bool = False) -> OllamaHealth:
        """Reachability and model list, cached for a few seconds so /health stays cheap."""
        now = time.monotonic()
        if not fresh and self._health and now - self._health_at < self.config.health_cache_s:
            return self._health
        async with self._health_lock:
            if (
                not fresh
                and self._health
                and time.monotonic() - self._health_at < self.config.health_cache_s
            ):
                return self._health
            try:
                listed = await asyncio.wait_for(
                    self._health_client.list(), self.config.health_timeout_s
                )
                names = tuple(m.model or "" for m in listed.models)
                health = OllamaHealth(reachable=True, models=names)
            except Exception as exc:  # noqa: BLE001 - health reports, never raises
                health = OllamaHealth(reachable=False, error=f"{type(exc).__name__}: {exc}")
            self._health, self._health_at = health, time.monotonic()
            return health

    def _mark_down(self, reason: str) -> None:
        self._health = OllamaHealth(reachable=False, error=reason)
        self._health_at = time.monotonic()


def _content(response: Any) -> str:
    message = getattr(response, "message", None)
    if message is None and isinstance(response, dict):
        message = response.get("message")
    content = getattr(message, "content", None)
    if content is None and isinstance(message, dict):
        content = message.get("content")
    return str(content or "")


async def _aclose(iterator: Any) -> None:
    # The ollama client's stream is an async generator: closing it closes the HTTP response.
    close = getattr(iterator, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()
