#!/usr/bin/env python3
"""Soak: does a turn get slower as the history grows? (issue 16, item 13)

Starts the fake Ollama (`tests/fake_ollama.py`) and the real daemon (`tests/run_daemon.py`,
fake STT) as subprocesses on a fresh data dir, then posts `--batches` batches of `--turns`
text turns back to back over HTTP (one device, sessions of `--session-turns` turns each, a
fact-bearing sentence every few turns so memory grows too). After each batch it prints the
batch's wall time, the median and p95 turn latency, the daemon's VmRSS and the row counts, and
finally the growth from the first batch to the last. A flat line is the goal: nothing on the
hot path should scale with the size of the history.

    .venv/bin/python scripts/soak_history.py                       # 3 × 2,000 turns
    .venv/bin/python scripts/soak_history.py --batches 3 --turns 5000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from daemon_proc import Daemon, free_port, wait_http  # noqa: E402
from dbutil import scalar  # noqa: E402

FACTS = (
    "My sister {n} lives in Denver.",
    "I started a pottery class on day {n}.",
    "We bought a blue kayak called Wave {n}.",
    "My favourite tea this week is number {n}.",
)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def batch(
    session: aiohttp.ClientSession, url: str, start: int, turns: int, session_turns: int
) -> list[float]:
    times = []
    for i in range(start, start + turns):
        text = FACTS[i % len(FACTS)].format(n=i) if i % 3 == 0 else f"Just chatting, turn {i}."
        body = {"text": text, "device_id": "soak", "session_id": f"s{i // session_turns}"}
        t0 = time.perf_counter()
        async with session.post(url + "/chat/text", json=body) as resp:
            await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"turn {i}: {resp.status}")
        times.append((time.perf_counter() - t0) * 1000)
    return times


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--session-turns", type=int, default=40)
    parser.add_argument("--embedder", default="hashing", choices=["hashing", "ollama"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lobug-soak-"))
    port = free_port()
    ollama = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_ollama.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    daemon = Daemon(
        work / "data",
        ollama_url=f"http://127.0.0.1:{port}",
        env={"LOBUG_LOG_LEVEL": "WARNING", "LOBUG_EMBEDDER": args.embedder},
    )
    rows = []
    try:
        await wait_http(f"http://127.0.0.1:{port}/api/version")
        await daemon.start()
        assert daemon.proc is not None
        db = work / "data" / "lobug.db"
        async with aiohttp.ClientSession() as session:
            for b in range(args.batches):
                t0 = time.monotonic()
                times = await batch(
                    session, daemon.url, b * args.turns, args.turns, args.session_turns
                )
                row = {
                    "batch": b + 1,
                    "wall_s": round(time.monotonic() - t0, 1),
                    "p50_ms": round(statistics.median(times), 1),
                    "p95_ms": round(sorted(times)[int(len(times) * 0.95) - 1], 1),
                    "rss_mib": round(rss_mib(daemon.proc.pid), 1),
                    "turns": scalar(db, "SELECT COUNT(*) FROM turns"),
                    "memories": scalar(db, "SELECT COUNT(*) FROM memories"),
                    "pending_jobs": scalar(db, "SELECT COUNT(*) FROM jobs WHERE state = 'pending'"),
                }
                rows.append(row)
                print(
                    json.dumps(row) if args.json else "  ".join(f"{k}={v}" for k, v in row.items())
                )
    finally:
        daemon.stop_quietly()
        ollama.kill()
    first, last = rows[0], rows[-1]
    wall = last["wall_s"] / first["wall_s"]
    p50 = last["p50_ms"] / first["p50_ms"]
    rss = last["rss_mib"] - first["rss_mib"]
    print(f"growth to batch {last['batch']}: wall ×{wall:.2f}, p50 ×{p50:.2f}, RSS +{rss:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
