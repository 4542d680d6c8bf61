"""The OpenAI-compatible chat client (lobug.llm.client): llama.cpp's llama-server, LM Studio,
LocalAI, vLLM. `/chat/completions` plain and streamed (server-sent events), `/models` for the
health and model check, over the daemon's own aiohttp; every failure is an LLMUnavailable."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import aiohttp

from lobug.config import LLMConfig, OllamaConfig
from lobug.config.redaction import Redactor, redact_url
from lobug.llm.client import HEALTH_TIMEOUT_S, LLMClient, OutputSchema
from lobug.llm.lane import LLMLane
from lobug.llm.replies import json_value
from lobug.llm.transport import LazySession

log = logging.getLogger(__name__)


class BadReply(ValueError):
    """The server answered 2xx with something that is not the API's JSON."""


class NoModel(Exception):
    """The server lists no model to ask (`OpenAIChat._model_name`)."""


class ServerError(Exception):
    """The server answered with an error status or an error object; `said` is its message
    (which may quote the key: shown only masked, to the owner)."""

    def __init__(self, status: int, said: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.said = said


class OpenAIChat(LLMClient):
    backend = "openai"

    def __init__(
        self, llm: LLMConfig, limits: OllamaConfig, *, lane: LLMLane | None = None
    ) -> None:
        super().__init__(limits, lane=lane, schemas=llm.schemas)
        self.url = llm.base_url.rstrip("/")
        self.where = redact_url(self.url)
        self.redact = Redactor.of_server(llm.base_url, llm.api_key)
        self._chat_model = llm.chat_model
        self._first_model = ""  # llm.chat_model unset: the server's first, once known
        headers = {"Authorization": f"Bearer {llm.api_key}"} if llm.api_key else {}
        self._client = LazySession(64, headers=headers, trust_env=False)

    @property
    def model(self) -> str:
        return self._chat_model or self._first_model

    async def close(self) -> None:
        await self._client.close()

    async def _complete(
        self,
        messages: Sequence[dict[str, str]],
        schema: OutputSchema | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> str:
        body = self._body(messages, temperature, max_tokens)
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.schema},
            }
        body["model"] = await self._model_name()
        async with self._client().post(
            f"{self.url}/chat/completions", json=body, allow_redirects=False
        ) as resp:
            data = await _json(resp, self.max_reply_bytes)
        return _message_text(data)

    async def _stream(
        self,
        messages: Sequence[dict[str, str]],
        temperature: float | None,
        max_tokens: int,
    ) -> AsyncGenerator[str, None]:
        timeout = self.config.timeout_s
        body = {**self._body(messages, temperature, max_tokens), "stream": True}
        with self._mapped_errors(timeout):
            body["model"] = await self._model_name()
            resp = await asyncio.wait_for(
                self._client().post(
                    f"{self.url}/chat/completions", json=body, allow_redirects=False
                ),
                timeout,
            )
        try:
            with self._mapped_errors(timeout):
                if resp.status >= 300:
                    await _json(resp)  # raises ServerError with the server's message
            while True:
                with self._mapped_errors(timeout):
                    line = await asyncio.wait_for(resp.content.readline(), timeout)
                    if not line:
                        raise BadReply("the event stream ended without [DONE]")
                    piece = _event_text(line.decode("utf-8", "replace").strip())
                if piece is None:
                    return
                yield piece
        finally:
            resp.close()  # a half-read body: the connection cannot be reused

    def _body(
        self,
        messages: Sequence[dict[str, str]],
        temperature: float | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": list(messages),
            "temperature": self.config.temperature if temperature is None else temperature,
            "stream": False,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return body

    async def _model_name(self) -> str:
        """The configured model, or the first the server lists (llama-server serves one),
        looked up once and again after the server said it has no such model."""
        if self.model:
            return self.model
        health = await self.health()
        if not health.reachable:
            raise aiohttp.ClientConnectionError(health.error or "unreachable")
        if not health.models:
            raise NoModel(f"the server at {self.where} lists no model")
        self._first_model = health.models[0]
        return self._first_model

    async def _list_models(self) -> tuple[str, ...]:
        timeout = aiohttp.ClientTimeout(total=HEALTH_TIMEOUT_S)
        async with self._client().get(
            f"{self.url}/models", timeout=timeout, allow_redirects=False
        ) as resp:
            data = await _json(resp)
        listed = data.get("data") if isinstance(data, dict) else None
        if not isinstance(listed, list):
            raise BadReply("the model list has no `data` array")
        return tuple(str(m.get("id", "")) for m in listed if isinstance(m, dict))

    def _classify(self, exc: Exception, timeout: float) -> tuple[str, str, str | None] | None:
        if isinstance(exc, TimeoutError):
            message = f"the server at {self.where} did not answer within {timeout:.0f}s"
            return message, "timeout", f"chat timed out after {timeout:.0f}s"
        if isinstance(exc, NoModel):  # counted as the call's: the chat's or memory work's
            return str(exc), "model_missing", None
        if isinstance(exc, ServerError):
            missing = exc.status == 404 and "model" in exc.said.lower()
            if missing:
                self._first_model = ""  # the server changed models: look again next time
            message = f"the server at {self.where} answered {exc.status}"
            return message, "model_missing" if missing else "error", None
        if isinstance(exc, aiohttp.ClientError | OSError):
            return f"cannot reach the server at {self.where}: {exc}", "down", str(exc)
        if isinstance(exc, BadReply | ValueError | TypeError | KeyError):
            return f"the server sent a malformed reply: {exc}", "error", None
        return None

    def _server_words(self, exc: Exception) -> str | None:
        return exc.said if isinstance(exc, ServerError) else None


async def _json(resp: aiohttp.ClientResponse, max_bytes: int = 1 << 20) -> Any:
    """The body as JSON; an error status (or an `error` object) is a ServerError, and so is a
    redirect: never followed, so the prompt goes to the configured server or nowhere; a body
    over `max_bytes` is a BadReply, refused before more of it is read."""
    body = bytearray()
    async for chunk in resp.content.iter_any():
        body += chunk
        if len(body) > max_bytes:
            raise BadReply(f"the reply is over {max_bytes} bytes")
    text = body.decode(resp.get_encoding() if resp.charset else "utf-8", "replace")
    try:
        data = json_value(text)
    except ValueError:
        data = None
    if 300 <= resp.status < 400:
        raise ServerError(resp.status, f"a redirect to {resp.headers.get('Location', '?')}")
    if resp.status >= 400 or (isinstance(data, dict) and "error" in data):
        raise ServerError(resp.status, _error_message(data) or text[:200] or resp.reason or "")
    if data is None:
        raise BadReply(f"not JSON: {text[:80]!r}")
    return data


def _error_message(data: Any) -> str | None:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error) if error else None


def _message_text(data: Any) -> str:
    choice = data["choices"][0]
    content = choice["message"].get("content")
    if content is not None and not isinstance(content, str):
        raise BadReply("message.content is not a string")
    return content or ""


def _event_text(line: str) -> str | None:
    """One server-sent-event line: the text it adds ("" for none), None at the end.
    Raises ServerError for an error event (llama-server: `error: {...}`; OpenAI: data with an
    `error` object)."""
    if not line or line.startswith(":"):
        return ""
    field, _, value = line.partition(":")
    value = value.strip()
    if field == "error":
        raise ServerError(500, _error_message({"error": _loads(value)}) or value)
    if field != "data":
        return ""
    if value == "[DONE]":
        return None
    data = _loads(value)
    if isinstance(data, dict) and "error" in data:
        raise ServerError(500, _error_message(data) or value)
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        raise BadReply(f"an event without choices: {value[:80]!r}")
    if not choices:  # the usage chunk
        return ""
    delta = choices[0].get("delta") or {}
    content = delta.get("content")
    return content if isinstance(content, str) else ""


def _loads(value: str) -> Any:
    try:
        return json_value(value)
    except ValueError:
        raise BadReply(f"an event that is not JSON: {value[:80]!r}") from None
