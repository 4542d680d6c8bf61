"""MemoryService's lifecycle in the daemon (issue 25, item 20): a failed load of the in-memory
vector index is logged when it happens, and search goes on without it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from lobug import keys
from lobug.storage.vector_index import VectorIndex


async def test_a_failed_vector_index_load_is_logged_at_once(
    make_client: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: VectorIndex, conn: Any) -> int:
        raise RuntimeError("no room for the vectors")

    monkeypatch.setattr(VectorIndex, "build", broken)
    with caplog.at_level(logging.ERROR, logger="lobug.memory.service"):
        client = await make_client()
        memory = client.app[keys.MEMORY]
        assert memory is not None and memory.indexing is not None
        await asyncio.wait([memory.indexing])
        await asyncio.sleep(0)  # the done-callback runs on the next loop pass
        (record,) = [r for r in caplog.records if "vector index" in r.getMessage()]
    assert "RuntimeError: no room for the vectors" in record.getMessage()
    assert record.exc_info is not None  # with its traceback
    # Search still answers (scanning sqlite-vec).
    resp = await client.post("/v1/query", json={"query": "anything"})
    assert resp.status == 200, await resp.json()
