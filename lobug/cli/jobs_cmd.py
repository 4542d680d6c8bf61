"""`lobug jobs list|retry|purge`: look at and steer the durable job queue."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from lobug.config import Config
from lobug.parts import open_database
from lobug.workers import queue


def register(sub: Any) -> None:
    jobs = sub.add_parser("jobs", help="the background job queue")
    actions = jobs.add_subparsers(dest="jobs_command", required=True, metavar="ACTION")
    ls = actions.add_parser("list", help="list jobs, newest first")
    ls.add_argument("--state", choices=queue.JOB_STATES)
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(func=_list)
    retry = actions.add_parser("retry", help="give failed jobs a fresh set of attempts")
    retry.add_argument("ids", nargs="*", type=int, help="job ids (default: every failed job)")
    retry.set_defaults(func=_retry)
    purge = actions.add_parser("purge", help="delete finished jobs")
    purge.add_argument("--state", action="append", choices=["done", "failed"], dest="states")
    purge.add_argument("--older-than-days", type=float, default=0.0)
    purge.set_defaults(func=_purge)


def _list(args: argparse.Namespace, config: Config) -> int:
    db = open_database(config)
    try:
        jobs = queue.list_jobs(db.writer, state=args.state, limit=args.limit)
        counts = queue.counts(db.writer)
    finally:
        db.close_sync()
    max_attempts = config.workers.max_attempts  # what the worker gives each job
    if args.json:
        rows = [{**j.to_dict(), "max_attempts": max_attempts} for j in jobs]
        print(json.dumps({"counts": counts, "jobs": rows}, indent=2))
        return 0
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    for job in jobs:
        error = f"  error: {job.last_error}" if job.last_error else ""
        print(
            f"#{job.id:<6} {job.kind:<14} {job.state:<8} "
            f"attempts={job.attempts}/{max_attempts}{error}"
        )
    return 0


def _retry(args: argparse.Namespace, config: Config) -> int:
    db = open_database(config)
    try:
        n = db.write_sync(lambda c: queue.retry(c, now=time.time(), job_ids=args.ids or None))
    finally:
        db.close_sync()
    print(f"re-queued {n} failed job(s)")
    return 0


def _purge(args: argparse.Namespace, config: Config) -> int:
    cutoff = time.time() - args.older_than_days * 86400
    states = args.states or ["done"]
    db = open_database(config)
    try:
        n = db.write_sync(lambda c: queue.purge(c, states=states, older_than=cutoff))
    finally:
        db.close_sync()
    print(f"deleted {n} job(s) in state {', '.join(states)}")
    return 0
