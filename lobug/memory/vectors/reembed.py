"""Rebuild both vector tables from the stored text, e.g. after changing the embedding model.

The new vectors go into staging tables batch by batch; the live tables are swapped in one
transaction at the end, and only then is the new model/dimension recorded. An interrupted run
leaves the old vectors (and their recorded model) exactly as they were. The replies' keys
(`replies`: the question a turn answers with the turn) are rebuilt with the turns' vectors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from lobug.conversation import CONVERSATION_TURN
from lobug.llm.embedders import Embedder
from lobug.memory.vectors import replies
from lobug.memory.vectors.knn import VECTOR_KINDS, VECTOR_STATUSES
from lobug.storage.database import Database
from lobug.storage.vectors import create_vector_tables, pack, write_meta

_KINDS = "(" + ", ".join(f"'{k}'" for k in VECTOR_KINDS) + ")"
_STATUSES = "(" + ", ".join(f"'{k}'" for k in VECTOR_STATUSES) + ")"
STAGING = {"memory_vectors": "memory_vectors_new", "turn_vectors": "turn_vectors_new"}
SOURCES = {
    "memory_vectors": (
        f"SELECT id, content FROM memories WHERE kind IN {_KINDS} AND status IN {_STATUSES}"
    ),
    "turn_vectors": (f"SELECT id, text FROM turns WHERE {CONVERSATION_TURN}"),
}
KEYS = {"memory_vectors": "memory_id", "turn_vectors": "turn_id"}
REPLY_KEYS, REPLY_STAGING = replies.TABLE, f"{replies.TABLE}_new"  # the replies' keys

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ReembedResult:
    model: str
    dim: int
    memories: int
    turns: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


async def reembed(
    db: Database, embedder: Embedder, *, batch_size: int = 64, progress: Progress | None = None
) -> ReembedResult:
    """Raises EmbeddingUnavailable if the embedder fails; the live vectors are then untouched."""
    started = time.monotonic()
    await db.write(_create_staging, embedder.dim)
    totals = await db.read(_count_sources)
    total, done = sum(totals.values()), 0
    counts = dict.fromkeys(STAGING, 0)
    last = dict.fromkeys(STAGING, 0)
    while True:
        for table in STAGING:
            while rows := await db.read(_rows_after, table, last[table], batch_size):
                vectors = await embedder.embed([text for _, text in rows])
                await db.write(_stage, table, rows, vectors)
                if table == "turn_vectors" and (keyed := await db.read(replies.keys_of, rows)):
                    keys = await embedder.embed([key for _, key in keyed])
                    await db.write(replies.put_keys, keyed, keys, REPLY_STAGING)
                last[table] = rows[-1][0]
                counts[table] += len(rows)
                done += len(rows)
                if progress:
                    progress(done, max(total, done))
        # Swap only if nothing arrived meanwhile (a daemon may still be adding turns).
        swapped = await db.write(partial(_swap, model=embedder.name, dim=embedder.dim), dict(last))
        if swapped:
            break
    return ReembedResult(
        embedder.name,
        embedder.dim,
        counts["memory_vectors"],
        counts["turn_vectors"],
        round(time.monotonic() - started, 2),
    )


def _create_staging(conn: Any, dim: int) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {REPLY_STAGING}")
    conn.execute(
        f"CREATE TABLE {REPLY_STAGING} (turn_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"
    )
    for table, staging in STAGING.items():
        conn.execute(f"DROP TABLE IF EXISTS {staging}")  # left over from an interrupted run
        conn.execute(
            f"CREATE VIRTUAL TABLE {staging} USING vec0({KEYS[table]} INTEGER PRIMARY KEY,"
            f" embedding float[{int(dim)}] distance_metric=cosine)"
        )


def _count_sources(conn: Any) -> dict[str, int]:
    return {
        table: conn.execute(f"SELECT COUNT(*) FROM ({sql})").fetchone()[0]
        for table, sql in SOURCES.items()
    }


def _rows_after(conn: Any, table: str, after: int, limit: int) -> list[tuple[int, str]]:
    rows = conn.execute(f"{SOURCES[table]} AND id > ? ORDER BY id LIMIT ?", (after, limit))
    return [(r[0], r[1]) for r in rows]


def _stage(conn: Any, table: str, rows: list[tuple[int, str]], vectors: list[list[float]]) -> None:
    conn.executemany(
        f"INSERT INTO {STAGING[table]} ({KEYS[table]}, embedding) VALUES (?, ?)",
        [(row_id, pack(vec)) for (row_id, _), vec in zip(rows, vectors, strict=True)],
    )


def _swap(conn: Any, last: dict[str, int], *, model: str, dim: int) -> bool:
    for table in STAGING:
        if conn.execute(f"{SOURCES[table]} AND id > ? LIMIT 1", (last[table],)).fetchone():
            return False  # new rows: embed them first
    # Facts soft-deleted or purged while we worked must not come back into the KNN table.
    for (memory_id,) in conn.execute(
        "SELECT memory_id FROM memory_vectors_new WHERE memory_id NOT IN"
        f" (SELECT id FROM memories WHERE kind IN {_KINDS} AND status IN {_STATUSES})"
    ).fetchall():
        conn.execute("DELETE FROM memory_vectors_new WHERE memory_id = ?", (memory_id,))
    for table in STAGING:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    create_vector_tables(conn, dim)
    for table, staging in STAGING.items():
        key = KEYS[table]
        conn.execute(
            f"INSERT INTO {table} ({key}, embedding) SELECT {key}, embedding FROM {staging}"
        )
        conn.execute(f"DROP TABLE {staging}")
    conn.execute(f"DELETE FROM {REPLY_KEYS}")
    conn.execute(f"INSERT INTO {REPLY_KEYS} SELECT turn_id, embedding FROM {REPLY_STAGING}")
    conn.execute(f"DROP TABLE {REPLY_STAGING}")
    write_meta(conn, "embedding_model", model)
    write_meta(conn, "embedding_dim", str(dim))
    return True
