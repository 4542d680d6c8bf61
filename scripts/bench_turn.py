#!/usr/bin/env python3
"""Benchmark the daemon's own per-turn overhead and event-loop stalls.

Starts the fake Ollama (instant answers) and the real daemon (fake slow transcriber) as
subprocesses on 127.0.0.1, then:
  1. N concurrent clients post /chat/text for a fixed number of turns: throughput and
     p50/p95/p99 latency (with an instant LLM this is the daemon's overhead plus one local
     HTTP round trip to the LLM);
  2. a long /chat/audio transcription runs in the daemon's thread pool while text turns
     continue: the daemon's worst event-loop stall, read from its own lag monitor (/health).

Usage: .venv/bin/python scripts/bench_turn.py [--clients 16] [--turns 3000] [--stt-delay 3]
Targets on a 2-core machine: >= 300 turns/s, p99 < 50 ms, no loop stall > 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from audio_fixtures import tone_wav  # noqa: E402
from daemon_proc import Daemon, free_port, wait_http  # noqa: E402


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


async def text_load(url: str, clients: int, turns: int) -> tuple[list[float], float, int]:
    latencies: list[float] = []
    errors = 0
    counter = iter(range(turns))
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client(index: int) -> None:
            nonlocal errors
            for i in counter:
                payload = {"text": f"turn {i}: the kettle is on", "device_id": f"dev-{index}"}
                started = time.perf_counter()
                async with session.post(url + "/chat/text", json=payload) as resp:
                    await resp.read()
                    if resp.status != 200:
                        errors += 1
                latencies.append((time.perf_counter() - started) * 1000)

        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        elapsed = time.perf_counter() - started
    return latencies, elapsed, errors


async def stall_during_audio(daemon: Daemon, wav: bytes, stt_delay: float) -> dict[str, float]:
    async with aiohttp.ClientSession() as session:
        async with session.get(daemon.url + "/health") as resp:
            await resp.read()  # resets the daemon's recent-lag window
        audio = asyncio.create_task(
            session.post(
                daemon.url + "/chat/audio", data=wav, headers={"Content-Type": "audio/wav"}
            )
        )
        # Keep light text traffic going while the transcription runs.
        await text_load(daemon.url, 2, int(stt_delay * 50))
        resp = await audio
        status = resp.status
        resp.release()
        async with session.get(daemon.url + "/health") as resp:
            health = await resp.json()
    loop = health.get("loop", {})
    return {"audio_status": status, "stall_ms": loop.get("lag_recent_max_ms", -1.0)}


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="1,4,16", help="comma-separated concurrency levels")
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--stt-delay", type=float, default=3.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--no-memory", action="store_true", help="long-term memory off (the core turn alone)"
    )
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="lobug-bench-"))
    port = free_port()
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_ollama.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    daemon = Daemon(
        workdir / "data",
        ollama_url=f"http://127.0.0.1:{port}",
        stt_delay=args.stt_delay,
        env={
            "LOBUG_LOG_LEVEL": "WARNING",
            "LOBUG_OLLAMA_TIMEOUT_S": "30",
            "LOBUG_MEMORY_ENABLED": "false" if args.no_memory else "true",
        },
    )
    try:
        await wait_http(f"http://127.0.0.1:{port}/api/version")
        await daemon.start()
        await text_load(daemon.url, 4, 200)  # warm-up
        runs = []
        for clients in [int(c) for c in args.clients.split(",")]:
            latencies, elapsed, errors = await text_load(daemon.url, clients, args.turns)
            runs.append(
                {
                    "clients": clients,
                    "turns": len(latencies),
                    "errors": errors,
                    "throughput_turns_s": round(len(latencies) / elapsed, 1),
                    "p50_ms": round(statistics.median(latencies), 2),
                    "p95_ms": round(percentile(latencies, 95), 2),
                    "p99_ms": round(percentile(latencies, 99), 2),
                }
            )
        wav = tone_wav(workdir / "tone.wav", 2.0).read_bytes()
        stall = await stall_during_audio(daemon, wav, args.stt_delay)
    finally:
        daemon.stop_quietly()
        fake.kill()
    result = {
        "runs": runs,
        "cpus": os.cpu_count(),
        "audio_status": stall["audio_status"],
        "loop_stall_during_audio_ms": stall["stall_ms"],
    }
    if args.json:
        print(json.dumps(result))
        return
    print("text turns (instant fake LLM; targets: >= 300 turns/s, p99 < 50 ms)")
    print("| clients | turns | errors | turns/s | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|")
    for run in runs:
        print(
            f"| {run['clients']} | {run['turns']} | {run['errors']} | "
            f"{run['throughput_turns_s']} | {run['p50_ms']} | {run['p95_ms']} | {run['p99_ms']} |"
        )
    print(
        f"audio: {args.stt_delay:.1f} s transcription answered {result['audio_status']}; "
        f"worst loop stall meanwhile {result['loop_stall_during_audio_ms']} ms (target < 20)"
    )


if __name__ == "__main__":
    asyncio.run(main())
