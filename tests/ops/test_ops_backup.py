"""`lobug backup` and `lobug restore`: online copies while the daemon writes, verified restores
that refuse while the daemon runs, and nothing lost either way."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from dbutil import query, scalar
from faultkit import DaemonPool, db_rows, db_value

from lobug import keys
from lobug.config import load_config
from lobug.ops.backup import BackupError, backup_database, verify
from lobug.ops.lock import DataDirLock, DataDirLocked, is_locked
from lobug.ops.restore import RestoreError, restore_database
from lobug.parts import open_database
from lobug.storage.sqlite import connect
from lobug.storage.vectors import create_vector_tables, has_vector_tables, pack, read_meta


async def lobug_cli(
    data_dir: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    """Run the real CLI in a subprocess (the fake Ollama keeps serving on this loop meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lobug",
        "--data-dir",
        str(data_dir),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "LOBUG_LOG_LEVEL": "WARNING", **(env or {})},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return int(proc.returncode or 0), out.decode()


def seed_memories_and_vectors(path: Path) -> None:
    """Rows in every kind of table a backup must carry: FTS5 through triggers, vec0 vectors."""
    conn = connect(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        if has_vector_tables(conn):  # the memory service made them at start, for its model
            dim = int(read_meta(conn, "embedding_dim") or 0)
        else:
            dim = 4
            create_vector_tables(conn, dim)
        for i, text in enumerate(["the user likes oolong tea", "the cat is called Tom"]):
            cur = conn.execute(
                "INSERT INTO memories (content, created_at, updated_at) VALUES (?, ?, ?)",
                (text, time.time(), time.time()),
            )
            vec = [0.0] * dim
            vec[i] = 1.0
            conn.execute(
                "INSERT INTO memory_vectors (memory_id, embedding) VALUES (?, ?)",
                (cur.lastrowid, pack(vec)),
            )
        conn.execute("COMMIT")
    finally:
        conn.close()


def ro_scalar(path: Path, sql: str) -> Any:
    """Look inside a backup without changing it (our connect() would switch it to WAL)."""
    conn = connect(path, readonly=True)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def check_backup_contents(path: Path) -> None:
    """FTS5 and sqlite-vec both answer from the copy (sqlite-vec loaded by our connect())."""
    assert scalar(
        path,
        "SELECT content FROM memories WHERE id IN "
        "(SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'oolong')",
    ) == ("the user likes oolong tea")
    dim = len(query(path, "SELECT embedding FROM memory_vectors LIMIT 1")[0][0]) // 4
    probe = [0.0] * dim
    probe[1] = 1.0
    nearest = query(
        path,
        "SELECT m.content, v.distance FROM memory_vectors v JOIN memories m ON m.id = v.memory_id"
        " WHERE v.embedding MATCH ? AND k = 3 ORDER BY v.distance",
        pack(probe),
    )
    assert nearest[0][0] == "the cat is called Tom" and nearest[0][1] < 1e-6


def corrupt(path: Path) -> None:
    """Scribble over a b-tree page in the middle of the file, as a failing SD card would."""
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        for offset in range(size // 2, size - 4096, 4096 * 3):
            fh.seek(offset)
            fh.write(b"\xde\xad\xbe\xef" * 256)


# -- backup ---------------------------------------------------------------------------------
async def test_backup_while_the_app_keeps_writing(make_client: Any, tmp_path: Path) -> None:
    client = await make_client()
    source = Path(client.app[keys.CONFIG].storage.db_path)
    for i in range(30):  # enough pages that the copy takes many steps
        resp = await client.post("/chat/text", json={"text": f"before {i} " + "word " * 300})
        assert resp.status == 200
    seed_memories_and_vectors(source)
    before = scalar(source, "SELECT COUNT(*) FROM turns")
    latencies: list[float] = []
    statuses: list[int] = []
    finished_at: list[float] = []
    done = asyncio.Event()
    steps: list[tuple[int, int]] = []
    # Deterministic overlap: the copy pauses after its third step until a turn has been
    # committed while it is in progress (a busy CI machine cannot make them miss each other).
    wrote_mid_copy = threading.Event()

    def progress(done_pages: int, total: int) -> None:
        steps.append((done_pages, total))
        if len(steps) == 3:
            wrote_mid_copy.wait(timeout=30)

    async def keep_writing() -> None:
        i = 0
        while not done.is_set():
            started = time.monotonic()
            resp = await client.post("/chat/text", json={"text": f"during {i}"})
            statuses.append(resp.status)
            finished_at.append(time.monotonic())
            if steps and resp.status == 200:
                wrote_mid_copy.set()
            latencies.append(finished_at[-1] - started)
            i += 1

    writer = asyncio.create_task(keep_writing())
    dest = tmp_path / "backups" / "lobug.db"
    backup_started = time.monotonic()
    result = await asyncio.to_thread(
        backup_database,
        source,
        dest,
        step_pages=4,
        pause_s=0.01,
        progress=progress,
    )
    backup_ended = time.monotonic()
    done.set()
    await writer
    assert result.ok, result.verification.problems
    assert len(steps) > 10, "the copy was not made in steps"
    assert [d for d, _ in steps] == sorted(d for d, _ in steps), "the copy restarted"
    assert statuses and set(statuses) == {200}, "a write failed during the backup"
    assert wrote_mid_copy.is_set(), "no write completed while the backup was part-way"
    assert [t for t in finished_at if backup_started < t < backup_ended]
    assert max(latencies) < 2.0, "the backup held the writer up"
    # One self-contained file: no -wal to forget when copying it off the Pi.
    assert ro_scalar(dest, "PRAGMA journal_mode") == "delete"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["lobug.db"]
    # A consistent snapshot: everything from before the start, nothing half-written after.
    in_copy = scalar(dest, "SELECT COUNT(*) FROM turns")
    assert before <= in_copy <= scalar(source, "SELECT COUNT(*) FROM turns")
    # A prefix of the log with no holes (ids are AUTOINCREMENT, nothing is deleted); FTS5 was
    # checked against it by integrity_check in result.ok.
    assert scalar(dest, "SELECT MAX(id) FROM turns") == in_copy
    assert scalar(source, "SELECT COUNT(*) FROM turns WHERE text LIKE 'during %'") == len(statuses)
    assert result.size_bytes == dest.stat().st_size > 0
    assert result.verification.tables["memories"] >= 2
    assert result.verification.tables["memory_vectors"] >= 2
    check_backup_contents(dest)


async def test_backup_cli_against_the_running_daemon(daemons: DaemonPool, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    daemon = await daemons.start()
    for i in range(5):
        await daemon.request("POST", "/chat/text", json={"text": f"turn {i}"})
    seed_memories_and_vectors(data_dir / "lobug.db")

    async def traffic() -> list[int]:
        codes = []
        for i in range(40):
            status, _ = await daemon.request("POST", "/chat/text", json={"text": f"live {i}"})
            codes.append(status)
        return codes

    load = asyncio.create_task(traffic())
    code, out = await lobug_cli(data_dir, "backup", str(tmp_path / "nightly.db"))
    assert code == 0, out
    assert "integrity_check ok" in out and "KiB" in out, out
    assert set(await load) == {200}
    check_backup_contents(tmp_path / "nightly.db")
    assert scalar(tmp_path / "nightly.db", "SELECT COUNT(*) FROM turns WHERE text = 'turn 4'") == 1
    # Into a directory: a dated file appears there.
    (tmp_path / "dir").mkdir()
    code, out = await lobug_cli(data_dir, "backup", str(tmp_path / "dir"))
    assert code == 0, out
    [made] = list((tmp_path / "dir").iterdir())
    assert made.name.startswith("lobug-") and verify(made).ok
    assert await daemon.terminate() == 0


async def test_backup_failures_exit_1_and_keep_the_old_backup(tmp_path: Path) -> None:
    code, out = await lobug_cli(tmp_path / "nowhere", "backup", str(tmp_path / "b.db"))
    assert code == 1 and "there is no database" in out, out
    assert not (tmp_path / "b.db").exists()

    data_dir = tmp_path / "data"
    config = load_config(None, env={}, overrides={"storage.data_dir": str(data_dir)})
    db = open_database(config)
    for i in range(400):
        db.write_sync(
            lambda c, i=i: c.execute(
                "INSERT INTO turns (session_id, role, text, ts) VALUES ('s', 'user', ?, ?)",
                (f"turn {i} " + "x" * 200, i),
            )
        )
    db.close_sync()
    good = tmp_path / "b.db"
    code, out = await lobug_cli(data_dir, "backup", str(good))
    assert code == 0, out
    good_bytes = good.read_bytes()

    corrupt(config.storage.db_path)
    code, out = await lobug_cli(data_dir, "backup", str(good))
    assert code == 1, out
    assert "did not verify" in out or "backup failed" in out, out
    assert good.read_bytes() == good_bytes, "a failed backup replaced the last good one"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("b.db")) == ["b.db"]
    with pytest.raises(BackupError, match="live database itself"):
        backup_database(config.storage.db_path, config.storage.db_path)


# -- restore --------------------------------------------------------------------------------
async def test_restore_refuses_while_the_daemon_runs(daemons: DaemonPool, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    daemon = await daemons.start()
    await daemon.request("POST", "/chat/text", json={"text": "keep me"})
    code, out = await lobug_cli(data_dir, "backup", str(tmp_path / "b.db"))
    assert code == 0, out
    await daemon.request("POST", "/chat/text", json={"text": "newer"})
    assert is_locked(data_dir) == (daemon.proc.pid if daemon.proc else None)

    code, out = await lobug_cli(data_dir, "restore", str(tmp_path / "b.db"))
    assert code == 1, out
    assert "refusing to restore" in out and "systemctl stop lobug" in out, out
    assert f"pid {daemon.proc.pid if daemon.proc else ''}" in out
    # Nothing moved: the live DB still has the newer turn, no before-restore file appeared.
    texts = [r[0] for r in db_rows(data_dir, "SELECT text FROM turns WHERE role = 'user'")]
    assert texts == ["keep me", "newer"]
    assert not list(data_dir.glob("lobug.db.before-restore-*"))
    status, _ = await daemon.request("POST", "/chat/text", json={"text": "still serving"})
    assert status == 200
    assert await daemon.terminate() == 0


async def test_restore_round_trip_after_kill9(daemons: DaemonPool, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    daemon = await daemons.start()
    for text in ("alpha", "beta"):
        await daemon.request("POST", "/chat/text", json={"text": text})
    backup = tmp_path / "b.db"
    code, out = await lobug_cli(data_dir, "backup", str(backup))
    assert code == 0, out
    for text in ("gamma", "delta"):
        await daemon.request("POST", "/chat/text", json={"text": text})
    daemon.kill9()  # leaves a -wal with the newest commits beside the file
    assert Path(f"{data_dir / 'lobug.db'}-wal").exists()

    code, out = await lobug_cli(data_dir, "restore", str(backup))
    assert code == 0, out
    assert "restored" in out and "previous database is kept as" in out, out
    [kept] = list(data_dir.glob("lobug.db.before-restore-*"))
    # The kept database is complete on its own, WAL included.
    kept_texts = [r[0] for r in query(kept, "SELECT text FROM turns WHERE role = 'user'")]
    assert kept_texts == ["alpha", "beta", "gamma", "delta"]
    assert not Path(f"{data_dir / 'lobug.db'}-wal").exists()
    assert not Path(f"{data_dir / 'lobug.db'}-shm").exists()
    assert not list(data_dir.glob("*.restore-tmp*"))

    again = await daemons.start()
    status, _ = await again.request("POST", "/chat/text", json={"text": "epsilon"})
    assert status == 200
    texts = [r[0] for r in db_rows(data_dir, "SELECT text FROM turns WHERE role = 'user'")]
    assert texts == ["alpha", "beta", "epsilon"]
    assert db_value(data_dir, "PRAGMA quick_check") == "ok"
    assert await again.terminate() == 0


async def test_restore_refuses_a_bad_backup_and_changes_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    config = load_config(None, env={}, overrides={"storage.data_dir": str(data_dir)})
    db = open_database(config)
    db.write_sync(
        lambda c: c.execute(
            "INSERT INTO turns (session_id, role, text, ts) VALUES ('s', 'user', 'live', 0)"
        )
    )
    db.close_sync()
    live = config.storage.db_path
    live_bytes = live.read_bytes()

    not_sqlite = tmp_path / "notes.txt"
    not_sqlite.write_text("definitely not a database\n" * 100)
    foreign = tmp_path / "foreign.db"
    conn = connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    damaged = tmp_path / "damaged.db"
    other = load_config(None, env={}, overrides={"storage.data_dir": str(tmp_path / "d2")})
    db = open_database(other)
    for i in range(300):
        db.write_sync(
            lambda c, i=i: c.execute(
                "INSERT INTO turns (session_id, role, text, ts) VALUES ('s', 'user', ?, ?)",
                ("y" * 300, i),
            )
        )
    db.close_sync()
    backup_database(tmp_path / "d2" / "lobug.db", damaged)
    corrupt(damaged)

    for bad, why in [
        (tmp_path / "missing.db", "does not exist"),
        (not_sqlite, "not an SQLite database"),
        (foreign, "not a Lo-Bug database"),
        (damaged, "malformed|integrity_check|cannot be read"),
    ]:
        with pytest.raises(RestoreError, match=f"nothing was changed: .*({why})"):
            restore_database(data_dir, live, bad)
    code, out = await lobug_cli(data_dir, "restore", str(damaged))  # and through the CLI
    assert code == 1, out
    assert "restore failed" in out and "nothing was changed" in out, out
    assert live.read_bytes() == live_bytes
    assert sorted(p.name for p in data_dir.iterdir()) == ["lobug.db", "lobug.lock"]


def test_data_dir_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    lock = DataDirLock(tmp_path).acquire()
    try:
        assert is_locked(tmp_path) == os.getpid()
        with pytest.raises(DataDirLocked) as info:
            DataDirLock(tmp_path).acquire()  # a second open file: flock refuses it too
        assert info.value.pid == os.getpid() and "lobug.lock" in str(info.value)
        with pytest.raises(DataDirLocked):
            restore_database(tmp_path, tmp_path / "lobug.db", tmp_path / "any.db")
    finally:
        lock.release()
    assert is_locked(tmp_path) is None
    with DataDirLock(tmp_path):
        pass


async def test_restore_refuses_a_backup_whose_schema_was_added_to(tmp_path: Path) -> None:
    """Issue 38, finding 11: a backup with an added trigger (it copied private memories to the
    social store), view or changed table was restored as it was. Its schema is now compared
    with the one its own migrations create, and any difference refuses it."""
    data_dir = tmp_path / "data"
    config = load_config(None, env={}, overrides={"storage.data_dir": str(data_dir)})
    open_database(config).close_sync()
    live = config.storage.db_path
    seed_memories_and_vectors(live)
    clean = tmp_path / "clean.db"
    backup_database(live, clean)
    assert verify(clean).ok, verify(clean).problems  # an untouched backup passes
    live_bytes = live.read_bytes()
    tampering = {
        "trigger": "CREATE TRIGGER leak AFTER INSERT ON memories BEGIN"
        " UPDATE memories SET store = 'social' WHERE id = new.id; END",
        "view": "CREATE VIEW everything AS SELECT content FROM memories",
        "table": "ALTER TABLE memories ADD COLUMN note TEXT",
        "index": "DROP INDEX idx_memories_hash",
    }
    for what, sql in tampering.items():
        bad = tmp_path / f"with-{what}.db"
        backup_database(live, bad)
        conn = connect(bad)
        conn.execute(sql)
        conn.close()
        with pytest.raises(RestoreError, match="nothing was changed: schema: "):
            restore_database(data_dir, live, bad)
    code, out = await lobug_cli(data_dir, "restore", str(tmp_path / "with-trigger.db"))
    assert code == 1, out
    assert "an added trigger 'leak'" in out and "nothing was changed" in out, out
    assert live.read_bytes() == live_bytes
    code, out = await lobug_cli(data_dir, "restore", str(clean))
    assert code == 0, out
