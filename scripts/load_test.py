#!/usr/bin/env python3
"""Load and soak test: N simulated devices against the real daemon, all on 127.0.0.1.

Starts the fake Ollama (`tests/fake_ollama.py`, instant answers) and the real daemon through
the fake-STT launcher (`tests/run_daemon.py`) as subprocesses with a fresh data dir. Each
device then talks like a device does, with random (Poisson) gaps of `--interval` seconds on
average: text turns, short tone WAVs on /chat/audio and sensor reports, mixed by `--mix`.
After a warm-up that is not measured, it reports throughput, p50/p95/p99 latency per request
type, every error, and the daemon's RSS (VmRSS from /proc) at start, after warm-up and at
the end. Finally every answered turn is looked up in the database.

  .venv/bin/python scripts/load_test.py                      # 50 devices, 60 s
  .venv/bin/python scripts/load_test.py --duration 300       # the 5-minute soak
  .venv/bin/python scripts/load_test.py --interval 0         # back to back: capacity

Exit status 1 when a target is missed: 0 errors, text-turn p99 < 100 ms, RSS growth < 10 %
(from after the warm-up to the end; growth from the idle start is reported too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
import wave
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from daemon_proc import Daemon, free_port, wait_http  # noqa: E402
from dbutil import query  # noqa: E402

KINDS = ("text", "audio", "sensors")
PHRASES = [
    "what's the weather like tomorrow",
    "my sister Anna visits on Saturday",
    "remind me that the plants need water",
    "I really like green tea in the morning",
    "how long should I boil an egg",
    "tell me something about the moon",
    "I'm going to the gym after work",
    "what did I tell you about my sister",
]
ORIENTATIONS = ["face_up", "face_down", "upright", "tilted"]


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: Counter[str] = field(default_factory=Counter)
    answered_turns: list[int] = field(default_factory=list)
    measuring: bool = False

    def record(self, kind: str, ms: float, status: int, body: Any) -> None:
        if status != 200:
            self.errors[f"{kind} HTTP {status}: {str(body)[:120]}"] += 1
            return
        if kind in ("text", "audio") and isinstance(body, dict) and "turn_id" in body:
            self.answered_turns.append(int(body["turn_id"]))
        if self.measuring:
            self.latencies[kind].append(ms)


def tone_wav_bytes(seconds: float = 1.0, rate: int = 16000) -> bytes:
    """A short 440 Hz tone as 16-bit mono WAV, like a device's recorded utterance."""
    import io

    frames = bytearray()
    for n in range(int(seconds * rate)):
        sample = int(0.4 * 32767 * math.sin(2 * math.pi * 440 * n / rate))
        frames += sample.to_bytes(2, "little", signed=True)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(bytes(frames))
    return buffer.getvalue()


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = pct / 100 * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (/proc/<pid>/stat, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS and its parts from /proc/<pid>/status. RssAnon is the heap (where a leak shows);
    RssFile is mostly the database pages SQLite reads through mmap (page cache: shared with the
    kernel's cache and dropped under memory pressure, and growing with the file by design)."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
            values[name] = int(rest.split()[0])
    return values


def vm_rss_kib(pid: int) -> int:
    return memory_kib(pid)["VmRSS"]


async def device(
    index: int, url: str, args: argparse.Namespace, wav: bytes, stats: Stats, stop: float
) -> None:
    rng = random.Random(args.seed * 1000 + index)
    device_id = f"dev-{index:03d}"
    kinds, weights = zip(*args.mix.items(), strict=True)
    # Its own connection, as each device in the field has.
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        if args.interval > 0:  # devices do not all start at the same instant
            await asyncio.sleep(rng.uniform(0, args.interval))
        n = 0
        while time.monotonic() < stop:
            kind = rng.choices(kinds, weights)[0]
            n += 1
            if kind == "text":
                text = f"{rng.choice(PHRASES)} ({device_id} #{n})"
                request = session.post(
                    url + "/chat/text", json={"text": text, "device_id": device_id}
                )
            elif kind == "audio":
                request = session.post(
                    url + f"/chat/audio?device_id={device_id}",
                    data=wav,
                    headers={"Content-Type": "audio/wav"},
                )
            else:
                state = {
                    "device_id": device_id,
                    "orientation": rng.choice(ORIENTATIONS),
                    "battery": rng.randint(5, 100),
                    "charging": rng.random() < 0.3,
                    "accel": [round(rng.uniform(-1, 1), 3) for _ in range(3)],
                }
                request = session.post(url + "/context/sensors", json=state)
            started = time.perf_counter()
            try:
                async with request as resp:
                    body = await resp.json(content_type=None)
                    stats.record(kind, (time.perf_counter() - started) * 1000, resp.status, body)
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                stats.errors[f"{kind} {type(exc).__name__}: {exc}"] += 1
            if args.interval > 0:
                gap = rng.expovariate(1 / args.interval)
                await asyncio.sleep(min(gap, max(0.0, stop - time.monotonic())))


async def run_phase(
    url: str,
    args: argparse.Namespace,
    wav: bytes,
    stats: Stats,
    seconds: float,
    pid: int,
    timeline: list[tuple[float, float, float]] | None = None,
) -> int:
    """Drive all devices for `seconds`; returns the peak RSS (KiB) seen meanwhile."""
    started = time.monotonic()
    stop = started + seconds
    devices = [
        asyncio.create_task(device(i, url, args, wav, stats, stop)) for i in range(args.devices)
    ]
    peak, next_mark = 0, started
    while not all(d.done() for d in devices):
        mem = memory_kib(pid)
        peak = max(peak, mem["VmRSS"])
        if timeline is not None and time.monotonic() >= next_mark:
            timeline.append(
                (
                    round(time.monotonic() - started),
                    round(mem["VmRSS"] / 1024, 1),
                    round(mem["RssAnon"] / 1024, 1),
                )
            )
            next_mark += max(5.0, seconds / 20)
        await asyncio.sleep(0.5)
    await asyncio.gather(*devices)
    return peak


def parse_mix(text: str) -> dict[str, float]:
    mix = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if name.strip() not in KINDS:
            raise argparse.ArgumentTypeError(f"unknown request type {name!r}; use {KINDS}")
        mix[name.strip()] = float(weight or 1)
    return mix


async def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=10.0, help="unmeasured seconds first")
    parser.add_argument(
        "--interval", type=float, default=1.0, help="mean seconds between a device's requests"
    )
    parser.add_argument("--mix", type=parse_mix, default=parse_mix("text=6,audio=1,sensors=3"))
    parser.add_argument("--stt-delay", type=float, default=0.0, help="fake transcription time")
    parser.add_argument("--llm-delay", type=float, default=0.0, help="fake Ollama delay")
    parser.add_argument("--embedder", default="ollama", choices=["ollama", "hashing"])
    parser.add_argument("--log-level", default="INFO", help="the daemon's (INFO = production)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the data dir and logs")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="lobug-load-"))
    ollama_port = free_port()
    fake = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "fake_ollama.py"),
            "--host",
            "127.0.0.1",
            "--port",
            str(ollama_port),
            "--delay",
            str(args.llm_delay),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Production settings, except the transcriber (fake) and Ollama (the fake, instant).
    env = {
        "LOBUG_LOG_LEVEL": args.log_level,
        "LOBUG_EMBEDDER": args.embedder,
        "LOBUG_EMBEDDING_DIM": "768",
        "LOBUG_OLLAMA_TIMEOUT_S": "30",
        "LOBUG_MEMORY_QUIET_S": "0",  # an instant fake LLM: no pause to wait for
        "LOBUG_WORKERS_BACKOFF_BASE_S": "2.0",
    }
    daemon = Daemon(
        workdir / "data",
        ollama_url=f"http://127.0.0.1:{ollama_port}",
        stt_delay=args.stt_delay,
        env=env,
    )
    wav = tone_wav_bytes(1.0)
    stats = Stats()
    try:
        await wait_http(f"http://127.0.0.1:{ollama_port}/api/version")
        await daemon.start()
        assert daemon.proc is not None
        pid = daemon.proc.pid
        mem_start = memory_kib(pid)
        rss_start = mem_start["VmRSS"]
        print(
            f"daemon pid {pid} ready, RSS {rss_start / 1024:.1f} MiB; {args.devices} devices, "
            f"warm-up {args.warmup:g} s, measured {args.duration:g} s",
            file=sys.stderr,
        )
        if args.warmup > 0:
            await run_phase(daemon.url, args, wav, stats, args.warmup, pid)
        mem_warm = memory_kib(pid)
        rss_warm = mem_warm["VmRSS"]
        cpu_before = cpu_seconds(pid)
        stats.measuring = True
        timeline: list[tuple[float, float, float]] = []
        rss_peak = await run_phase(daemon.url, args, wav, stats, args.duration, pid, timeline)
        stats.measuring = False
        cpu_used = cpu_seconds(pid) - cpu_before
        elapsed = args.duration  # the window requests were started in
        await asyncio.sleep(1.0)  # let background jobs settle before the last reading
        mem_end = memory_kib(pid)
        rss_end = mem_end["VmRSS"]
        async with aiohttp.ClientSession() as session:
            async with session.get(daemon.url + "/health") as resp:
                health = await resp.json()
        wal_bytes = _size(workdir / "data" / "lobug.db-wal")  # while the daemon still runs
        exit_code = await daemon.terminate()
        db_path = workdir / "data" / "lobug.db"
        stored = {r[0] for r in query(db_path, "SELECT id FROM turns WHERE role = 'user'")}
        lost = [t for t in stats.answered_turns if t not in stored]
        db_size = db_path.stat().st_size + _size(Path(f"{db_path}-wal"))
    finally:
        daemon.stop_quietly()
        fake.kill()
        fake.wait(10)

    total = sum(len(v) for v in stats.latencies.values())
    load1, _, _ = os.getloadavg()
    kinds = {}
    for kind, values in stats.latencies.items():
        if not values:
            continue
        kinds[kind] = {
            "requests": len(values),
            "per_s": round(len(values) / elapsed, 1),
            "p50_ms": round(percentile(values, 50), 1),
            "p95_ms": round(percentile(values, 95), 1),
            "p99_ms": round(percentile(values, 99), 1),
            "max_ms": round(max(values), 1),
        }
    errors = sum(stats.errors.values())
    result = {
        "devices": args.devices,
        "duration_s": round(elapsed, 1),
        "interval_s": args.interval,
        "mix": args.mix,
        "cpus": os.cpu_count(),
        "throughput_per_s": round(total / elapsed, 1),
        "daemon_cpu_pct_of_one_core": round(cpu_used / elapsed * 100, 1),
        "daemon_cpu_ms_per_request": round(cpu_used * 1000 / max(1, total), 2),
        "machine_load1_at_end": round(load1, 2),
        "kinds": kinds,
        "errors": errors,
        "error_kinds": dict(stats.errors.most_common(10)),
        "answered_turns": len(stats.answered_turns),
        "answered_turns_missing_from_db": len(lost),
        "rss_mib": {
            "start": round(rss_start / 1024, 1),
            "after_warmup": round(rss_warm / 1024, 1),
            "peak": round(rss_peak / 1024, 1),
            "end": round(rss_end / 1024, 1),
        },
        "rss_timeline_mib": timeline,
        "rss_anon_mib": {
            "start": round(mem_start["RssAnon"] / 1024, 1),
            "after_warmup": round(mem_warm["RssAnon"] / 1024, 1),
            "end": round(mem_end["RssAnon"] / 1024, 1),
        },
        "rss_file_mib_end": round(mem_end["RssFile"] / 1024, 1),
        "rss_growth_pct": round((rss_end - rss_warm) / rss_warm * 100, 1),
        "rss_anon_growth_pct": round(
            (mem_end["RssAnon"] - mem_warm["RssAnon"]) / mem_warm["RssAnon"] * 100, 1
        ),
        "rss_growth_from_start_pct": round((rss_end - rss_start) / rss_start * 100, 1),
        "loop_lag_max_ms": health.get("loop", {}).get("lag_max_ms"),
        "queue_at_end": health.get("queue"),
        "db_mib": round(db_size / 2**20, 1),
        "wal_mib_at_end": round(wal_bytes / 2**20, 1),
        "daemon_exit_code": exit_code,
    }
    text_p99 = kinds.get("text", {}).get("p99_ms", float("inf"))
    targets = {
        "0 errors": errors == 0 and not lost,
        "text p99 < 100 ms": text_p99 < 100,
        # The heap: VmRSS also counts the mmap'd database pages, which grow with the file.
        "RSS (anonymous) growth < 10 %": result["rss_anon_growth_pct"] < 10,
        "clean SIGTERM exit": exit_code == 0,
    }
    result["targets"] = targets
    _print(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.keep:
        print(f"data and logs kept in {workdir}", file=sys.stderr)
    else:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(targets.values()) else 1


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _print(r: dict[str, Any]) -> None:
    print(
        f"{r['devices']} devices, {r['duration_s']} s measured, mean gap {r['interval_s']} s per "
        f"device, {r['cpus']} CPUs: {r['throughput_per_s']} requests/s, {r['errors']} errors"
    )
    print("| type | requests | per s | p50 ms | p95 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|---|")
    for kind, k in r["kinds"].items():
        print(
            f"| {kind} | {k['requests']} | {k['per_s']} | {k['p50_ms']} | {k['p95_ms']} | "
            f"{k['p99_ms']} | {k['max_ms']} |"
        )
    print(
        f"daemon CPU {r['daemon_cpu_pct_of_one_core']} % of one core, "
        f"{r['daemon_cpu_ms_per_request']} ms per request; machine load avg "
        f"{r['machine_load1_at_end']}"
    )
    rss = r["rss_mib"]
    print(
        f"RSS MiB: start {rss['start']}, after warm-up {rss['after_warmup']}, peak {rss['peak']}, "
        f"end {rss['end']}; growth {r['rss_growth_pct']} % after warm-up "
        f"({r['rss_growth_from_start_pct']} % from the idle start)"
    )
    print(
        f"answered turns {r['answered_turns']}, missing from the DB "
        f"{r['answered_turns_missing_from_db']}; DB {r['db_mib']} MiB (WAL "
        f"{r['wal_mib_at_end']} MiB); queue at end "
        f"{r['queue_at_end']}; worst loop lag {r['loop_lag_max_ms']} ms"
    )
    anon = r["rss_anon_mib"]
    print(
        f"  of which anonymous (heap) MiB: start {anon['start']}, after warm-up "
        f"{anon['after_warmup']}, end {anon['end']}; growth {r['rss_anon_growth_pct']} % after "
        f"warm-up; file-backed (mmap'd DB pages) at end {r['rss_file_mib_end']} MiB"
    )
    print(
        "timeline (s: VmRSS/RssAnon MiB): "
        + " ".join(f"{t}:{v}/{a}" for t, v, a in r["rss_timeline_mib"])
    )
    for name, count in r["error_kinds"].items():
        print(f"  error x{count}: {name}")
    for name, ok in r["targets"].items():
        print(f"target {name}: {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
