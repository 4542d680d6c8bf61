"""The seam between a chat turn and long-term memory (the memory service implements it)."""

from __future__ import annotations

from typing import Any, Protocol

from lobug.conversation import TurnRecord


class MemoryHooks(Protocol):
    async def prompt_sections(
        self,
        *,
        user_id: str,
        session_id: str,
        text: str,
        stores: tuple[str, ...],
        categories: frozenset[str] | None = None,
        window_start: float | None = None,
    ) -> tuple[list[str], list[str]]:
        """Rendered prompt sections ([Long-term memory], delta, [Relevant memories]) drawn
        from `stores` only (the caller's trust) and `categories` (its allowlist; None: all;
        the owner's is both unrestricted), as (stable, this turn's): the stable ones
        go before the conversation, this turn's right before the user's new words
        (lobug.chat.prompt). `window_start`: when the oldest message the working memory holds
        was said (None: it holds the whole session), so memories the conversation in view
        already carries are not repeated.

        Must never raise: a retrieval failure costs the reply its memories, not the reply.
        """
        ...

    def on_user_turn(self, conn: Any, turn: TurnRecord, *, now: float) -> None:
        """Inside the transaction that commits a user turn (enqueue its embedding)."""
        ...

    def on_exchange(
        self, conn: Any, user: TurnRecord, assistant: TurnRecord | None, *, now: float
    ) -> None:
        """Inside the transaction that commits the reply (enqueue extraction, cascades)."""
        ...

    def wake(self) -> None:
        """After a commit that enqueued work: nudge the workers."""
        ...


class NoMemory:
    """Working memory only: what the daemon does when long-term memory is off."""

    async def prompt_sections(self, *args: Any, **kwargs: Any) -> tuple[list[str], list[str]]:
        return [], []

    def on_user_turn(self, *args: Any, **kwargs: Any) -> None:
        return None

    def on_exchange(self, *args: Any, **kwargs: Any) -> None:
        return None

    def wake(self) -> None:
        return None
