"""The durable job queue: rows in `jobs`, enqueued in the same transaction as their data."""

from __future__ import annotations

import dataclasses
import json
import sqlite3 as _stdlib_sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lobug.storage.sqlite import IntegrityError, placeholders

JOB_STATES = ("pending", "running", "done", "failed")
# A job the process died while running (a power cut, the watchdog's kill of a frozen loop) this
# many times is retired as failed at the next start: once or twice is chance, a third time is
# the job killing the process, which would otherwise do it again after every restart (issue 38).
# A clean stop puts a running job back without counting (JobRunner.stop).
MAX_INTERRUPTIONS = 3


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    payload: dict[str, Any]
    state: str
    attempts: int
    interrupted: int
    run_after: float
    last_error: str | None
    created_at: float
    updated_at: float

    @classmethod
    def from_row(cls, row: Any) -> Job:
        values = {f.name: row[f.name] for f in dataclasses.fields(cls)}
        return cls(**{**values, "payload": json.loads(values["payload"])})

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def enqueue(
    conn: Any,
    kind: str,
    payload: dict[str, Any],
    *,
    now: float,
    run_after: float | None = None,
    dedupe_key: str | None = None,
) -> int:
    """Add a job; with a dedupe_key, an equal pending/running job is reused instead."""
    if dedupe_key is not None:
        row = conn.execute(
            "SELECT id FROM jobs WHERE dedupe_key = ? AND state IN ('pending', 'running')",
            (dedupe_key,),
        ).fetchone()
        if row is not None:
            return int(row[0])
    try:
        cur = conn.execute(
            "INSERT INTO jobs (kind, payload, state, attempts, run_after, dedupe_key, created_at,"
            " updated_at) VALUES (?, ?, 'pending', 0, ?, ?, ?, ?)",
            (kind, json.dumps(payload), run_after or now, dedupe_key, now, now),
        )
    except (IntegrityError, _stdlib_sqlite3.IntegrityError):  # raced by another process's enqueue
        # Only a live job holds the key (the unique index is partial): a finished one with the
        # same key is history, and returning it would make the caller wait on work never done.
        row = conn.execute(
            "SELECT id FROM jobs WHERE dedupe_key = ? AND state IN ('pending', 'running')",
            (dedupe_key,),
        ).fetchone()
        if row is None:
            raise
        return int(row[0])
    return int(cur.lastrowid)


def claim(conn: Any, *, now: float, kinds: Iterable[str] | None = None) -> Job | None:
    """Take the oldest ready job and mark it running (call inside a write transaction)."""
    sql = "SELECT * FROM jobs WHERE state = 'pending' AND run_after <= ?"
    params: list[Any] = [now]
    if kinds is not None:
        kinds = list(kinds)
        sql += f" AND kind IN ({placeholders(kinds)})"
        params += kinds
    row = conn.execute(sql + " ORDER BY run_after, id LIMIT 1", params).fetchone()
    if row is None:
        return None
    conn.execute(
        "UPDATE jobs SET state = 'running', attempts = attempts + 1, updated_at = ? WHERE id = ?",
        (now, row["id"]),
    )
    return Job.from_row(conn.execute("SELECT * FROM jobs WHERE id = ?", (row["id"],)).fetchone())


def complete(conn: Any, job_id: int, *, now: float) -> None:
    conn.execute(
        "UPDATE jobs SET state = 'done', last_error = NULL, updated_at = ? WHERE id = ?",
        (now, job_id),
    )


def fail(
    conn: Any,
    job: Job,
    error: str,
    *,
    now: float,
    retry_in: float | None,
    max_attempts: int,
    permanent: bool = False,
    exhaustible: bool = True,
) -> str:
    """Record a failure: back to pending after `retry_in`, or `failed` when out of attempts.

    `max_attempts` is the worker's `workers.max_attempts`, read now (the `jobs.max_attempts`
    column of m001 is no longer written or read). `exhaustible=False` (a dependency outage)
    keeps the job pending however often it failed.
    """
    out_of_attempts = exhaustible and job.attempts >= max_attempts
    if permanent or retry_in is None or out_of_attempts:
        conn.execute(
            "UPDATE jobs SET state = 'failed', last_error = ?, updated_at = ? WHERE id = ?",
            (error[:2000], now, job.id),
        )
        return "failed"
    conn.execute(
        "UPDATE jobs SET state = 'pending', last_error = ?, run_after = ?, updated_at = ?"
        " WHERE id = ?",
        (error[:2000], now + retry_in, now, job.id),
    )
    return "pending"


