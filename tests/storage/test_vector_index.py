"""The in-memory vector index against sqlite-vec itself, on a real SQLite file.

It must give the neighbours vec0 gives (same ids, same distances), follow every write made
through any connection (including a rolled-back one, another process's, a dropped and
recreated table), and keep the filters' promise when they hide most candidates.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dbutil import vector_store

from lobug.memory.query import Reach
from lobug.memory.search.corpus import MEMORIES, Reads
from lobug.memory.search.hybrid import vector_knn
from lobug.memory.table import rows as store
from lobug.memory.vectors import knn
from lobug.storage import vector_index
from lobug.storage.database import Database
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect
from lobug.storage.vector_index import KEYS, VectorIndex, prune_changes
from lobug.storage.vectors import create_vector_tables, write_meta

DIM = 32
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return vector_store(tmp_path / "v.db", DIM)


@pytest.fixture
def db(db_path: Path) -> Iterator[Database]:
    database = Database(db_path, vector_index=VectorIndex())
    database.open_sync()
    yield database
    database.close_sync()


def facts(
    db: Database, vectors: np.ndarray, *, user_id: str = "default", **extra: Any
) -> list[int]:
    def write(conn: Any) -> list[int]:
        ids = []
        for vector in vectors:
            memory_id = store.insert_memory(
                conn, user_id=user_id, kind="fact", content=f"fact {len(ids)}", now=1.0,
                actor="test", **extra,
            )  # fmt: skip
            knn.put_memory_vector(conn, memory_id, [float(x) for x in vector])
            ids.append(memory_id)
        return ids

    return db.write_sync(write)


def both(db: Database, query: np.ndarray, k: int, flt: Reach) -> tuple[list, list]:
    """(the index's answer, vec0's answer) to the same KNN on the same data."""
    conn = db.writer
    indexed = vector_knn(conn, list(query), k, flt=flt)
    conn.vector_index = None
    try:
        scanned = vector_knn(conn, list(query), k, flt=flt)
    finally:
        conn.vector_index = db.vector_index
    return indexed, scanned


def same(indexed: list[tuple[int, float]], scanned: list[tuple[int, float]]) -> None:
    assert [i for i, _ in indexed] == [i for i, _ in scanned]
    assert np.allclose([d for _, d in indexed], [d for _, d in scanned], atol=1e-5)


def test_the_index_finds_what_sqlite_vec_finds_with_filters(db: Database) -> None:
    rng = np.random.default_rng(1)
    facts(db, rng.standard_normal((300, DIM)))
    facts(db, rng.standard_normal((300, DIM)), user_id="bob")  # hidden by the filter
    assert db.vector_index is not None
    db.vector_index.build(db.writer)
    for query in rng.standard_normal((20, DIM)):
        for k in (1, 10, 50):
            same(*both(db, query, k, Reach(user_id="default")))
    # A filter that hides nearly every row: the net widens until k are found.
    bob = both(db, rng.standard_normal(DIM), 25, Reach(user_id="bob"))
    same(*bob)
    assert len(bob[0]) == 25


def test_the_net_widens_by_the_share_a_filter_keeps(db: Database) -> None:
    """Filters keeping every share of the rows, from most to one and none: each answer is
    vec0's, whether the first slice held enough, the share kept in it sized the next, or more
    slices were needed (`vector_index.wider`)."""
    rng = np.random.default_rng(6)
    for user, n in (("most", 700), ("fifth", 200), ("twentieth", 50), ("one", 1)):
        facts(db, rng.standard_normal((n, DIM)), user_id=user)
    assert db.vector_index is not None
    db.vector_index.build(db.writer)
    for query in rng.standard_normal((10, DIM)):
        for user, n in (("most", 700), ("fifth", 200), ("twentieth", 50), ("one", 1), ("no", 0)):
            for k in (1, 20, 60):
                indexed, scanned = both(db, query, k, Reach(user_id=user))
                same(indexed, scanned)
                assert len(indexed) == min(k, n)


def test_rows_tied_with_the_query_are_kept_lower_id_first_whatever_the_slices(
    db: Database,
) -> None:
    """Hundreds of rows equally near the query (the same vector) and a filter keeping a third:
    the net widens over slices whose edge falls among the tied rows, and the k kept are the
    lowest ids, as ranking every row by (distance, id) finds them."""
    rng = np.random.default_rng(8)
    near, far = rng.standard_normal(DIM), rng.standard_normal(DIM)
    ids = facts(db, np.array([near] * 300 + [far] * 300))
    assert db.vector_index is not None
    db.vector_index.build(db.writer)
    unit = near / np.linalg.norm(near)
    for k in (1, 20, 90, 150):
        found = db.vector_index.nearest(
            db.writer,
            "memory_vectors",
            unit,
            k,
            accept=lambda batch: {i for i in batch if i % 3 == 0},
        )
        kept = [i for i in ids[:300] if i % 3 == 0] + [i for i in ids[300:] if i % 3 == 0]
        assert [i for i, _ in found] == kept[:k]


def test_one_query_under_several_filters_scores_the_table_once(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search asks the same vector of the same table under its reach, the period and the
    speaker it names: the rows are scored once, each filter still gets vec0's answer, and a
    write in between (a new nearest row) is seen."""
    rng = np.random.default_rng(4)
    facts(db, rng.standard_normal((200, DIM)))
    facts(db, rng.standard_normal((200, DIM)), user_id="bob")
    index = db.vector_index
    assert index is not None
    index.build(db.writer)
    scored = []
    candidates = vector_index._Table.candidates
    monkeypatch.setattr(
        vector_index._Table, "candidates", lambda t, *a: scored.append(1) or candidates(t, *a)
    )
    query = rng.standard_normal(DIM)
    for user in ("default", "bob", "default"):
        same(*both(db, query, 10, Reach(user_id=user)))
    assert len(scored) == 1
    [newest] = facts(db, query[None, :], user_id="bob")  # the query itself: the nearest row
    indexed, scanned = both(db, query, 10, Reach(user_id="bob"))
    same(indexed, scanned)
    assert indexed[0][0] == newest and len(scored) == 2
    same(*both(db, rng.standard_normal(DIM), 10, Reach(user_id="bob")))  # another query
    assert len(scored) == 3


