"""An embedding server that answers NaN vectors (issue 42): nothing is stored, the job waits and
retries, and the facts get their vectors and links once the server recovers."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import memory_env

from lobug.workers.runner import BACKOFF_MAX_S

OLLAMA_VECTORS = {"embedding.backend": "ollama", "embedding.dim": 768}
TEA = "The user drinks green tea every morning."
TEA_TOO = "The user drinks black coffee at the office every morning."


async def test_nan_vectors_are_refused_and_the_job_retries_later(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, url = ollama
    async with memory_env(tmp_path, url, clock, **OLLAMA_VECTORS) as mem:
        first = (await mem.service.remember(content=TEA, actor="test"))["id"]
        await mem.run()
        state.embed_nan = True  # the server's backend breaks
        second = (await mem.service.remember(content=TEA_TOO, actor="test"))["id"]
        await mem.run()
        assert mem.value("SELECT COUNT(*) FROM memory_vectors WHERE memory_id = ?", second) == 0
        (job,) = mem.rows(
            "SELECT state, last_error FROM jobs WHERE kind = 'embed_memory'"
            " AND json_extract(payload, '$.memory_id') = ?",
            second,
        )
        assert job["state"] == "pending" and "NaN" in job["last_error"]
        assert mem.value("SELECT COUNT(*) FROM jobs WHERE state = 'failed'") == 0

        state.embed_nan = False  # it recovers: the job runs at its next try
        clock.advance(BACKOFF_MAX_S + 1)
        await mem.run()
        assert mem.value("SELECT COUNT(*) FROM memory_vectors WHERE memory_id = ?", second) == 1
        assert mem.value("SELECT COUNT(*) FROM jobs WHERE state IN ('failed', 'pending')") == 0
        strengths = [r[0] for r in mem.rows("SELECT strength FROM relations")]
        assert strengths and all(math.isfinite(s) for s in strengths)
        linked = mem.rows("SELECT from_id, to_id FROM relations")
        assert {second, first} <= {i for row in linked for i in row}
