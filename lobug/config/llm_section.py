"""The [llm] config section: which server answers the chat and memory prompts (lobug.llm)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PlainSerializer
from pydantic.dataclasses import dataclass

from lobug.config.fields import SECTION, OptionalStr


def _hidden(key: str | None) -> str | None:
    return None if key is None else "…"


# `config show` says only whether one is set; any length (local servers take any string).
ApiKey = Annotated[OptionalStr, PlainSerializer(_hidden)]


@dataclass(frozen=True, config=SECTION)
class LLMConfig:
    """The chat model's server. ollama: [ollama] host and chat_model. openai: any server of
    the OpenAI chat API (llama.cpp's llama-server, LM Studio, LocalAI, vLLM) at base_url. Both
    use [ollama] timeout_s and temperature."""

    backend: Literal["ollama", "openai"] = Field(default="ollama", description="ollama | openai")
    base_url: str = Field(
        default="http://127.0.0.1:8080/v1",
        description='openai backend (and embedding.backend = "openai"): the API root, e.g.'
        " llama-server :8080/v1, LM Studio :1234/v1, vLLM :8000/v1",
    )
    api_key: ApiKey = Field(
        default=None,
        repr=False,
        examples=["your-server-key"],
        description="openai backend: sent as Authorization: Bearer; unset for servers that"
        " need none (never logged or shown)",
    )
    chat_model: str = Field(
        default="",
        description='openai backend: the model to ask; "" = the first one the server lists',
    )
    schemas: bool = Field(
        default=True,
        description="send each answer's JSON schema (Ollama format, OpenAI response_format) so"
        " the server constrains the output; false for a server that refuses them",
    )