def test_similarities_of_many_rows_in_one_look_as_sqlite_vec_says(db: Database) -> None:
    """A search asks for the similarities of the rows it needs at once: one look at the
    changes, the same numbers as vec_distance_cosine, none for a row without a vector; and
    what its KNN found is kept (`corpus.Reads`) rather than asked again."""
    rng = np.random.default_rng(3)
    ids = facts(db, rng.standard_normal((50, DIM)))
    index = db.vector_index
    assert index is not None
    index.build(db.writer)
    query = [float(x) for x in rng.standard_normal(DIM)]
    polls = []
    db.writer.set_trace_callback(lambda sql: polls.append(sql) if "vector_changes" in sql else 0)
    found = index.similarities(db.writer, "memory_vectors", query, [*ids[:20], 10**9])
    db.writer.set_trace_callback(None)
    assert len(polls) == 1 and set(found) == set(ids[:20])
    blob = np.asarray(query, dtype=np.float32).tobytes()
    for memory_id, sim in found.items():
        (distance,) = db.writer.execute(
            "SELECT vec_distance_cosine(embedding, ?) FROM memory_vectors WHERE memory_id = ?",
            (blob, memory_id),
        ).fetchone()
        assert sim == pytest.approx(1.0 - distance, abs=1e-5)
    reads = Reads()
    near = vector_knn(db.writer, query, 5, flt=Reach(), reads=reads)
    assert reads.similar == {("memory_vectors", i): 1.0 - d for i, d in near}


