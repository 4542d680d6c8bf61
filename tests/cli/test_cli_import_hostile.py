"""`lobug memory import` against a hostile or careless file, as a real process (issue 16):
bad lines are skipped and reported by number (exit 1, the good lines stored), importing twice
stores nothing twice, and a `kill -9` in the middle is finished by the next run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from cli_kit import SCRIPT, config_file, lobug
from dbutil import query
from fake_ollama import FakeOllamaState

from lobug.memory import enqueue

GOOD = [
    {"session_id": "h", "role": "user", "text": "I keep bees in the garden", "ts": 1_700_000_000},
    {"session_id": "h", "role": "assistant", "text": "How many hives?", "ts": 1_700_000_005},
    {"session_id": "h", "role": "user", "text": "Three hives, since 2019"},
]


def hostile_file(path: Path) -> Path:
    rows: list[bytes] = [
        json.dumps(GOOD[0]).encode(),  # 1
        b'{"session_id": "h", "role": "user", "text": "lone \\ud800 surrogate"}',  # 2
        b'{"session_id": "h", "role": "user", "text": "x", "ts": ' + b"9" * 5000 + b"}",  # 3
        b"9" * 5000,  # 4: a bare number of 5,000 digits
        b'{"session_id": "h", "role": "user", "text": "broken',  # 5
        json.dumps(GOOD[1]).encode(),  # 6
        b'\xff\xfe{"session_id": "h", "role": "user", "text": "latin-1?"}',  # 7
        b'{"session_id": "h", "role": "user", "text": "far future", "ts": 1e999}',  # 8
        b'{"type": "session", "data": {"id": "\\udfff", "device_id": "x"}}',  # 9
        b"[" * 100_000,  # 10: nested too deeply
        b"",  # 11
        json.dumps(GOOD[2]).encode(),  # 12
    ]
    path.write_bytes(b"\n".join(rows) + b"\n")
    return path


BAD = [2, 3, 4, 5, 7, 8, 9, 10]


async def test_bad_lines_are_skipped_and_reported_and_the_good_ones_stored(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str]
) -> None:
    _, url = ollama
    config = config_file(tmp_path, url)
    source = hostile_file(tmp_path / "hostile.jsonl")
    code, out, err = await lobug(config, "memory", "import", str(source), "--json")
    assert code == 1, err
    assert "Traceback" not in err
    for lineno in BAD:
        assert f"line {lineno}: " in err, (lineno, err)
    for lineno in (1, 6, 11, 12):
        assert f"line {lineno}: " not in err
    report = json.loads(out)
    assert report["stored"] == 3
    assert [int(e.split(":")[0].removeprefix("line ")) for e in report["errors"]] == BAD
    db = tmp_path / "data" / "lobug.db"
    texts = [r[0] for r in query(db, "SELECT text FROM turns ORDER BY id")]
    assert texts == [g["text"] for g in GOOD]

    # The text report says the same, and a re-run adds nothing.
    code, out, err = await lobug(config, "memory", "import", str(source))
    assert code == 1 and "Traceback" not in err
    assert "imported 0 turn(s), skipped 3 already imported, 8 bad line(s)" in out
    assert query(db, "SELECT COUNT(*) FROM turns")[0][0] == 3


async def test_importing_the_same_file_twice_stores_every_turn_once(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str]
) -> None:
    _, url = ollama
    config = config_file(tmp_path, url)
    lines = [
        {"session_id": f"s{i % 4}", "role": "user" if i % 2 == 0 else "assistant",
         "text": f"line {i % 30}", **({"ts": 1_700_000_000 + i} if i % 3 else {})}
        for i in range(120)
    ]  # fmt: skip
    source = tmp_path / "turns.jsonl"
    source.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = tmp_path / "data" / "lobug.db"
    code, out, err = await lobug(config, "memory", "import", str(source), "--json")
    assert code == 0, err
    assert json.loads(out)["stored"] == 120
    summaries = query(db, "SELECT COUNT(*) FROM memories WHERE kind = 'summary'")[0][0]
    assert summaries > 0
    code, out, err = await lobug(config, "memory", "import", str(source), "--json")
    assert code == 0, err
    again = json.loads(out)
    assert (again["stored"], again["skipped"], again["summaries_added"]) == (0, 120, 0)
    assert query(db, "SELECT COUNT(*) FROM turns")[0][0] == 120
    assert query(db, "SELECT COUNT(*) FROM memories WHERE kind = 'summary'")[0][0] == summaries
    assert query(db, "SELECT COUNT(*) FROM jobs WHERE state = 'running'")[0][0] == 0


async def test_an_import_killed_with_sigkill_is_finished_by_the_next_run(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, url = ollama
    state.memory_delay_s = 30.0  # extraction hangs: the import is killed while it runs
    config = config_file(tmp_path, url)
    lines = [
        {"session_id": "k", "role": "user" if i % 2 == 0 else "assistant", "text": f"turn {i}",
         **({"ts": 1_700_000_000 + i} if i % 4 else {})}
        for i in range(40)
    ]  # fmt: skip
    source = tmp_path / "turns.jsonl"
    source.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    db = tmp_path / "data" / "lobug.db"
    argv = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "lobug"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOBUG_")}
    proc = await asyncio.create_subprocess_exec(
        *argv, "--config", str(config), "memory", "import", str(source),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        env={**env, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if db.exists() and _running_extracts(db):
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the import never started an extraction")
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert _running_extracts(db) >= 1  # left behind by the dead process

    state.memory_delay_s = 0.0
    code, out, err = await lobug(config, "memory", "import", str(source), "--json")
    assert code == 0, err
    assert json.loads(out)["stored"] == 0  # every turn was stored before the kill
    rows = [tuple(r) for r in query(db, "SELECT role, text FROM turns ORDER BY id")]
    assert rows == [(x["role"], x["text"]) for x in lines]
    assert query(db, "SELECT COUNT(*) FROM jobs WHERE state = 'running'")[0][0] == 0
    assert query(db, "SELECT COUNT(*) FROM jobs WHERE state = 'pending'")[0][0] == 0


def _running_extracts(db: Path) -> int:
    try:
        rows: list[Any] = query(
            db, "SELECT COUNT(*) FROM jobs WHERE state = 'running' AND kind = ?", enqueue.EXTRACT
        )
    except Exception:  # noqa: BLE001 - the database is still being created
        return 0
    return int(rows[0][0])
