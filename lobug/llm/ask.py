"""One background LLM call with a validated answer: on a bad answer, one stricter retry."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from lobug.llm.client import LLMClient, OutputSchema

log = logging.getLogger(__name__)
T = TypeVar("T")
# A background answer's bound unless its task sets its own: far above any valid one (a batch of
# facts, the base memory), so only a model that rambles or repeats itself is cut short.
MAX_TOKENS = 1024

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*```[\w-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)


class InvalidOutput(Exception):
    """The model's answer does not have the asked-for shape (after the reminder, too)."""

    def __init__(self, message: str, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw


def strip_reasoning(text: str) -> str:
    """Reasoning models (qwen3, deepseek-r1) prefix their answer with <think>…</think>."""
    return _THINK.sub("", text).strip()


def plain_text(text: str) -> str:
    """A free-text answer without reasoning or a code fence wrapped around it."""
    text = strip_reasoning(text)
    fenced = _FENCE.match(text)
    return (fenced.group(1) if fenced else text).strip()


async def ask(
    llm: LLMClient,
    messages: Sequence[dict[str, str]],
    parse: Callable[[str], T],
    *,
    reminder: str,
    what: str,
    timeout_s: float,
    temperature: float = 0.2,
    schema: OutputSchema | None = None,
    max_tokens: int = MAX_TOKENS,
) -> T:
    """Call, parse; if the parse fails, show the model its answer and ask once more.

    `parse` raises InvalidOutput; LLMUnavailable from the client propagates (the job retries).
    `schema`: the shape `parse` expects, for servers that constrain their output to it. Every
    answer is counted by `what`, valid or not (/metrics).
    """
    raw = await llm.chat(
        messages, schema=schema, timeout_s=timeout_s, temperature=temperature, max_tokens=max_tokens
    )
    try:
        return _counted(llm, what, parse, raw)
    except InvalidOutput as first:
        log.info("%s: invalid model output (%s); asking again with a reminder", what, first)
        first_error = str(first)
    retry = [
        *messages,
        {"role": "assistant", "content": raw[:4000]},
        {"role": "user", "content": reminder},
    ]
    raw_again = await llm.chat(
        retry, schema=schema, timeout_s=timeout_s, temperature=0.0, max_tokens=max_tokens
    )
    try:
        return _counted(llm, what, parse, raw_again)
    except InvalidOutput as second:
        raise InvalidOutput(
            f"{second} (first answer: {first_error}); last output: {snippet(raw_again)}",
            raw=raw_again,
        ) from None


def _counted(llm: LLMClient, what: str, parse: Callable[[str], T], raw: str) -> T:
    try:
        try:
            value = parse(raw)
        except RecursionError:  # JSON too deep for a parser or for `str` of what it holds
            raise InvalidOutput("the answer is nested too deep", raw) from None
    except InvalidOutput:
        llm.counted(what, valid=False)
        raise
    llm.counted(what, valid=True)
    return value


def snippet(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")
