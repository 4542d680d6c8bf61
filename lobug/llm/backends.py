"""Composition: the chat client that the config names (`llm.backend`), for the composition root
(lobug.parts), doctor and the scripts."""

from __future__ import annotations

from lobug.config import Config
from lobug.llm.client import LLMClient
from lobug.llm.lane import LLMLane
from lobug.llm.ollama_chat import OllamaChat
from lobug.llm.openai_chat import OpenAIChat


def make_llm(config: Config, *, lane: LLMLane | None = None) -> LLMClient:
    """The client `llm.backend` names; a call with its own bound passes `timeout_s`."""
    if config.llm.backend == "openai":
        return OpenAIChat(config.llm, config.ollama, lane=lane)
    return OllamaChat(config.ollama, lane=lane, schemas=config.llm.schemas)
