"""Composition: the chat client and the embedder that the config names (`llm.backend`,
`embedding.backend`), for the daemon, the memory service, doctor and the CLI."""

from __future__ import annotations

import dataclasses

from lobug.config import Config
from lobug.llm.client import LLMClient
from lobug.llm.lane import LLMLane
from lobug.llm.ollama_chat import OllamaChat
from lobug.llm.openai_chat import OpenAIChat


def make_llm(
    config: Config, *, lane: LLMLane | None = None, timeout_s: float | None = None
) -> LLMClient:
    """The client `llm.backend` names. `timeout_s`: another per-call bound (memory jobs)."""
    limits = config.ollama
    if timeout_s is not None:
        limits = dataclasses.replace(limits, timeout_s=timeout_s)
    if config.llm.backend == "openai":
        return OpenAIChat(config.llm, limits, lane=lane)
    return OllamaChat(limits, lane=lane, schemas=config.llm.schemas)
