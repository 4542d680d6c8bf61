"""The daemon, the CLI and `lobug mcp` stand on one composition root (lobug.parts, issue 24):
the same database with its in-memory vector index (a command loads it before it searches),
one LLM client for the chat and memory work, one Ollama client for it and the embedder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lobug import keys
from lobug.cli.memory.session import services
from lobug.config import Config
from lobug.storage.vector_index import index_of


async def test_a_command_searches_the_daemons_vector_index(
    make_config: Callable[..., Config],
) -> None:
    async with services(make_config(), with_memory=True) as (records, recall):
        memory = records.memory
        assert memory is not None and recall.records is records
        assert records.db.read_sync(index_of) is records.db.vector_index is not None
    async with services(make_config(**{"storage.vector_index": False}), with_memory=True) as (
        records,
        _,
    ):
        assert records.db.read_sync(index_of) is None  # sqlite-vec, as the daemon configured so


async def test_a_command_without_memory_builds_no_memory_service(
    make_config: Callable[..., Config],
) -> None:
    async with services(make_config(), with_memory=False) as (records, _):
        assert records.memory is None
    async with services(make_config(**{"memory.enabled": False}), with_memory=True) as (
        records,
        _,
    ):
        assert records.memory is None


async def test_the_daemon_has_one_llm_client_and_one_ollama_client(
    make_client: Callable[..., Any], make_config: Callable[..., Config]
) -> None:
    client = await make_client(make_config(**{"embedding.backend": "ollama", "embedding.dim": 768}))
    llm, memory = client.app[keys.LLM], client.app[keys.MEMORY]
    assert memory is not None and memory.llm is llm
    assert memory.embedder.client is llm.client
