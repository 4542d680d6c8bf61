"""Whether vectors may be read and written: sqlite-vec loaded, stored model/dimension match."""

from __future__ import annotations

import logging
import time
from typing import Any

from lobug.storage.sqlite import Error as SQLiteError
from lobug.storage.vectors import EmbeddingState, embedding_state, ensure_vector_tables

log = logging.getLogger(__name__)

RECHECK_S = 30.0  # how often a disabled gate looks whether `lobug memory reembed` fixed it


class EmbeddingMismatch(Exception):
    """The daemon does not start on vectors of another model or size: it would search by words
    alone and only /health would say so. The commands still open the file (reembed fixes it)."""

    def __init__(self, state: EmbeddingState) -> None:
        super().__init__(
            f"the database holds vectors from {state.stored_model} ({state.stored_dim}-d) but"
            f" the config asks for {state.model} ({state.dim}-d): run `lobug memory reembed` to"
            " rebuild them from the stored text, or set embedding.backend, .model and .dim back"
        )


class VectorGate:
    """Vector search and vector writes are on only when the stored vectors fit the embedder.

    On a mismatch nothing is dropped: vectors stay as they are, retrieval runs without them,
    vector-dependent jobs wait, and /health says what to run (`lobug memory reembed`).
    """

    def __init__(
        self,
        *,
        backend: str,
        model: str,
        dim: int,
    ) -> None:
        self.backend = backend
        self.model = model
        self.dim = dim
        self.state: EmbeddingState | None = None
        self.vec_loaded = False
        self.enabled = False
        self.error: str | None = None  # the last embedder failure (cleared on success)
        self.setup_error: str | None = None  # the vec0 tables could not be created (disk full)
        self._checked_at = 0.0
        self._decided = False

    @property
    def mismatch(self) -> bool:
        return self.state is not None and self.state.mismatch

    @property
    def waiting(self) -> bool:
        """Vectors are off for a reason that a reembed or free disk space will fix."""
        return self.mismatch or self.setup_error is not None

    @property
    def problem(self) -> str | None:
        if self.setup_error is not None:
            return f"vector tables could not be set up ({self.setup_error}); retrying"
        if not self.vec_loaded:
            return "sqlite-vec is not loaded; vector search is off (memories still work)"
        if self.mismatch and self.state is not None:
            return "embedding mismatch: " + self.state.describe()
        if self.error:
            return f"embedder {self.model} ({self.backend}) is failing: {self.error}"
        return None

    def setup(self, conn: Any) -> None:
        """At start, inside a write transaction: create the vec0 tables or detect a mismatch."""
        try:
            conn.execute("SELECT vec_version()").fetchone()
        except SQLiteError:
            self.vec_loaded, self.enabled = False, False
            log.warning("sqlite-vec is not available: vector search is off")
            return
        self.vec_loaded = True
        self.state = ensure_vector_tables(conn, self.model, self.dim)
        self.setup_error = None
        self._decide()

    def setup_failed(self, exc: BaseException) -> None:
        self.setup_error = f"{type(exc).__name__}: {exc}"
        self.enabled = False
        self._checked_at = time.monotonic()
        log.warning("vector memory off for now: %s", self.setup_error)

    def recheck(self, conn: Any) -> None:
        """Read the recorded model/dimension again (a reembed in another process may be done)."""
        if not self.vec_loaded:
            return
        self.state = embedding_state(conn, self.model, self.dim)
        self._decide()

    def due(self) -> bool:
        """A waiting gate looks at the DB again now and then; a working one never needs to."""
        if not self.waiting:
            return False
        now = time.monotonic()
        if now - self._checked_at < RECHECK_S:
            return False
        self._checked_at = now
        return True

    def _decide(self) -> None:
        was, first = self.enabled, not self._decided
        self.enabled = self.vec_loaded and not self.mismatch
        self._decided = True
        self._checked_at = time.monotonic()
        if self.state is None or (self.enabled == was and not first):
            return  # say it once per change, not at every recheck
        if self.enabled:
            log.info("vector memory on: %s", self.state.describe())
        else:
            log.warning("vector memory off: %s", self.state.describe())

    def report(self) -> dict[str, Any]:
        state = self.state
        return {
            "backend": self.backend,
            "model": self.model,
            "dim": self.dim,
            "stored_model": state.stored_model if state else None,
            "stored_dim": state.stored_dim if state else None,
            "vectors": self.enabled,
            "problem": self.problem,
            "last_error": self.error,
        }
