"""StreamedTurn: a turn whose reply arrives in pieces, committed once however the stream ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from lobug.conversation import TurnRecord
from lobug.llm.client import LLMUnavailable

log = logging.getLogger(__name__)

# (user turn, the reply text received, whether the stream ran to its end)
Commit = Callable[[TurnRecord, str, bool], Awaitable[None]]


class StreamedTurn:
    """Iterate it for the reply's pieces; call `finish()` when done, in a `finally`.

    The reply is committed exactly once by `finish()`: whole when the LLM's stream ran to its
    end, as a degraded partial when it failed mid-way (`error` says why) or the consumer left
    early. The commit is shielded from cancellation: a client that hangs up mid-answer does
    not take the record of what was said with it.
    """

    def __init__(
        self,
        user: TurnRecord,
        pieces: AsyncIterator[str],
        commit: Commit,
        *,
        on_end: Callable[[], None] = lambda: None,
    ) -> None:
        self.user = user
        self._on_end = on_end  # the turn has left the LLM lane (lobug.llm.lane)
        self.error: LLMUnavailable | None = None
        self._pieces = pieces
        self._commit = commit
        self._received: list[str] = []
        self._first: str | None = None
        self._ended = False
        self._committed: asyncio.Future[None] | None = None

    @property
    def text(self) -> str:
        return "".join(self._received)

    @property
    def complete(self) -> bool:
        return self._ended and self.error is None

    async def start(self) -> None:
        """Wait for the first piece (an LLMUnavailable here means nothing reached the client)."""
        try:
            self._first = await anext(self._pieces)
        except StopAsyncIteration:
            self._first, self._ended = "", True
        except LLMUnavailable as exc:
            self.error = exc
            raise

    async def __aiter__(self) -> AsyncIterator[str]:
        if self._first is None:
            await self.start()
        if self._first:
            self._received.append(self._first)
            yield self._first
        while not self._ended:
            try:
                piece = await anext(self._pieces)
            except StopAsyncIteration:
                self._ended = True
                return
            except LLMUnavailable as exc:
                self.error, self._ended = exc, True
                log.warning("LLM failed mid-stream for turn %d (%s)", self.user.id, exc)
                raise
            self._received.append(piece)
            yield piece

    async def finish(self) -> None:
        """Close the LLM's stream and commit what was received (idempotent)."""
        if self._committed is None:
            self._committed = asyncio.ensure_future(self._close_and_commit())
        await asyncio.shield(self._committed)

    async def _close_and_commit(self) -> None:
        try:
            close = getattr(self._pieces, "aclose", None)
            if close is not None and not self._ended:
                try:
                    await close()  # stops Ollama generating for a listener who left
                except Exception:  # noqa: BLE001 - the commit matters more than a clean close
                    log.debug("closing the LLM stream failed", exc_info=True)
            await self._commit(self.user, self.text, self.complete)
        finally:
            self._on_end()
