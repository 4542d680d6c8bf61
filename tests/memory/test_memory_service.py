"""MemoryService's lifecycle in the daemon (issue 25, item 20): a failed load of the in-memory
vector index is logged when it happens, and search goes on without it; the index loads again
in the background, without a restart (issue 42)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from lobug import keys
from lobug.memory import service as memory_service
from lobug.memory.vectors.reembed import reembed
from lobug.storage import vector_index
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


async def wait_until_ready(index: VectorIndex) -> None:
    for _ in range(500):  # a hang guard, not a timing
        if index.ready:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the in-memory vectors never loaded again")


async def test_the_daemon_loads_its_vectors_again_without_a_restart(
    make_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load that failed is tried again, and tables replaced by a reembed are loaded again in
    the background; search scans sqlite-vec meanwhile."""
    monkeypatch.setattr(memory_service, "HIT_FLUSH_S", 0.02)
    monkeypatch.setattr(memory_service, "INDEX_RETRY_S", 0.0)
    failures = [RuntimeError("the card hiccuped")]
    original = vector_index._read_all

    def flaky(conn: Any) -> Any:
        if failures:
            raise failures.pop()
        return original(conn)

    monkeypatch.setattr(vector_index, "_read_all", flaky)
    client = await make_client()
    memory = client.app[keys.MEMORY]
    index = memory.db.vector_index
    assert index is not None
    await wait_until_ready(index)  # the failed first load, tried again

    made = await memory.remember(content="The user keeps bees on the roof.", actor="test")
    await reembed(memory.db, memory.embedder)  # swaps the vector tables: a REBUILD change
    resp = await client.post("/v1/query", json={"query": "bees on the roof"})
    assert resp.status == 200
    assert [r["id"] for r in (await resp.json())["results"]][:1] == [made["id"]]
    await wait_until_ready(index)
    assert vector_index.index_of(memory.db.writer) is index
    assert made["id"] in index._tables["memory_vectors"].pos
