#!/usr/bin/env python3
"""Benchmark the daemon's own per-turn cost against a minimal gateway, and its loop stalls.

Starts the fake Ollama (instant answers) and, one after the other, three servers on 127.0.0.1,
each a subprocess driven by the same clients:
  - `gateway`: the anchor, a minimal aiohttp gateway (parse the JSON, one /api/chat call to the
    same fake Ollama, answer): what any HTTP front of an LLM costs on this machine;
  - `no-memory`: the daemon with long-term memory off (the core turn: working memory, the
    turn committed before the LLM call, the reply committed after);
  - `memory`: the daemon as shipped (memory on: inline retrieval, the delta header, and the
    embedding / extraction / cascade jobs running in the same process).
For each, N concurrent clients post /chat/text: throughput and p50/p95/p99 latency (with an
instant LLM this is the server's overhead plus one local HTTP round trip to the LLM). For the
daemons also: idle memory after start (VmRSS, and RssAnon apart from the file-backed pages:
the SQLite mmap is page cache), and the worst event-loop stall read from the daemon's own lag
monitor (/health) while a 3 s transcription runs in its thread pool and text turns continue.

Usage: .venv/bin/python scripts/bench_turn.py [--clients 1,20] [--turns 2000] [--only memory]
Goals on the 2-core machine (issue 13): memory on, 20 clients: >= 0.25x the gateway's
throughput, p99 <= 60 ms, 0 errors; 1 client: memory adds <= 5 ms p50 over no-memory; worst
loop stall < 20 ms; idle RSS <= 80 MB.
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
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from audio_fixtures import tone_wav  # noqa: E402
from daemon_proc import Daemon, free_port, wait_http  # noqa: E402

SERVERS = ("gateway", "no-memory", "memory")


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


def gateway_app(ollama: str) -> web.Application:
    """The anchor: what a front of the LLM must do at least, and nothing more."""

    async def session_ctx(app: web.Application) -> Any:
        app["client"] = aiohttp.ClientSession()
        yield
        await app["client"].close()

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        messages = [{"role": "user", "content": str(body["text"])}]
        call = {"model": "llama3.2", "messages": messages, "stream": False, "format": "json"}
        async with request.app["client"].post(ollama + "/api/chat", json=call) as resp:
            reply = await resp.json()
        return web.json_response({"response": reply["message"]["content"], "action": "RESPOND"})

    app = web.Application()
    app.cleanup_ctx.append(session_ctx)
    app.router.add_post("/chat/text", chat)
    return app


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_of(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon and RssFile of a process, in MiB (Linux /proc)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            found[key] = round(int(value.split()[0]) / 1024, 1)
    return found


async def run_load(
    url: str, levels: list[int], turns: int, pid: int | None = None
) -> list[dict[str, Any]]:
    """Each concurrency level in turn; with the server's `pid`, the CPU it spent per turn
    (including the background jobs the turns caused that ran meanwhile)."""
    await text_load(url, 4, 200)  # warm-up
    runs = []
    for clients in levels:
        cpu = cpu_seconds(pid) if pid else 0.0
        latencies, elapsed, errors = await text_load(url, clients, turns)
        spent = cpu_seconds(pid) - cpu if pid else None
        runs.append(
            {
                "clients": clients,
                "cpu_ms_per_turn": None if spent is None else round(spent * 1000 / turns, 2),
                "turns": len(latencies),
                "errors": errors,
                "throughput_turns_s": round(len(latencies) / elapsed, 1),
                "p50_ms": round(statistics.median(latencies), 2),
                "p95_ms": round(percentile(latencies, 95), 2),
                "p99_ms": round(percentile(latencies, 99), 2),
            }
        )
    return runs


async def bench_gateway(ollama: str, levels: list[int], turns: int) -> dict[str, Any]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-gateway", str(port), "--ollama", ollama],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        await wait_http(url + "/nothing", timeout=30)  # any answer (404) means it is up
        return {"runs": await run_load(url, levels, turns, proc.pid)}
    finally:
        proc.kill()
        proc.wait()


async def bench_daemon(
    ollama: str, levels: list[int], turns: int, *, memory: bool, stt_delay: float
) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="lobug-bench-"))
    daemon = Daemon(
        workdir / "data",
        ollama_url=ollama,
        stt_delay=stt_delay,
        env={
            "LOBUG_LOG_LEVEL": "WARNING",
            "LOBUG_OLLAMA_TIMEOUT_S": "30",
            "LOBUG_MEMORY_ENABLED": "true" if memory else "false",
            "PYTHONPATH": str(ROOT),  # this checkout's lobug, whatever the venv has installed
        },
    )
    try:
        await daemon.start()
        await asyncio.sleep(2.0)  # settled: start-up jobs done
        assert daemon.proc is not None
        idle = memory_of(daemon.proc.pid)
        runs = await run_load(daemon.url, levels, turns, daemon.proc.pid)
        wav = tone_wav(workdir / "tone.wav", 2.0).read_bytes()
        stall = await stall_during_audio(daemon, wav, stt_delay)
    finally:
        daemon.stop_quietly()
    return {"runs": runs, "idle_memory_mib": idle, **stall}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    levels = [int(c) for c in args.clients.split(",")]
    port = free_port()
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_ollama.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ollama = f"http://127.0.0.1:{port}"
    results: dict[str, Any] = {"cpus": os.cpu_count()}
    try:
        await wait_http(ollama + "/api/version")
        for name in args.only.split(",") if args.only else SERVERS:
            if name == "gateway":
                results[name] = await bench_gateway(ollama, levels, args.turns)
            else:
                results[name] = await bench_daemon(
                    ollama,
                    levels,
                    args.turns,
                    memory=name == "memory",
                    stt_delay=args.stt_delay,
                )
    finally:
        fake.kill()
    results["loadavg"] = round(os.getloadavg()[0], 2)
    return results


def report(results: dict[str, Any]) -> None:
    print(f"text turns, instant fake LLM (load average at the end: {results['loadavg']})")
    print(
        "| server | clients | turns | errors | turns/s | p50 ms | p95 ms | p99 ms | CPU ms/turn |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in SERVERS:
        for run in results.get(name, {}).get("runs", []):
            print(
                f"| {name} | {run['clients']} | {run['turns']} | {run['errors']} | "
                f"{run['throughput_turns_s']} | {run['p50_ms']} | {run['p95_ms']} | "
                f"{run['p99_ms']} | {run['cpu_ms_per_turn']} |"
            )
    for name in ("no-memory", "memory"):
        if name in results:
            found = results[name]
            print(
                f"{name}: idle {found['idle_memory_mib']} MiB; worst loop stall during a 3 s "
                f"transcription {found['stall_ms']} ms (audio answered {found['audio_status']})"
            )
    if "gateway" in results and "memory" in results:
        gate = {r["clients"]: r for r in results["gateway"]["runs"]}
        for run in results["memory"]["runs"]:
            anchor = gate.get(run["clients"])
            if anchor:
                ratio = run["throughput_turns_s"] / anchor["throughput_turns_s"]
                print(f"memory / gateway throughput at {run['clients']} clients: {ratio:.2f}x")
    if "no-memory" in results and "memory" in results:
        core = {r["clients"]: r for r in results["no-memory"]["runs"]}
        for run in results["memory"]["runs"]:
            if run["clients"] in core:
                added = run["p50_ms"] - core[run["clients"]]["p50_ms"]
                print(f"memory adds {added:.2f} ms p50 at {run['clients']} client(s)")


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="1,20", help="comma-separated concurrency levels")
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--stt-delay", type=float, default=3.0)
    parser.add_argument("--only", default="", help=f"some of {','.join(SERVERS)}")
    parser.add_argument("--no-memory", action="store_true", help="the same as --only no-memory")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve-gateway", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ollama", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.no_memory:
        args.only = "no-memory"
    return args


if __name__ == "__main__":
    options = parse()
    if options.serve_gateway:
        web.run_app(
            gateway_app(options.ollama),
            host="127.0.0.1",
            port=options.serve_gateway,
            access_log=None,
            print=None,
        )
    else:
        found = asyncio.run(main(options))
        print(json.dumps(found)) if options.json else report(found)
