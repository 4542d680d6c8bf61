"""The one KNN (`knn.nearest`): with a filter it widens its net on sqlite-vec as the index does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lobug.memory.vectors.knn import OVERSAMPLE, nearest_facts, put_memory_vector
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect
from lobug.storage.vector_index import VectorIndex
from lobug.storage.vectors import create_vector_tables, write_meta

NOW = 1_750_000_000.0


def unit(*xs: float) -> list[float]:
    vec = list(xs) + [0.0] * (4 - len(xs))
    norm = sum(x * x for x in vec) ** 0.5
    return [x / norm for x in vec]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    db = connect(tmp_path / "k.db")
    migrate(db)
    write_meta(db, "embedding_dim", "4")
    create_vector_tables(db, 4)
    yield db
    db.close()


def fact(conn: Any, content: str, vec: list[float], user_id: str = "default") -> int:
    cur = conn.execute(
        "INSERT INTO memories (user_id, content, created_at, updated_at) VALUES (?, ?, ?, ?)",
        (user_id, content, NOW, NOW),
    )
    put_memory_vector(conn, int(cur.lastrowid), vec)
    return int(cur.lastrowid)


def test_other_users_facts_cannot_crowd_out_the_nearest(conn: Any) -> None:
    for i in range(OVERSAMPLE * 3):  # nearer than ours, and more than the first fetch holds
        fact(conn, f"bob's {i}", unit(1, 0.01 * i), user_id="bob")
    ours = fact(conn, "ours", unit(1, 1))
    scanned = nearest_facts(conn, unit(1, 0), user_id="default", k=1)  # sqlite-vec
    assert [row.id for row, _ in scanned] == [ours]
    assert nearest_facts(conn, unit(1, 0), user_id="default", k=1, max_distance=0.1) == []
    index = VectorIndex()
    index.build(conn)
    conn.vector_index = index  # as `Database` attaches it: the daemon's engine
    indexed = nearest_facts(conn, unit(1, 0), user_id="default", k=1)
    assert [row.id for row, _ in indexed] == [ours]
    assert indexed[0][1] == pytest.approx(scanned[0][1], abs=1e-5)