def defer(conn: Any, job: Job, reason: str, *, now: float, retry_in: float) -> None:
    """Put a job back without spending an attempt (a dependency is not ready yet)."""
    conn.execute(
        "UPDATE jobs SET state = 'pending', attempts = attempts - 1, last_error = ?, run_after = ?,"
        " updated_at = ? WHERE id = ?",
        (reason[:2000], now + retry_in, now, job.id),
    )


def recover(conn: Any, *, now: float) -> tuple[int, int]:
    """Jobs left `running` by a process that died: each counts the interruption (the attempt it
    was on stays spent); one interrupted MAX_INTERRUPTIONS times is failed, the others are made
    ready again (handlers are idempotent). Returns (re-queued, retired)."""
    conn.execute("UPDATE jobs SET interrupted = interrupted + 1 WHERE state = 'running'")
    retired = conn.execute(
        "UPDATE jobs SET state = 'failed', last_error = 'the process died while this job ran, '"
        " || interrupted || ' times: retired (lobug jobs retry runs it again)', updated_at = ?"
        " WHERE state = 'running' AND interrupted >= ?",
        (now, MAX_INTERRUPTIONS),
    ).rowcount
    requeued = conn.execute(
        "UPDATE jobs SET state = 'pending', run_after = ?, updated_at = ? WHERE state = 'running'",
        (now, now),
    ).rowcount
    return int(requeued), int(retired)


def counts(conn: Any) -> dict[str, int]:
    """Counts of the live states (done jobs pile up until purged; counting them is not needed)."""
    return {
        state: conn.execute("SELECT COUNT(*) FROM jobs WHERE state = ?", (state,)).fetchone()[0]
        for state in ("pending", "running", "failed")
    }


def counts_by_kind(conn: Any, kinds: Sequence[str]) -> dict[str, dict[str, int]]:
    """Live jobs of these kinds: state -> kind -> count (done jobs left out)."""
    marks = placeholders(kinds)
    rows = conn.execute(
        f"SELECT kind, state, COUNT(*) FROM jobs WHERE kind IN ({marks})"
        " AND state != 'done' GROUP BY kind, state",
        tuple(kinds),
    ).fetchall()
    result: dict[str, dict[str, int]] = {}
    for kind, state, n in rows:
        result.setdefault(state, {})[kind] = int(n)
    return result


def pending_count(conn: Any, kinds: Sequence[str]) -> int:
    marks = placeholders(kinds)
    sql = f"SELECT COUNT(*) FROM jobs WHERE state = 'pending' AND kind IN ({marks})"
    return int(conn.execute(sql, tuple(kinds)).fetchone()[0])


def next_run_after(conn: Any, kinds: Sequence[str]) -> float | None:
    """When the earliest pending job of these kinds may run; None when there is none."""
    marks = placeholders(kinds)
    row = conn.execute(
        f"SELECT MIN(run_after) FROM jobs WHERE state = 'pending' AND kind IN ({marks})",
        tuple(kinds),
    ).fetchone()
    return None if row[0] is None else float(row[0])


def list_jobs(conn: Any, *, state: str | None = None, limit: int = 50) -> list[Job]:
    sql, params = "SELECT * FROM jobs", []
    if state:
        sql += " WHERE state = ?"
        params.append(state)
    rows = conn.execute(sql + " ORDER BY id DESC LIMIT ?", [*params, limit]).fetchall()
    return [Job.from_row(r) for r in rows]


def retry(conn: Any, *, now: float, job_ids: Iterable[int] | None = None) -> int:
    """Give failed jobs (all, or the given ones) a fresh set of attempts."""
    sql = (
        "UPDATE jobs SET state = 'pending', attempts = 0, interrupted = 0, run_after = ?,"
        " updated_at = ? WHERE state = 'failed'"
    )
    params: list[Any] = [now, now]
    if job_ids is not None:
        ids = list(job_ids)
        sql += f" AND id IN ({placeholders(ids)})"
        params += ids
    return int(conn.execute(sql, params).rowcount)


def purge(conn: Any, *, states: Iterable[str] = ("done",), older_than: float | None = None) -> int:
    states = list(states)
    sql = f"DELETE FROM jobs WHERE state IN ({placeholders(states)})"
    params: list[Any] = list(states)
    if older_than is not None:
        sql += " AND updated_at < ?"
        params.append(older_than)
    return int(conn.execute(sql, params).rowcount)
