"""Storage faults: a full disk or page budget answers 503 storage_full and recovers; a locked
database waits within busy_timeout, then answers 503 unavailable; workers survive both."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from contract import assert_error, assert_valid
from dbutil import query, scalar
from fake_ollama import FakeOllamaState
from faultkit import DaemonPool, db_rows, db_value

from lobug import keys
from lobug.config import load_config
from lobug.parts import open_database
from lobug.storage.sqlite import connect
from lobug.workers import queue
from lobug.workers.queue import Job

BIG = "remember this long story " * 140  # ~3.5 KB: needs overflow pages, so new pages


def db_path(client: Any) -> Path:
    return Path(client.app[keys.CONFIG].storage.db_path)


async def post_turn(client: Any, text: str) -> tuple[int, dict[str, Any]]:
    resp = await client.post("/chat/text", json={"text": text, "device_id": "desk"})
    return resp.status, await resp.json()


# -- storage full: the storage.max_page_count safety valve ---------------------------------------
async def test_page_budget_full_answers_503_then_recovers(make_client: Any) -> None:
    client = await make_client(**{"storage.max_page_count": 90})
    db = client.app[keys.DB]
    assert await db.write_raw(lambda c: c.execute("PRAGMA max_page_count").fetchone()[0]) == 90
    accepted: list[int] = []
    status, body = 200, {}
    for i in range(60):
        status, body = await post_turn(client, f"{i} {BIG}")
        if status != 200:
            break
        accepted.append(body["turn_id"])
    assert status == 503, "the page budget never filled up"
    assert_error(body, "storage_full")
    assert "full" in body["error"]["message"]
    assert accepted, "the budget was full before the first turn"
    # Every turn that got a 200 is stored with its reply; nothing was half-written.
    path = db_path(client)
    stored = {r["id"] for r in query(path, "SELECT id FROM turns WHERE role = 'user'")}
    assert set(accepted) <= stored
    assert scalar(path, "SELECT COUNT(*) FROM turns WHERE role = 'assistant'") >= len(accepted)
    assert scalar(path, "PRAGMA quick_check") == "ok"
    # Reads still work while writes cannot: /health answers, the DB is up.
    health = await (await client.get("/health")).json()
    assert_valid("health.response", health)
    assert health["db"] is True
    # Space returns (the operator raises the valve): the next turn goes through.
    await db.write_raw(lambda c: c.execute("PRAGMA max_page_count = 100000").fetchone())
    status, body = await post_turn(client, "after the disk was freed")
    assert status == 200, body
    assert scalar(path, "SELECT COUNT(*) FROM turns WHERE text = 'after the disk was freed'") == 1


async def test_worker_survives_storage_full_without_spending_attempts(
    make_client: Any, clock: Any
) -> None:
    client = await make_client()
    db, runner = client.app[keys.DB], client.app[keys.RUNNER]
    # No room for a single new page from here on.
    pages = await db.write_raw(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
    await db.write_raw(lambda c: c.execute(f"PRAGMA max_page_count = {pages}").fetchone())
    ran: list[int] = []

    async def fill(job: Job) -> None:  # a job whose own write needs new pages
        await db.write(
            lambda c: c.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?)", (f"blob-{job.id}", BIG * 4)
            )
        )
        ran.append(job.id)

    runner.register("fill", fill)
    job_id = await db.write(lambda c: queue.enqueue(c, "fill", {}, now=clock()))
    runner.wake()
    path = db_path(client)

    def job_row() -> Any:
        return query(path, "SELECT state, attempts, last_error FROM jobs WHERE id = ?", job_id)[0]

    deadline = time.monotonic() + 5
    while "StorageFull" not in (job_row()["last_error"] or "") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    for _ in range(3):  # let it come round again a few times: still no attempt spent
        clock.advance(1.0)
        await asyncio.sleep(0.15)
    row = job_row()
    assert row["state"] == "pending" and "StorageFull" in row["last_error"]
    assert row["attempts"] == 0  # the disk's fault, not the job's: no attempt spent
    assert ran == [] and all(not t.done() for t in runner._tasks), "a worker died"
    await db.write_raw(lambda c: c.execute("PRAGMA max_page_count = 100000").fetchone())
    deadline = time.monotonic() + 5
    while job_row()["state"] != "done" and time.monotonic() < deadline:
        clock.advance(1.0)
        await asyncio.sleep(0.05)
    assert tuple(job_row()) == ("done", 1, None)
    assert ran == [job_id]


# -- database locked -----------------------------------------------------------------------------
async def test_write_waits_for_a_short_lock_and_503s_after_busy_timeout(make_client: Any) -> None:
    client = await make_client(**{"storage.busy_timeout_ms": 800})
    path = db_path(client)
    other = connect(path)  # e.g. `lobug jobs retry`, or a maintenance script
    loop = asyncio.get_running_loop()
    try:
        # Shorter than busy_timeout: the write waits for the lock, then succeeds.
        other.execute("BEGIN IMMEDIATE")
        loop.call_later(0.3, other.execute, "COMMIT")
        started = time.monotonic()
        status, body = await post_turn(client, "waited for the lock")
        waited = time.monotonic() - started
        assert status == 200, body
        assert waited >= 0.25, "the write did not actually wait for the lock"
        assert scalar(path, "SELECT COUNT(*) FROM turns WHERE text = 'waited for the lock'") == 1

        # Longer than busy_timeout: a clear 503, not a 500, and nothing half-stored.
        before = scalar(path, "SELECT COUNT(*) FROM turns")
        other.execute("BEGIN IMMEDIATE")
        status, body = await post_turn(client, "lock held too long")
        other.execute("COMMIT")
        assert status == 503
        assert_error(body, "unavailable")
        assert "database is busy" in body["error"]["message"]
        assert scalar(path, "SELECT COUNT(*) FROM turns") == before

        # A long reader never blocks a write in WAL mode.
        other.execute("BEGIN")
        other.execute("SELECT COUNT(*) FROM turns").fetchone()
        started = time.monotonic()
        status, _ = await post_turn(client, "beside a long reader")
        assert status == 200 and time.monotonic() - started < 0.5
        other.execute("COMMIT")
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
    status, _ = await post_turn(client, "after the lock")
    assert status == 200
    assert scalar(path, "SELECT COUNT(*) FROM turns WHERE text = 'lock held too long'") == 0


# -- the same against the real daemon process ----------------------------------------------------
@pytest.fixture
async def daemons(tmp_path: Path, ollama: tuple[FakeOllamaState, str]) -> AsyncIterator[DaemonPool]:
    pool = DaemonPool(tmp_path / "data", ollama[1], log_dir=tmp_path)
    yield pool
    pool.stop_all()


def _prepare_db_with_ballast(data_dir: Path, ballast_pages: int) -> int:
    """A migrated database holding a throwaway table; returns its page count."""
    config = load_config(None, env={}, overrides={"storage.data_dir": str(data_dir)})
    db = open_database(config)
    try:
        db.write_sync(lambda c: c.execute("CREATE TABLE ballast (b BLOB)"))
        for _ in range(ballast_pages // 8):
            db.write_sync(lambda c: c.execute("INSERT INTO ballast VALUES (zeroblob(32000))"))
        db.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(db.writer.execute("PRAGMA page_count").fetchone()[0])
    finally:
        db.close_sync()


async def test_daemon_page_budget_full_then_space_freed(
    daemons: DaemonPool, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    pages = _prepare_db_with_ballast(data_dir, 200)
    daemon = await daemons.start(env={"LOBUG_STORAGE_MAX_PAGE_COUNT": str(pages)})
    statuses = []
    for i in range(10):
        status, body = await daemon.request("POST", "/chat/text", json={"text": f"{i} {BIG}"})
        statuses.append(status)
        if status == 503:
            break
    assert statuses[-1] == 503, statuses
    assert_error(body, "storage_full")
    status, health = await daemon.request("GET", "/health")
    assert status == 200 and health["db"] is True
    # Space comes back (the ballast is deleted by another process): no restart needed.
    conn = connect(data_dir / "lobug.db")
    conn.execute("DELETE FROM ballast")
    conn.close()
    status, body = await daemon.request("POST", "/chat/text", json={"text": "room again"})
    assert status == 200, body
    assert db_value(data_dir, "SELECT COUNT(*) FROM turns WHERE text = 'room again'") == 1
    assert "storage full" in daemon.log()
    assert await daemon.terminate() == 0


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


async def test_daemon_real_disk_full_on_tmpfs(
    tiny_tmpfs: Path, ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    data_dir = tiny_tmpfs / "data"
    pool = DaemonPool(data_dir, ollama[1], log_dir=tmp_path)
    try:
        daemon = await pool.start()
        status, _ = await daemon.request("POST", "/chat/text", json={"text": "before the fill"})
        assert status == 200
        ballast = tiny_tmpfs / "ballast"
        with open(ballast, "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        status, body = await daemon.request("POST", "/chat/text", json={"text": BIG})
        assert status == 503, body
        assert_error(body, "storage_full")
        status, body = await daemon.request("POST", "/context/sensors", json={"battery": 5})
        assert status in (200, 503)  # an in-place update may still fit; never a 500
        status, health = await daemon.request("GET", "/health")
        assert status == 200
        ballast.unlink()
        status, body = await daemon.request("POST", "/chat/text", json={"text": "disk freed"})
        assert status == 200, body
        assert await daemon.terminate() == 0
        texts = [r[0] for r in db_rows(data_dir, "SELECT text FROM turns WHERE role = 'user'")]
        assert "before the fill" in texts and "disk freed" in texts
        assert db_value(data_dir, "PRAGMA quick_check") == "ok"
    finally:
        pool.stop_all()


async def test_daemon_db_locked_waits_then_503(daemons: DaemonPool, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    daemon = await daemons.start(env={"LOBUG_STORAGE_BUSY_TIMEOUT_MS": "700"})
    other = connect(data_dir / "lobug.db")
    try:
        other.execute("BEGIN IMMEDIATE")
        release = asyncio.get_running_loop().call_later(0.3, other.execute, "COMMIT")
        status, body = await daemon.request("POST", "/chat/text", json={"text": "short lock"})
        assert status == 200, body
        release.cancel()
        other.execute("BEGIN IMMEDIATE")
        status, body = await daemon.request("POST", "/chat/text", json={"text": "long lock"})
        other.execute("COMMIT")
        assert status == 503
        assert_error(body, "unavailable")
        assert "database is busy" in body["error"]["message"]
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
    status, _ = await daemon.request("POST", "/chat/text", json={"text": "after"})
    assert status == 200
    texts = [r[0] for r in db_rows(data_dir, "SELECT text FROM turns WHERE role = 'user'")]
    assert texts == ["short lock", "after"]
    assert await daemon.terminate() == 0
