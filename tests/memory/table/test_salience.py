"""Seed 000's score of a memory: its terms, its age, read from a real row."""

from __future__ import annotations

import math

import pytest

from lobug.memory.table.salience import DAY, SALIENCE, age_days
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect

NOW = 1_750_000_000.0
S = SALIENCE


def test_defaults_are_the_seed_values() -> None:
    assert (S.w_freq, S.w_recency, S.w_importance, S.decay_lambda, S.hits_cap) == (
        1.0,
        1.0,
        2.0,
        0.05,
        20,
    )


def test_memory_score_terms() -> None:
    row = {"hits": 3, "importance": 0.5, "created_at": NOW - 10 * DAY}
    b = SALIENCE.score(row, NOW)
    assert b.freq == pytest.approx(math.log(4))
    assert b.recency == pytest.approx(math.exp(-0.5))
    assert b.importance == pytest.approx(1.0)
    assert b.total == pytest.approx(math.log(4) + math.exp(-0.5) + 1.0)
    assert b.age_days == pytest.approx(10.0)
    assert b.as_dict()["hits"] == 3


def test_age_uses_last_access_then_creation_then_ts() -> None:
    assert age_days({"last_accessed": NOW - DAY, "created_at": NOW - 9 * DAY}, NOW) == 1.0
    assert age_days({"last_accessed": None, "created_at": NOW - 2 * DAY}, NOW) == 2.0
    assert age_days({"ts": NOW - 3 * DAY}, NOW) == 3.0
    assert age_days({"created_at": NOW + DAY}, NOW) == 0.0  # clock skew never gives a bonus


def test_memory_score_reads_sqlite_rows(tmp_path: object) -> None:
    conn = connect(f"{tmp_path}/s.db")
    migrate(conn)
    conn.execute(
        "INSERT INTO memories (content, hits, importance, created_at, updated_at)"
        " VALUES ('x', 0, 1.0, ?, ?)",
        (NOW, NOW),
    )
    row = conn.execute("SELECT * FROM memories").fetchone()
    b = SALIENCE.score(row, NOW)
    assert b.total == pytest.approx(0 + 1.0 + 2.0)
    conn.close()
