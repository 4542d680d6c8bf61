"""sqlite-vec tables for memory and turn embeddings, locked to the recorded model and dimension."""

from __future__ import annotations

import logging
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lobug.storage.sqlite import has_table
from lobug.storage.vector_index import KEYS, REBUILD, record_change

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbeddingState:
    """What the database holds versus what the config asks for."""

    model: str
    dim: int
    stored_model: str | None
    stored_dim: int | None

    @property
    def mismatch(self) -> bool:
        return self.stored_dim is not None and (
            self.stored_dim != self.dim or self.stored_model != self.model
        )

    def describe(self) -> str:
        if not self.mismatch:
            return f"{self.model} ({self.dim}-d)"
        return (
            f"the database holds vectors from {self.stored_model} ({self.stored_dim}-d) but the "
            f"config asks for {self.model} ({self.dim}-d); vector search is off until "
            f"`lobug memory reembed` rebuilds them from the stored text"
        )


def pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


def read_meta(conn: Any, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def write_meta(conn: Any, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def embedding_state(conn: Any, model: str, dim: int) -> EmbeddingState:
    stored_dim = read_meta(conn, "embedding_dim")
    return EmbeddingState(
        model=model,
        dim=dim,
        stored_model=read_meta(conn, "embedding_model"),
        stored_dim=int(stored_dim) if stored_dim is not None else None,
    )


def ensure_vector_tables(conn: Any, model: str, dim: int) -> EmbeddingState:
    """Create the vec0 tables on first start; never touch them when the model changed."""
    state = embedding_state(conn, model, dim)
    if state.mismatch:
        log.warning("embedding mismatch: %s", state.describe())
        return state
    create_vector_tables(conn, dim)
    write_meta(conn, "embedding_model", model)
    write_meta(conn, "embedding_dim", str(dim))
    return embedding_state(conn, model, dim)


def create_vector_tables(conn: Any, dim: int) -> None:
    if not has_vector_tables(conn):
        record_change(conn, REBUILD)
    for table, key in KEYS.items():
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
            f"{key} INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine)"
        )


def has_vector_tables(conn: Any) -> bool:
    return all(has_table(conn, table) for table in KEYS)
