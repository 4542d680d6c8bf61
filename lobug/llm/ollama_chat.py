"""The Ollama chat client (lobug.llm.client): one explicit timeout per call, errors mapped to
LLMUnavailable."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import httpx
import ollama

from lobug.config import OllamaConfig
from lobug.config.redaction import Redactor, redact_url
from lobug.llm.client import LLMClient, OutputSchema
from lobug.llm.lane import LLMLane
from lobug.llm.transport import ollama_client

log = logging.getLogger(__name__)


class OllamaChat(LLMClient):
    """Chat and health calls against a local Ollama through `ollama.AsyncClient`."""

    backend = "ollama"

    def __init__(
        self, config: OllamaConfig, *, lane: LLMLane | None = None, schemas: bool = True
    ) -> None:
        super().__init__(config, lane=lane, schemas=schemas)
        self.where = redact_url(config.host)
        self.redact = Redactor.of_server(config.host)
        # One client for plain, streamed and health calls (and the Ollama embedder, which
        # borrows it: lobug.llm.embedders.make_embedder); each call sets its own timeout.
        self.client = ollama_client(config.host, max_reply_bytes=self.max_reply_bytes)

    @property
    def model(self) -> str:
        return self.config.chat_model

    async def close(self) -> None:
        await self.client.close()

    async def _complete(
        self,
        messages: Sequence[dict[str, str]],
        schema: OutputSchema | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> str:
        response = await self.client.chat(
            model=self.config.chat_model,
            messages=list(messages),
            stream=False,
            format=schema.schema if schema else None,
            options=self._options(temperature, max_tokens),
            keep_alive=self.config.keep_alive,
        )
        return response.message.content or ""

    async def _stream(
        self,
        messages: Sequence[dict[str, str]],
        temperature: float | None,
        max_tokens: int,
    ) -> AsyncGenerator[str, None]:
        timeout = self.config.timeout_s
        options = self._options(temperature, max_tokens)
        with self._mapped_errors(timeout):
            parts = await asyncio.wait_for(
                self.client.chat(
                    model=self.config.chat_model,
                    messages=list(messages),
                    stream=True,
                    options=options,
                    keep_alive=self.config.keep_alive,
                ),
                timeout,
            )
        try:
            while True:
                with self._mapped_errors(timeout):
                    try:
                        part = await asyncio.wait_for(anext(parts), timeout)
                    except StopAsyncIteration:
                        return
                yield part.message.content or ""
                if part.done:
                    return
        finally:
            # The ollama client's stream is an async generator: closing it closes the response.
            close = getattr(parts, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()

    def _options(self, temperature: float | None, max_tokens: int | None) -> dict[str, Any]:
        options: dict[str, Any] = {
            "temperature": self.config.temperature if temperature is None else temperature
        }
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        return options

    def _classify(self, exc: Exception, timeout: float) -> tuple[str, str, str | None] | None:
        if isinstance(exc, TimeoutError):
            message = f"Ollama did not answer within {timeout:.0f}s"
            return message, "timeout", f"chat timed out after {timeout:.0f}s"
        if isinstance(exc, ollama.ResponseError):
            kind = "model_missing" if exc.status_code == 404 else "error"
            return f"Ollama at {self.where} answered {exc.status_code}", kind, None
        if isinstance(exc, httpx.HTTPError | ConnectionError | OSError):
            return f"cannot reach Ollama at {self.where}: {exc}", "down", str(exc)
        # A reply that is not Ollama's JSON (or JSON nested too deep for the client to read).
        if isinstance(exc, ValueError | TypeError | KeyError | RecursionError):
            return f"Ollama sent a malformed reply: {exc}", "error", None
        return None

    def _server_words(self, exc: Exception) -> str | None:
        return exc.error if isinstance(exc, ollama.ResponseError) else None

    async def _list_models(self) -> tuple[str, ...]:
        listed = await self.client.list()
        return tuple(m.model or "" for m in listed.models)
