"""`lobug doctor`: each check says ok or FAIL (with how to fix it), against the fake Ollama and
real database files; the CLI prints text or JSON and exits 1 when anything failed."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import FakeTranscriber
from fake_ollama import FakeOllamaState

from lobug.access import cli_principal
from lobug.config import Config
from lobug.devices import HOW_TO_PAIR, Devices
from lobug.ops import doctor
from lobug.ops.lock import DataDirLock
from lobug.parts import open_database
from lobug.storage.vectors import write_meta
from lobug.workers import queue

ALL_MODELS = ["llama3.2:latest", "nomic-embed-text:latest", "all-minilm:latest"]


@pytest.fixture
def ollama_config(make_config: Callable[..., Config]) -> Callable[..., Config]:
    """The production embedder (Ollama, nomic-embed-text, 768-d) against the fake server."""

    def factory(**overrides: Any) -> Config:
        values = {
            "embedding.backend": "ollama",
            "embedding.model": "nomic-embed-text",
            "embedding.dim": 768,
            **overrides,
        }
        return make_config(**values)

    return factory


def by_name(checks: list[doctor.Check]) -> dict[str, doctor.Check]:
    return {c.name: c for c in checks}


def migrated(config: Config) -> Config:
    open_database(config).close_sync()
    return config


async def test_healthy_install_is_all_ok(ollama_config: Callable[..., Config]) -> None:
    config = migrated(ollama_config(**{"api.device_token": "device-token-0123456789"}))
    with DataDirLock(config.storage.data_dir):  # what the running daemon holds
        checks = await doctor.run_checks(config, transcriber=FakeTranscriber())
    found = by_name(checks)
    assert {c.status for c in checks} == {"ok"}, doctor.render(checks)
    assert set(found) == {
        "daemon",
        "ollama",
        "chat model",
        "embedding model",
        "speech model",
        "database",
        "sqlite extensions",
        "schema",
        "embedding dimension",
        "job queue",
        "devices",
        "disk space",
        "parts",
    }
    assert f"pid {os.getpid()}" in found["daemon"].detail
    assert "768-d" in found["embedding model"].detail
    assert "FTS5 and sqlite-vec" in found["sqlite extensions"].detail
    assert not doctor.failed(checks)
    text = doctor.render(checks)
    assert found["parts"].detail == (
        "speech: embedded (faster-whisper base.en); embedder: external (ollama"
        f" nomic-embed-text); chat model: external (ollama at {config.ollama.host})"
    )
    assert "fix:" not in text and text.endswith(
        f"{len(checks)} ok, 0 warning(s), 0 failed, 0 skipped"
    )
    assert doctor.as_json(checks)["ok"] is True


async def test_each_problem_fails_with_a_fix(
    ollama_config: Callable[..., Config], ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    # A model whose size lobug does not know, set to the wrong dimension (a known one's
    # wrong dimension stops the config itself: tests/test_config.py).
    config = migrated(ollama_config(**{"embedding.model": "house-embed", "embedding.dim": 384}))
    db = open_database(config)
    now = time.time()
    db.write_sync(lambda c: write_meta(c, "embedding_model", "nomic-embed-text"))
    db.write_sync(lambda c: write_meta(c, "embedding_dim", "768"))
    job = db.write_sync(lambda c: queue.enqueue(c, "extract", {"turn_id": 1}, now=now))
    db.write_sync(lambda c: c.execute("UPDATE jobs SET state = 'failed', last_error = 'boom'"))
    db.close_sync()
    assert job
    state.models = ["house-embed:latest"]  # the chat model was never pulled

    checks = await doctor.run_checks(config, transcriber=FakeTranscriber(fail_load=True))
    found = by_name(checks)
    expect = {
        "chat model": "ollama pull llama3.2",
        "embedding model": "embedding.dim",  # the model answers 768-d, the config says 384
        "speech model": "speech.model",
        "embedding dimension": "lobug memory reembed",
        "job queue": "lobug jobs retry",
    }
    for name, fix in expect.items():
        assert found[name].status == "FAIL", (name, found[name])
        assert fix in (found[name].fix or ""), (name, found[name])
    assert "768" in found["embedding model"].detail and "384" in found["embedding model"].detail
    assert found["speech model"].detail.startswith("fake model is missing")
    assert "1 failed" in found["job queue"].detail
    assert found["daemon"].status == "warn"  # nothing holds the data dir
    assert found["ollama"].status == "ok" and found["database"].status == "ok"
    assert doctor.failed(checks)
    text = doctor.render(checks)
    for name in expect:
        line = next(ln for ln in text.splitlines() if ln.startswith("FAIL") and name in ln)
        fix_line = text.splitlines()[text.splitlines().index(line) + 1]
        assert fix_line.strip().startswith("fix: "), (line, fix_line)


async def test_ollama_down_missing_db_and_low_disk(
    ollama_config: Callable[..., Config],
    ollama: tuple[FakeOllamaState, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state, _ = ollama
    state.mode = "down"
    config = ollama_config()  # never started: no database file yet
    free = {"bytes": 300 * doctor.MIB}

    def fake_usage(path: Any) -> Any:
        return shutil._ntuple_diskusage(8 * 1024 * doctor.MIB, 0, free["bytes"])  # type: ignore[attr-defined]

    monkeypatch.setattr(doctor.shutil, "disk_usage", fake_usage)
    checks = await doctor.run_checks(config, transcriber=FakeTranscriber())
    found = by_name(checks)
    assert found["ollama"].status == "FAIL"
    assert "systemctl start ollama" in (found["ollama"].fix or "")
    assert found["chat model"].status == "skip" and found["embedding model"].status == "skip"
    assert found["database"].status == "FAIL"
    assert "lobug db migrate" in (found["database"].fix or "")
    assert found["disk space"].status == "warn" and "300 MiB free" in found["disk space"].detail
    # Read by part: the speech model is embedded and loads; the server-side parts are missing.
    assert found["parts"].status == "warn" and "scripts/serve" in (found["parts"].fix or "")
    assert found["parts"].detail.startswith("speech: embedded (faster-whisper base.en);")
    assert "embedder: missing (ollama nomic-embed-text)" in found["parts"].detail
    assert "chat model: missing (ollama at" in found["parts"].detail
    free["bytes"] = 10 * doctor.MIB
    found = by_name(await doctor.run_checks(config, transcriber=FakeTranscriber()))
    assert found["disk space"].status == "FAIL" and "storage_full" in found["disk space"].detail


async def test_damaged_database_and_stale_queue(ollama_config: Callable[..., Config]) -> None:
    config = migrated(ollama_config())
    db = open_database(config)
    db.write_sync(
        lambda c: queue.enqueue(c, "extract", {}, now=time.time() - 3 * 3600)
    )  # ready three hours ago and never run
    db.close_sync()
    found = by_name(await doctor.run_checks(config, transcriber=FakeTranscriber()))
    assert found["job queue"].status == "warn" and "3.0 h" in found["job queue"].detail

    path = config.storage.db_path
    for i in range(200):  # grow the file, then damage its middle
        db = open_database(config)
        db.write_sync(
            lambda c, i=i: c.execute(
                "INSERT INTO turns (session_id, role, text, ts) VALUES ('s', 'user', ?, ?)",
                ("z" * 400, i),
            )
        )
        db.close_sync()
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\x00\xff" * 6000)
    found = by_name(await doctor.run_checks(config, transcriber=FakeTranscriber()))
    assert found["database"].status == "FAIL", found["database"]
    assert "lobug restore" in (found["database"].fix or "")
    assert "sqlite extensions" not in found  # no point checking a damaged file further


async def test_never_silent_while_no_device_can_remember(
    ollama_config: Callable[..., Config], clock: Any
) -> None:
    config = migrated(ollama_config())  # no device token, nothing paired
    check = by_name(await doctor.run_checks(config, transcriber=FakeTranscriber()))["devices"]
    assert (check.status, check.fix) == ("warn", "lobug devices pair, then say something to Lo-Bug")
    assert HOW_TO_PAIR in check.detail
    db = open_database(config)
    try:  # the owner pairs the M5Stack: the window, then the device talks
        devices = Devices(db, clock)
        await devices.open_window(cli_principal())
        await devices.admit("m5stack", "192.168.1.20", unknown_trust="public", turn=True)
    finally:
        db.close_sync()
    check = by_name(await doctor.run_checks(config, transcriber=FakeTranscriber()))["devices"]
    assert check.status == "ok" and check.detail.startswith("1 paired device(s)")


async def test_cli_text_and_json(
    ollama_config: Callable[..., Config], ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    _, url = ollama
    config = migrated(ollama_config())
    env = {
        **os.environ,
        "LOBUG_OLLAMA_HOST": url,
        "LOBUG_EMBEDDER": "ollama",
        "LOBUG_EMBEDDING_DIM": "768",
        "LOBUG_SPEECH_DOWNLOAD_ROOT": str(tmp_path / "no-models"),
        "LOBUG_LOG_LEVEL": "WARNING",
    }

    async def run(*args: str) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "lobug",
            "--data-dir",
            str(config.storage.data_dir),
            "doctor",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        return int(proc.returncode or 0), out.decode()

    code, out = await run("--json")
    assert code == 1  # no Whisper weights on a test machine
    report = json.loads(out)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert report["ok"] is False and statuses["speech model"] == "FAIL"
    assert statuses["ollama"] == statuses["chat model"] == statuses["database"] == "ok"
    speech = next(c for c in report["checks"] if c["name"] == "speech model")
    assert "not in" in speech["detail"] and speech["fix"]
    code, out = await run()
    assert code == 1
    lines = out.splitlines()
    fail = next(i for i, ln in enumerate(lines) if ln.startswith("FAIL") and "speech model" in ln)
    assert lines[fail + 1].strip().startswith("fix: ")
    assert any(ln.startswith("ok    ollama") for ln in lines), out
    # the summary counts the same checks the JSON listed
    assert lines[-1].startswith(f"{len(report['checks'])} checks:") and "1 failed" in lines[-1]