def test_writes_through_any_connection_reach_the_index(db: Database, db_path: Path) -> None:
    rng = np.random.default_rng(2)
    index = db.vector_index
    assert index is not None
    index.build(db.writer)
    target = rng.standard_normal(DIM)
    # Another process writes a fact right where the query will look (a CLI next to the daemon).
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from lobug.storage.sqlite import connect\n"
        "from lobug.memory.table import rows as store\n"
        "from lobug.memory.vectors import knn\n"
        "conn = connect(sys.argv[2]); conn.execute('BEGIN IMMEDIATE')\n"
        "i = store.insert_memory(conn, user_id='default', kind='fact', content='cli', now=1.0,"
        " actor='cli')\n"
        "knn.put_memory_vector(conn, i, [float(x) for x in sys.argv[3].split(',')])\n"
        "conn.execute('COMMIT'); print(i)\n"
    )
    vector = ",".join(str(x) for x in target)
    out = subprocess.run(
        [sys.executable, "-c", script, str(ROOT), str(db_path), vector],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    cli_id = int(out.stdout)
    facts(db, rng.standard_normal((50, DIM)))
    found = vector_knn(db.writer, list(target), 1)
    assert found[0][0] == cli_id and found[0][1] == pytest.approx(0.0, abs=1e-5)

    # A rolled-back write leaves nothing behind.
    def rolled_back(conn: Any) -> None:
        knn.put_memory_vector(conn, cli_id, list(-target))
        raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        db.write_sync(rolled_back)
    assert vector_knn(db.writer, list(target), 1)[0][0] == cli_id

    # A dropped vector is gone from the index too.
    db.write_sync(lambda conn: knn.drop_memory_vector(conn, cli_id))
    assert cli_id not in [i for i, _ in vector_knn(db.writer, list(target), 10)]

    # The tables replaced wholesale (reembed's swap: dropped, then made anew): the search
    # that sees it does not load them (a search thread, under the lock) but scans vec0, and
    # the owner's refresh loads them off the lock.
    def replaced(conn: Any) -> None:
        for table in KEYS:
            conn.execute(f"DROP TABLE {table}")
        create_vector_tables(conn, DIM)
        knn.put_memory_vector(conn, cli_id, list(target))

    db.write_sync(replaced)
    loads: list[int] = []
    original = vector_index._read_all

    def counted(conn: Any) -> Any:
        loads.append(1)
        return original(conn)

    vector_index._read_all = counted  # type: ignore[assignment]
    try:
        assert [i for i, _ in vector_knn(db.writer, list(target), 5)] == [cli_id]
        assert loads == [] and not index.ready and index.stale
        assert vector_index.index_of(db.writer) is None  # vec0 answers until it is loaded
        assert db.read_sync(index.refresh) == 1 and loads == [1]
    finally:
        vector_index._read_all = original  # type: ignore[assignment]
    assert index.ready and vector_index.index_of(db.writer) is index
    assert [i for i, _ in vector_knn(db.writer, list(target), 5)] == [cli_id]

    # GC forgets the applied changes; later writes still arrive.
    assert db.write_sync(prune_changes, index.applied) > 0
    later = facts(db, np.array([target]))[0]
    assert later in [i for i, _ in vector_knn(db.writer, list(target), 2)]


def test_past_exact_max_the_sign_bit_shortlist_keeps_the_best(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clustered data like real embeddings: the shortlist holds the exact top 10, and a
    filter that hides the whole shortlist falls back to scanning every row."""
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((20, DIM))
    data = centres[rng.integers(0, 20, 2000)] + 0.3 * rng.standard_normal((2000, DIM))
    ids = facts(db, data)
    odd = facts(db, rng.standard_normal((30, DIM)), store="shared")
    index = db.vector_index
    assert index is not None
    index.build(db.writer)
    monkeypatch.setattr(vector_index, "EXACT_MAX", 100)
    monkeypatch.setattr(vector_index, "SHORTLIST", 200)
    recall = []
    for query in data[rng.integers(0, 2000, 30)] + 0.1 * rng.standard_normal((30, DIM)):
        indexed, scanned = both(db, query, 10, Reach(user_id="default"))
        recall.append(len({i for i, _ in indexed} & {i for i, _ in scanned}) / 10)
    assert np.mean(recall) >= 0.95
    shared = both(db, rng.standard_normal(DIM), 10, Reach(stores=("shared",)))
    same(*shared)
    assert {i for i, _ in shared[0]} <= set(odd) and len(shared[0]) == 10
    assert len(ids) == 2000


def test_without_an_index_or_before_it_is_built_search_scans_sqlite_vec(db: Database) -> None:
    rng = np.random.default_rng(4)
    facts(db, rng.standard_normal((40, DIM)))
    conn = db.writer
    assert vector_index.index_of(conn) is None  # not built yet: vec0 answers
    before = vector_knn(conn, list(rng.standard_normal(DIM)), 5)
    assert len(before) == 5
    assert db.vector_index is not None
    assert db.vector_index.build(conn) == 40
    assert vector_index.index_of(conn) is db.vector_index
    assert MEMORIES.vectors in db.vector_index.stats()["vectors"]


def test_changes_pruned_by_another_process_make_the_index_load_again(
    db: Database, db_path: Path
) -> None:
    """`lobug mcp`'s index and the daemon's share the change log; when one GC prunes what the
    other never applied, the other sees the gap in the ids and loads again, missing nothing."""
    rng = np.random.default_rng(5)
    facts(db, rng.standard_normal((10, DIM)))
    index = db.vector_index
    assert index is not None and index.build(db.writer) == 10
    other = Database(db_path, vector_index=VectorIndex())
    other.open_sync()
    try:
        target = rng.standard_normal(DIM)
        new = facts(other, np.array([target]))[0]  # written while ours is not looking
        more = facts(other, rng.standard_normal((3, DIM)))
        other.write_sync(prune_changes, 10**9)  # …and pruned by the other GC
        facts(other, rng.standard_normal((1, DIM)))  # the newest change survives a GC
        assert vector_index.index_of(db.writer) is None and index.stale
        assert db.read_sync(index.refresh) == 15
        found = [i for i, _ in vector_knn(db.writer, list(target), 1)]
        assert found == [new] and set(more) <= set(index._tables[MEMORIES.vectors].pos)
    finally:
        other.close_sync()


def test_tables_that_appear_later_are_loaded_without_a_restart(tmp_path: Path) -> None:
    """Vectors off at start (no tables yet: the embedder could not be set up): the index
    stays off only until they exist."""
    path = tmp_path / "late.db"
    conn = connect(path)
    migrate(conn)
    conn.close()
    database = Database(path, vector_index=VectorIndex())
    database.open_sync()
    try:
        index = database.vector_index
        assert index is not None
        assert index.build(database.writer) == 0 and not index.ready
        assert database.read_sync(index.refresh) is None  # nothing changed: no load

        def set_up(conn: Any) -> None:
            write_meta(conn, "embedding_dim", str(DIM))
            create_vector_tables(conn, DIM)

        database.write_sync(set_up)
        facts(database, np.random.default_rng(6).standard_normal((3, DIM)))
        assert database.read_sync(index.refresh) == 3 and index.ready
    finally:
        database.close_sync()
