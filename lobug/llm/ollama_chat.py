"""The Ollama chat client: one explicit timeout per call, errors mapped to LLMUnavailable."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import ollama

from lobug.config import OllamaConfig
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
    """Chat and health calls against a local Ollama through `ollama.AsyncClient`."""

    def __init__(self, config: OllamaConfig) -> None:
        self.config = config
        self.client = ollama.AsyncClient(
            host=config.host, timeout=config.timeout_s, transport=AiohttpTransport()
        )
        self._health_client = ollama.AsyncClient(
            host=config.host, timeout=config.health_timeout_s, transport=AiohttpTransport(limit=2)
        )
        self._health: OllamaHealth | None = None
        self._health_at = 0.0
        self._health_lock = asyncio.Lock()

    async def close(self) -> None:
        for client in (self.client, self._health_client):
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
        """One non-streaming chat call; returns the assistant's content."""
        timeout = timeout_s or self.config.timeout_s
        options = {"temperature": self.config.temperature if temperature is None else temperature}
        try:
            response = await asyncio.wait_for(
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
        except TimeoutError:
            self._mark_down(f"chat timed out after {timeout:.0f}s")
            raise LLMUnavailable(
                f"Ollama did not answer within {timeout:.0f}s", kind="timeout"
            ) from None
        except ollama.ResponseError as exc:
            kind = "model_missing" if exc.status_code == 404 else "error"
            raise LLMUnavailable(
                f"Ollama answered {exc.status_code}: {exc.error}", kind=kind
            ) from None
        except (httpx.HTTPError, ConnectionError, OSError) as exc:
            self._mark_down(str(exc))
            raise LLMUnavailable(f"cannot reach Ollama at {self.config.host}: {exc}") from None
        except (ValueError, TypeError, KeyError) as exc:  # a reply that is not Ollama's JSON
            raise LLMUnavailable(f"Ollama sent a malformed reply: {exc}", kind="error") from None
        content = _content(response)
        return content

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
