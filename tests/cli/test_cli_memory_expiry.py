"""`lobug memory remember --expires` / `update --expires|--no-expires` as a real process on a
real database: a duration or an ISO date, a clear error for anything else or a past time, and
an expired memory hidden from `get`/`list` until `gc` soft-deletes it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli_kit import config_file, lobug, lobug_json
from dbutil import connect, query

PARKED = "The user parked on level three of the station garage."
WEEK = 7 * 86400


def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "lobug.db"


async def test_remember_expires_in_a_duration_or_at_a_date(
    tmp_path: Path, ollama: tuple[Any, str]
) -> None:
    config = config_file(tmp_path, ollama[1])
    before = time.time()
    made = await lobug_json(config, "memory", "remember", PARKED, "--expires", "7d")
    assert before + WEEK <= made["expires_at"] <= time.time() + WEEK
    code, out, _ = await lobug(config, "memory", "get", str(made["id"]))
    assert code == 0 and "expires_at" in out
    dated = await lobug_json(
        config, "memory", "remember", "The user has a dentist visit in March.",
        "--expires", "2999-03-01T09:30",
    )  # fmt: skip
    march = datetime(2999, 3, 1, 9, 30, tzinfo=UTC).timestamp()
    assert dated["expires_at"] == march  # UTC when no offset

    for given in ("soon", "2001-01-01", "-3d"):
        code, out, err = await lobug(
            config, "memory", "remember", "The user owns a canoe.", f"--expires={given}", "--json"
        )
        assert code == 2, (given, out, err)
        assert "expires" in err and '"field": "expires_at"' in out, (given, err)
    assert query(db(tmp_path), "SELECT COUNT(*) FROM memories")[0][0] == 2  # nothing stored

    kept = await lobug_json(config, "memory", "update", str(made["id"]), "--no-expires")
    assert kept["expires_at"] is None
    moved = await lobug_json(config, "memory", "update", str(made["id"]), "--expires", "2h")
    assert time.time() + 7100 < moved["expires_at"] <= time.time() + 7200
    code, _, err = await lobug(
        config, "memory", "update", str(made["id"]), "--expires", "1h", "--no-expires"
    )
    assert code == 2 and "not both" in err

    # Its time comes (moved back in the database: the CLI reads the real clock).
    with connect(db(tmp_path)) as conn:
        past = time.time() - 1
        conn.execute("UPDATE memories SET expires_at = ? WHERE id = ?", (past, made["id"]))
    code, _, err = await lobug(config, "memory", "get", str(made["id"]))
    assert code == 1 and "no memory" in err
    listed = await lobug_json(config, "memory", "list")
    assert [m["id"] for m in listed["memories"]] == [dated["id"]]
    gc = await lobug_json(config, "memory", "gc")
    assert gc["expired"] == 1
    assert query(db(tmp_path), "SELECT status FROM memories WHERE id = ?", made["id"])[0][0] == (
        "soft_deleted"
    )
