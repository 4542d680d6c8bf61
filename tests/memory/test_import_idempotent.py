"""`lobug memory import` run in-process: a re-run stores nothing twice, an import that crashed
between two batches is finished by the next run, and jobs a killed import left `running` are
made ready again (issue 16, item 9)."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dbutil import query

from lobug.cli.memory.importing import run_import
from lobug.config import Config
from lobug.memory.transfer import import_turns as importer
from lobug.storage.sqlite import connect


class Crash(Exception):
    """Stands for the process dying in the middle of a batch's transaction."""


def lines_file(path: Path, count: int) -> tuple[Path, Counter[tuple[Any, ...]]]:
    """`count` lines without a ref: with and without ts, some identical on purpose."""
    lines: list[dict[str, Any]] = []
    for i in range(count):
        session = f"s{i % 3}"
        if i % 5 == 0:
            lines.append({"session_id": session, "role": "user", "text": "ok"})  # no ts, repeats
        elif i % 7 == 0:
            lines.append({"session_id": "s0", "role": "assistant", "text": "same", "ts": 1.0e9})
        else:
            role = "user" if i % 2 else "assistant"
            lines.append({"session_id": session, "role": role, "text": f"turn {i}", "ts": 1e9 + i})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    expected = Counter((x["session_id"], x["role"], x.get("ts"), x["text"]) for x in lines)
    return path, expected


def stored(db: Path) -> Counter[tuple[Any, ...]]:
    """The turns as the file wrote them (a turn imported without ts got the import's time)."""
    rows = query(db, "SELECT session_id, role, ts, text FROM turns")
    return Counter((s, r, None if t == "ok" else ts, t) for s, r, ts, t in rows)


def args(path: Path) -> argparse.Namespace:
    return argparse.Namespace(file=path, user="default", json=True)


@pytest.fixture
def config(make_config: Callable[..., Config]) -> Config:
    return make_config(**{"log.level": "WARNING"})


async def test_importing_twice_stores_every_line_once(
    config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, expected = lines_file(tmp_path / "turns.jsonl", 60)
    db = config.storage.data_dir / "lobug.db"
    assert await run_import(args(path), config) == 0
    first = json.loads(capsys.readouterr().out)
    assert (first["stored"], first["skipped"]) == (60, 0)
    summaries = query(db, "SELECT COUNT(*) FROM memories WHERE kind = 'summary'")[0][0]
    assert await run_import(args(path), config) == 0
    second = json.loads(capsys.readouterr().out)
    assert (second["stored"], second["skipped"], second["extract_jobs"]) == (0, 60, 0)
    assert stored(db) == expected
    assert query(db, "SELECT COUNT(*) FROM memories WHERE kind = 'summary'")[0][0] == summaries
    assert query(db, "SELECT COUNT(*) FROM jobs WHERE state = 'running'")[0][0] == 0


async def test_an_import_that_crashed_between_batches_is_finished_by_a_rerun(
    config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "BATCH", 20)
    path, expected = lines_file(tmp_path / "turns.jsonl", 95)
    db = config.storage.data_dir / "lobug.db"
    real = importer.store_batch
    calls = 0

    def crashing(conn: Any, batch: list[importer.ImportLine], **kw: Any) -> None:
        nonlocal calls
        calls += 1
        real(conn, batch, **kw)
        if calls == 2:
            raise Crash("killed in the second batch's transaction")

    monkeypatch.setattr(importer, "store_batch", crashing)
    with pytest.raises(Crash):
        await run_import(args(path), config)
    first_batch = query(db, "SELECT COUNT(*) FROM turns")[0][0]
    assert 20 <= first_batch < 40  # the first batch committed, the second rolled back
    assert query(db, "SELECT COUNT(*) FROM jobs WHERE kind = 'embed_turn'")[0][0] == first_batch

    monkeypatch.setattr(importer, "store_batch", real)
    assert await run_import(args(path), config) == 0
    assert stored(db) == expected  # every line exactly once
    embedded = query(db, "SELECT COUNT(*) FROM turn_vectors")[0][0]
    assert embedded == sum(expected.values())
    assert await run_import(args(path), config) == 0
    assert stored(db) == expected


async def test_a_job_left_running_by_a_killed_import_is_recovered_by_the_next(
    config: Config, tmp_path: Path
) -> None:
    path, expected = lines_file(tmp_path / "turns.jsonl", 10)
    db = config.storage.data_dir / "lobug.db"
    assert await run_import(args(path), config) == 0
    # What `kill -9` during the jobs leaves: a claimed job that never finished.
    conn = connect(db)
    try:
        conn.execute(
            "INSERT INTO jobs (kind, payload, state, attempts, run_after, created_at, updated_at)"
            " VALUES ('embed_turn', ?, 'running', 1, 0, 0, 0)",
            (json.dumps({"turn_id": 1}),),
        )
        conn.commit()
    finally:
        conn.close()
    assert await run_import(args(path), config) == 0
    assert query(db, "SELECT COUNT(*) FROM jobs WHERE state = 'running'")[0][0] == 0
    assert stored(db) == expected
