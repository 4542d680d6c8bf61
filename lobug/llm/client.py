"""The chat client interface every model user programs against, whichever server answers.

Two implementations: `lobug.llm.ollama_chat.OllamaChat` (Ollama's API) and
`lobug.llm.openai_chat.OpenAIChat` (the OpenAI chat API of llama-server, LM Studio, vLLM…);
`lobug.llm.backends.make_llm` picks one by `llm.backend`. Every chat call waits its turn in the lane
(lobug.llm.lane); every failure is an LLMUnavailable of the same kinds."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from lobug.config import OllamaConfig
from lobug.config.redaction import Redactor
from lobug.llm.lane import LLMLane, TurnPreempted

log = logging.getLogger(__name__)

# The health probe (/health, the device's status): one model listing may take this long, and
# its answer is reused this long (a burst of status calls asks the server once).
HEALTH_TIMEOUT_S = 1.0
HEALTH_CACHE_S = 5.0
SAID_CHARS = 300  # of a server's error message, in the log and `lobug doctor`
# A reply's bounds, whatever the server makes of max_tokens (issue 38: one that ignored it sent
# 50 MB to the device and into working memory, and a stream never ended). A token is ~4
# characters: a reply past CHARS_PER_TOKEN a token is a server ignoring max_tokens, cut there.
CHARS_PER_TOKEN = 16
# A reply's body on the wire per token allowed (Ollama streams a ~150-byte JSON line a token);
# past it the body is refused unread (`transport`, `openai_chat`).
BYTES_PER_TOKEN = 1024
# A stream's whole reply may take this many `timeout_s` (each piece may take one); then it ends.
STREAM_TIMEOUTS = 10


class LLMUnavailable(Exception):
    """The server is down, timed out, answered with an error, or the model is missing."""

    def __init__(self, message: str, *, kind: str = "down") -> None:
        super().__init__(message)
        self.kind = kind  # down | timeout | model_missing | error | empty | preempted


@dataclass(frozen=True)
class OutputSchema:
    """The JSON schema of one task's answer, defined beside its parser: sent as Ollama's
    `format` or OpenAI's `response_format`; the parser stays tolerant of servers that ignore
    it. `name` is the task's label in /metrics."""

    name: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class LLMHealth:
    """`error`: why the server is not usable, safe to show anyone (/health); `said`: the
    server's own message, secrets masked, for the owner's eyes (the log, `lobug doctor`)."""

    reachable: bool
    models: tuple[str, ...] = ()
    error: str | None = None
    said: str | None = None

    def has_model(self, name: str) -> bool:
        wanted = name if ":" in name else f"{name}:latest"  # Ollama's implicit tag
        return wanted in self.models or name in self.models


