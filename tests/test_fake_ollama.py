"""The fake Ollama speaks what the real client library expects (so our tests mean something)."""

from __future__ import annotations

from typing import Any

import ollama as ollama_lib
import pytest


async def test_real_client_understands_every_endpoint(ollama: Any) -> None:
    state, url = ollama
    client = ollama_lib.AsyncClient(host=url)
    version = await client._request_raw("GET", "/api/version")
    assert version.json()["version"]
    listed = await client.list()
    assert "llama3.2:latest" in [m.model for m in listed.models]
    reply = await client.chat(model="llama3.2", messages=[{"role": "user", "content": "hi"}])
    assert reply.message.content and reply.done
    pieces = [
        part.message.content
        async for part in await client.chat(
            model="llama3.2", messages=[{"role": "user", "content": "hi there"}], stream=True
        )
    ]
    assert "".join(pieces) == reply.message.content.replace("hi", "hi there", 1)
    embedded = await client.embed(model="nomic-embed-text", input=["a", "b"])
    assert len(embedded.embeddings) == 2 and len(embedded.embeddings[0]) == state.embed_dim


async def test_errors_have_ollamas_shapes(ollama: Any) -> None:
    state, url = ollama
    client = ollama_lib.AsyncClient(host=url)
    with pytest.raises(ollama_lib.ResponseError) as missing:
        await client.chat(model="nope", messages=[{"role": "user", "content": "x"}])
    assert missing.value.status_code == 404 and "not found" in missing.value.error
    state.mode = "down"
    with pytest.raises(ollama_lib.ResponseError) as down:
        await client.list()
    assert down.value.status_code == 500
