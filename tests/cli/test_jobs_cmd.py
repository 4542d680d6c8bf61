"""`lobug jobs list` shows each job's attempts of the worker's `workers.max_attempts`."""

from __future__ import annotations

import time
from pathlib import Path

from cli_kit import config_file, lobug, lobug_json
from dbutil import connect


async def test_jobs_list_shows_attempts_of_the_configured_max(tmp_path: Path) -> None:
    config = config_file(tmp_path, "http://127.0.0.1:9", workers="max_attempts = 9")
    assert (await lobug_json(config, "jobs", "list"))["jobs"] == []  # creates the database
    with connect(tmp_path / "data" / "lobug.db") as conn:
        now = time.time()
        conn.execute(
            "INSERT INTO jobs (kind, payload, state, attempts, run_after, created_at, updated_at)"
            " VALUES ('extract', '{}', 'failed', 2, ?, ?, ?)",
            (now, now, now),
        )
    listed = await lobug_json(config, "jobs", "list")
    assert [(j["kind"], j["attempts"], j["max_attempts"]) for j in listed["jobs"]] == [
        ("extract", 2, 9)
    ]
    code, out, err = await lobug(config, "jobs", "list")
    assert code == 0 and "attempts=2/9" in out, (out, err)