class LLMClient(abc.ABC):
    """Chat (plain and streamed) and health against one server; errors counted by kind,
    parsed outputs counted by task (valid or not) for /metrics.

    `lane`: where chat calls wait their turn; the daemon has one client and one lane for its
    chat and its memory work (lobug.parts).
    Without one, calls go straight to the server (the CLI, doctor)."""

    backend: str  # "ollama" | "openai": named by /health, doctor and /metrics
    where: str  # the server's address for messages, credentials hidden (redact_url)
    # Masks the server's credentials and key in any text shown or logged: its error messages,
    # an exception's text (which may quote the URL).
    redact: Redactor

    def __init__(self, config: OllamaConfig, *, lane: LLMLane | None, schemas: bool) -> None:
        self.config = config  # timeouts, temperature
        self.lane = lane or LLMLane(enabled=False)
        self.schemas = schemas  # False: never send a schema (llm.schemas)
        # Failed calls by LLMUnavailable.kind: the chat's, and memory work's (a call on its own
        # bound, `memory.llm_timeout_s`), apart on /metrics.
        self.errors: Counter[str] = Counter()
        self.memory_errors: Counter[str] = Counter()
        self.outputs: Counter[tuple[str, bool]] = Counter()  # (task, valid) -> parsed answers
        self._health: LLMHealth | None = None
        self._health_at = 0.0
        self._health_lock = asyncio.Lock()

    @property
    @abc.abstractmethod
    def model(self) -> str:
        """The chat model asked (as configured; "" = the server's first, see OpenAIChat)."""

    async def chat(
        self,
        messages: Sequence[dict[str, str]],
        *,
        schema: OutputSchema | None = None,
        timeout_s: float | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        rank: int | None = None,
    ) -> str:
        """One non-streaming chat call (in its place in the lane); returns the content.
        `rank`: a turn's trust rank (`LLMLane.hold`): a turn of higher trust cuts it off,
        an LLMUnavailable of kind "preempted".
        `schema`: the answer's shape, sent unless llm.schemas is off. `max_tokens`: at most this
        many generated (Ollama's num_predict, OpenAI's max_tokens), so a model that rambles
        gives the one slot back in bounded time. `timeout_s`: memory work's own bound."""
        timeout = timeout_s or self.config.timeout_s
        sent = schema if self.schemas else None
        tokens = self.tokens(max_tokens)

        async def call() -> str:
            with self._mapped_errors(timeout, chat=timeout_s is None):
                reply = self._complete(messages, sent, temperature, tokens)
                return await asyncio.wait_for(reply, timeout)

        try:
            reply = await self.lane.call(call, rank=rank)
        except TurnPreempted as exc:
            raise self._failed(str(exc), "preempted") from None
        return reply[: tokens * CHARS_PER_TOKEN]

    def tokens(self, asked: int | None) -> int:
        """What a call may generate: as asked, never above `ollama.max_tokens` (the daemon's
        ceiling: a client's 1,000,000 is not the model's to spend), which a call that names
        none gets."""
        ceiling = self.config.max_tokens
        return ceiling if asked is None else max(1, min(asked, ceiling))

    @property
    def max_reply_bytes(self) -> int:
        """The most one reply's body may carry on the wire."""
        return self.config.max_tokens * BYTES_PER_TOKEN

    async def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        rank: int | None = None,
    ) -> AsyncIterator[str]:
        """A streamed chat call: the reply's text pieces as the server produces them.
        `ollama.timeout_s` bounds the wait for each piece (the first one included), and
        STREAM_TIMEOUTS of it the whole reply; CHARS_PER_TOKEN a token its length (a server
        that goes on past either is cut off: the reply ends there; so is one a turn of higher
        trust pre-empts, `rank` as for `chat`). Every failure, before the first piece or in
        the middle, is an LLMUnavailable."""
        tokens = self.tokens(max_tokens)
        left = tokens * CHARS_PER_TOKEN
        deadline = time.monotonic() + self.config.timeout_s * STREAM_TIMEOUTS
        held = self.lane.hold(rank) if rank is not None and self.lane.enabled else None
        pieces = self._stream(messages, temperature, tokens)
        try:
            async for piece in pieces:
                if piece:
                    yield piece[:left]
                    left -= len(piece)
                cut = "a turn of higher trust" if held is not None and held.cut else None
                if cut is None and left <= 0:
                    cut = "its length"
                if cut is None and time.monotonic() > deadline:
                    cut = "its time limit"
                if cut is not None:
                    log.warning("a streamed reply was cut off by %s", cut)
                    return
        finally:
            if held is not None:
                self.lane.release(held)
            await pieces.aclose()

    @abc.abstractmethod
    async def _complete(
        self,
        messages: Sequence[dict[str, str]],
        schema: OutputSchema | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> str:
        """One plain chat call to the server: the reply's content."""

    @abc.abstractmethod
    def _stream(
        self,
        messages: Sequence[dict[str, str]],
        temperature: float | None,
        max_tokens: int,
    ) -> AsyncGenerator[str, None]:
        """One streamed chat call to the server: every event's text ("" for one without),
        each waited for at most `ollama.timeout_s`; failures as LLMUnavailable."""

    @abc.abstractmethod
    async def _list_models(self) -> tuple[str, ...]:
        """The models the server offers; raises when it cannot be reached."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    def counted(self, task: str, valid: bool) -> None:
        """One parsed answer of `task` (lobug.llm.ask, the device reply)."""
        self.outputs[(task, valid)] += 1

    def problem(self, health: LLMHealth) -> str | None:
        """What is wrong with the server, in words for /health and doctor; None when fine."""
        if not health.reachable:
            return f"{self.backend} server at {self.where} is unreachable ({health.error})"
        if self.model and not health.has_model(self.model):
            return f"{self.backend} server at {self.where} has no model {self.model!r}" + (
                f"; run `ollama pull {self.model}`" if self.backend == "ollama" else ""
            )
        if not health.models:
            return f"{self.backend} server at {self.where} lists no model"
        return None

    async def health(self, *, fresh: bool = False) -> LLMHealth:
        """Reachability and model list, cached for a few seconds so /health stays cheap."""
        if not fresh and (cached := self._cached()):
            return cached
        async with self._health_lock:
            if not fresh and (cached := self._cached()):
                return cached
            try:
                names = await asyncio.wait_for(self._list_models(), HEALTH_TIMEOUT_S)
                health = LLMHealth(reachable=True, models=names)
            except Exception as exc:  # noqa: BLE001 - health reports, never raises
                found = self._classify(exc, HEALTH_TIMEOUT_S)
                why = found[0] if found else f"{type(exc).__name__}: {exc}"
                health = LLMHealth(reachable=False, error=self.redact(why), said=self._said(exc))
                if health != self._health:
                    log.warning("%s server: %s%s", self.backend, health.error, _quoted(health))
            self._health, self._health_at = health, time.monotonic()
            return health

    def _cached(self) -> LLMHealth | None:
        recent = time.monotonic() - self._health_at < HEALTH_CACHE_S
        return self._health if recent else None

    @abc.abstractmethod
    def _classify(self, exc: Exception, timeout: float) -> tuple[str, str, str | None] | None:
        """A backend's failure as (message, LLMUnavailable.kind, why the server is down or
        None); None for an exception that is not the backend's. The message never quotes the
        server's own words (`_server_words`): it reaches /health and API callers."""

    def _server_words(self, exc: Exception) -> str | None:
        """What the server itself said in an error answer (None: nothing)."""
        return None

    def _said(self, exc: Exception) -> str | None:
        words = self._server_words(exc)
        return self.redact(words[:SAID_CHARS]) if words else None

    @contextlib.contextmanager
    def _mapped_errors(self, timeout: float, *, chat: bool = True) -> Iterator[None]:
        """The backend's failures as LLMUnavailable, counted. `chat`: a call on the chat's
        bound; False: memory work's (`_failed`, `_mark_down`)."""
        try:
            yield
        except LLMUnavailable:
            raise
        except Exception as exc:
            found = self._classify(exc, timeout)
            if found is None:
                raise
            message, kind, down = found
            if said := self._said(exc):
                log.warning("%s server: %s; it said: %s", self.backend, self.redact(message), said)
            if down is not None:
                self._mark_down(self.redact(down), chat)
            raise self._failed(self.redact(message), kind, chat) from None

    def _failed(self, message: str, kind: str = "down", chat: bool = True) -> LLMUnavailable:
        (self.errors if chat else self.memory_errors)[kind] += 1
        return LLMUnavailable(message, kind=kind)

    def _mark_down(self, reason: str, chat: bool = True) -> None:
        """A chat call's timeout or lost connection says the server is down on /health; memory
        work's (`chat` False) does not: a minute-long summary timing out is not "LLM down"."""
        if not chat:
            return
        self._health = LLMHealth(reachable=False, error=reason)
        self._health_at = time.monotonic()


def _quoted(health: LLMHealth) -> str:
    return f"; it said: {health.said}" if health.said else ""
