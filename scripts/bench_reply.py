#!/usr/bin/env python3
"""Reply latency at the model's speed (issue 22): a household talks to the desk for 24 turns.

Starts scripts/pi_llm.py (an Ollama front that behaves in time like llama.cpp-based Ollama on
a Pi 5 running llama3.2:3b: one slot, the previous sequence kept as KV cache and only what
follows the longest common prefix prefilled; prefill 30 and generation 5 tokens/s by default)
and, for each variant on a fresh data dir, the daemon of a checkout as a subprocess. The
conversation: 24 scripted utterances to POST /chat/text from one device, the next one 15 s of
model time after the previous reply, the device posting its sensors (battery going down) before
every third turn. Then it waits until the daemon's job queue has drained and the front has been
idle a while (bounded by --drain-timeout), and reads what the memory holds.

All times are model seconds: wall time x --speedup (every sleep of the front is divided by it,
and so is the 15 s pause between turns). The daemon's own timeouts are set in model seconds
too (scaled), and so are the keys named by --scale-keys (default memory.quiet_s) where the
checkout has them: a daemon timer meant for a person's pace runs at the model's pace.

Variants (each a fresh data dir, the front's cache emptied):
  - floor: computed per turn, no server: prefill only the tokens of the turn's own words, as
    the front tokenises them, plus generating the reply the front gives it;
  - memory-off: `memory.enabled = false` (personality + the working-memory deque);
  - memory-on: the checkout's defaults;
  - today-memory-off / today-memory-on: the same on the checkout at --root (e.g. a git
    worktree of an older commit), so "today" is measured in the same run;
  - --variant NAME:key=value,key=value adds one: `section.key` (or a raw LOBUG_* name) set
    through the environment, passed only when given (`root=PATH` runs another checkout,
    `memory=off` is memory.enabled=false; a value `~N` is N model seconds, divided by the
    speed-up).
Embeddings: the hashing backend (as scripts/bench_turn.py), unless --embedder ollama points
the daemon's embedder at the front (768-d, embedding time modelled there).

Usage:
  .venv/bin/python scripts/bench_reply.py [--speedup 10] [--only memory-off,memory-on]
      [--root ../lobug-today] [--variant lane-off:memory.user_first=false]
      [--json out.json] [--dump-prompts DIR] [--compare memory-on,lane-off] [--session-end]
--session-end: after the drain, the household comes back once the session's idle time passed
(scaled), which ends the session; the memory work that follows (its consolidation and record,
the new turn's extraction) is printed apart from the conversation's.
Goals (issue 22): memory on p50 <= 1.5x the floor's p50 and p95 <= 2x the floor's p95; no
reply waits more than 2 s behind memory work; memory work <= 12 s of model time per turn until
the queue drained, within minutes; memory off no slower than today (with --root).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

import pi_llm  # noqa: E402
from daemon_proc import Daemon, free_port, wait_http  # noqa: E402

DEVICE = "desk-kitchen"
CONVERSATION = (
    "Good morning Lo-Bug, my name is Sam and I live here with my wife Priya and our two kids.",
    "Our dog is called Biscuit, he is a four year old beagle who loves the park.",
    "Can you remind me which day the recycling goes out?",
    "My daughter Ella has a piano recital on Friday at six in the evening.",
    "I prefer my coffee black with no sugar. Priya likes oat milk in hers.",
    "What's a good quick dinner I could make tonight with pasta and spinach?",
    "My sister Mara is flying in from Lisbon next Saturday and staying for a week.",
    "We need to get the spare room ready before she arrives, the bed still needs sheets.",
    "Biscuit has a vet appointment on Tuesday morning for his vaccinations.",
    "Who is coming to visit us next week?",
    "I'm training for a half marathon in October, so I run three mornings a week.",
    "My son Leo is allergic to peanuts, so please keep that in mind for any recipes.",
    "What did I tell you about Ella's recital?",
    "Priya works as a nurse at the city hospital and does night shifts on Wednesdays.",
    "Actually the vet moved Biscuit's appointment to Thursday afternoon.",
    "I really don't like horror movies, but the kids love animated films.",
    "Can you suggest a board game we could play as a family on Sunday?",
    "My mother's birthday is on the twelfth of next month, she turns seventy.",
    "When is Biscuit going to the vet?",
    "I work from home on Mondays and Fridays, the other days I'm at the office downtown.",
    "We are thinking about a trip to the mountains in August with the kids.",
    "What should I pack for a weekend hike if it might rain?",
    "Remind me, what kind of milk does Priya like in her coffee?",
    "Thanks Lo-Bug, I'm heading out to walk Biscuit now, talk to you later.",
)
CLOSING = "Good evening Lo-Bug, I'm back."  # --session-end: the next conversation's first words
TURN_TIMEOUT_MODEL_S = 300.0  # ollama.timeout_s, model seconds: no turn should apologise
MEMORY_TIMEOUT_MODEL_S = 900.0  # memory.llm_timeout_s: a base-memory rewrite may take minutes
POLL_S = 0.5  # wall seconds between two looks at the queue while draining


# -- the floor ------------------------------------------------------------------------------------
def floor_s(text: str, prefill_rate: float, gen_rate: float) -> float:
    """Prefill only the turn's own words, then generate the reply the front gives it."""
    reply = pi_llm.answer(pi_llm.CHAT, {"messages": [{"role": "user", "content": text}]})
    envelope = json.dumps({"action": "RESPOND", "response": reply})
    return len(pi_llm.tokenize(text)) / prefill_rate + len(pi_llm.tokenize(envelope)) / gen_rate


# -- helpers --------------------------------------------------------------------------------------
def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def config_defaults(root: Path) -> dict[str, Any]:
    """`section.key` -> default of the checkout at `root` (its rendered example config)."""
    found = subprocess.run(
        [sys.executable, "-m", "lobug.config", "--example"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        return {}
    try:
        data = tomllib.loads(found.stdout)
    except tomllib.TOMLDecodeError:
        return {}
    return {
        f"{section}.{key}": value
        for section, table in data.items()
        if isinstance(table, dict)
        for key, value in table.items()
    }


def env_name(key: str) -> str:
    if key.upper().startswith("LOBUG_"):
        return key.upper()
    section, _, name = key.partition(".")
    return f"LOBUG_{section}_{name}".upper()


@dataclass
class Variant:
    name: str
    root: Path
    overrides: dict[str, str] = field(default_factory=dict)

    @property
    def memory(self) -> bool:
        return self.overrides.get("memory.enabled", "true").lower() not in ("false", "0", "no")


def parse_variant(spec: str, root: Path) -> Variant:
    name, _, rest = spec.partition(":")
    variant = Variant(name.strip(), root)
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--variant {spec!r}: {item!r} is not key=value")
        key = key.strip()
        if key == "root":
            variant.root = Path(value).resolve()
        elif key == "memory":
            variant.overrides["memory.enabled"] = "false" if value == "off" else "true"
        else:
            variant.overrides[key] = value.strip()
    return variant


# -- one variant ----------------------------------------------------------------------------------
@dataclass
class Turn:
    index: int
    text: str
    post_at: float  # model clock
    reply_at: float
    latency_s: float
    status: int
    body: dict[str, Any]


class Front:
    """The pi_llm subprocess and its model clock."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.t0 = 0.0

    async def start(self) -> None:
        a = self.args
        argv = [
            sys.executable,
            str(ROOT / "scripts" / "pi_llm.py"),
            "--port",
            str(self.port),
            "--speedup",
            str(a.speedup),
            "--prefill-rate",
            str(a.prefill_rate),
            "--gen-rate",
            str(a.gen_rate),
            "--embed-rate",
            str(a.embed_rate),
        ]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        await wait_http(self.url + "/api/version")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def now(self) -> float:
        return (time.monotonic() - self.t0) * self.args.speedup

    async def get(self, session: aiohttp.ClientSession, path: str) -> Any:
        async with session.get(self.url + path) as resp:
            return await resp.json()

    async def reset(self, session: aiohttp.ClientSession) -> None:
        async with session.post(self.url + "/_reset") as resp:
            self.t0 = float((await resp.json())["t0_monotonic"])


def daemon_env(variant: Variant, args: argparse.Namespace, defaults: dict[str, Any]) -> dict:
    speedup = args.speedup
    env = {
        "PYTHONPATH": str(variant.root),
        "LOBUG_LOG_LEVEL": "INFO",
        "LOBUG_OLLAMA_TIMEOUT_S": f"{TURN_TIMEOUT_MODEL_S / speedup:.3f}",
        "LOBUG_MEMORY_LLM_TIMEOUT_S": f"{MEMORY_TIMEOUT_MODEL_S / speedup:.3f}",
        "LOBUG_SPEECH_LOAD_AT_START": "false",
        "LOBUG_WYOMING_ENABLED": "false",
    }
    if args.embedder == "ollama":
        env.update(
            LOBUG_EMBEDDER="ollama",
            LOBUG_EMBEDDING_MODEL="nomic-embed-text",
            LOBUG_EMBEDDING_DIM="768",
            LOBUG_EMBEDDING_TIMEOUT_S=f"{120 / speedup:.3f}",
        )
    scaled = args.scale_keys.split(",")
    if args.session_end:
        scaled.append("chat.session_idle_minutes")
    for key in filter(None, scaled):
        if key in defaults and key not in variant.overrides:
            try:
                env[env_name(key)] = f"{float(defaults[key]) / speedup:.4f}"
            except (TypeError, ValueError):
                pass
    for key, value in variant.overrides.items():
        if value.startswith("~"):
            value = f"{float(value[1:]) / speedup:.4f}"
        env[env_name(key)] = value
    return env


async def run_variant(
    variant: Variant, front: Front, args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    defaults = config_defaults(variant.root)
    unknown = [
        k for k in variant.overrides if not k.upper().startswith("LOBUG_") and k not in defaults
    ]
    if defaults and unknown:
        print(f"  note: {variant.name}: {', '.join(unknown)} not in this checkout's config")
    env = daemon_env(variant, args, defaults)
    data = workdir / variant.name
    daemon = Daemon(data, ollama_url=front.url, env=env, fake_stt=False)
    speedup = args.speedup
    timeout = aiohttp.ClientTimeout(total=3600)
    turns: list[Turn] = []
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await front.reset(session)
        here = Path.cwd()
        os.chdir(variant.root)  # `python -m lobug` puts the working directory first on sys.path
        try:
            await daemon.start()
        finally:
            os.chdir(here)
        try:
            await asyncio.sleep(2.0)  # start-up work settles (model time counts from here)
            conversation_start = front.now()
            for i, text in enumerate(CONVERSATION[: args.turns]):
                if i % 3 == 0:
                    sensors = {
                        "device_id": DEVICE,
                        "orientation": "face_up",
                        "battery": 86 - i,
                        "charging": False,
                    }
                    async with session.post(daemon.url + "/context/sensors", json=sensors) as r:
                        await r.read()
                post_at = front.now()
                started = time.monotonic()
                async with session.post(
                    daemon.url + "/chat/text", json={"text": text, "device_id": DEVICE}
                ) as resp:
                    body = await resp.json(content_type=None)
                    status = resp.status
                latency = (time.monotonic() - started) * speedup
                turns.append(Turn(i, text, post_at, front.now(), latency, status, body))
                if args.verbose:
                    print(f"  turn {i + 1:2d}: {latency:5.1f} s  {body.get('response', body)!r}")
                await asyncio.sleep(args.pause / speedup)
            last_reply = turns[-1].reply_at if turns else conversation_start
            drained_at, drained = await wait_drained(daemon, front, session, args)
            ended_at = None
            if args.session_end and variant.memory:
                # The session ends when the household comes back after the idle time: its
                # consolidation (and record) runs then, in the lane like all memory work.
                idle_s = 60.0 * float(defaults.get("chat.session_idle_minutes", 30.0))
                await asyncio.sleep(max(0.0, last_reply + idle_s + 5.0 - front.now()) / speedup)
                async with session.post(
                    daemon.url + "/chat/text", json={"text": CLOSING, "device_id": DEVICE}
                ) as resp:
                    await resp.read()
                ended_at, _ = await wait_drained(daemon, front, session, args)
            stats = await front.get(session, "/_stats")
            prompts = await front.get(session, "/_prompts") if args.dump_prompts else []
            memory = await memory_contents(daemon, session, turns)
            health = await daemon.request("GET", "/health")
        finally:
            daemon.stop_quietly()
    if args.dump_prompts:
        dump_prompts(Path(args.dump_prompts) / f"{variant.name}.jsonl", prompts, stats)
    return summarise(
        variant,
        turns,
        stats["records"],
        conversation_start=conversation_start,
        last_reply=last_reply,
        drained_at=drained_at,
        drained=drained,
        ended_at=ended_at,
        memory=memory,
        health=health[1],
        log=str(daemon.log_path),
    )


async def wait_drained(
    daemon: Daemon, front: Front, session: aiohttp.ClientSession, args: argparse.Namespace
) -> tuple[float, bool]:
    """Until the daemon's queue is empty and the front idle for --idle model seconds."""
    deadline = front.now() + args.drain_timeout
    empty_since: float | None = None
    while front.now() < deadline:
        async with session.get(daemon.url + "/health") as resp:
            health = await resp.json()
        queue = health.get("queue", {})
        stats = await front.get(session, "/_stats")
        busy = stats["in_flight"] > 0 or queue.get("pending", 0) or queue.get("running", 0)
        if busy:
            empty_since = None
        else:
            empty_since = empty_since if empty_since is not None else front.now()
            last_end = max((r["end"] or 0.0 for r in stats["records"]), default=0.0)
            if stats["idle_s"] >= args.idle and front.now() - empty_since >= args.idle:
                # The queue emptied between two polls; the model's last work ended at last_end.
                return max(last_end, empty_since - POLL_S * args.speedup), True
        await asyncio.sleep(POLL_S)
    return front.now(), False


async def memory_contents(
    daemon: Daemon, session: aiohttp.ClientSession, turns: list[Turn]
) -> dict[str, Any]:
    """What the memory holds: every active memory by kind, and the base memory."""
    memories: list[dict[str, Any]] = []
    offset = 0
    while True:
        url = f"{daemon.url}/v1/memories?limit=100&offset={offset}"
        async with session.get(url) as resp:
            if resp.status != 200:
                break
            page = await resp.json()
        items: list[dict[str, Any]] = page["memories"]  # MemoryList
        memories.extend(items)
        if len(items) < 100:
            break
        offset += 100
    base = ""
    session_id = next((t.body.get("session_id") for t in turns if t.body.get("session_id")), "")
    if session_id:
        async with session.get(f"{daemon.url}/v1/context?session_id={session_id}&k=1") as resp:
            if resp.status == 200:
                context = await resp.json()
                base = context.get("base_memory") or context.get("base") or ""
    by_kind: dict[str, list[str]] = {}
    for memory in memories:
        text = memory.get("content") or memory.get("text") or ""
        by_kind.setdefault(str(memory.get("kind", "?")), []).append(text)
    return {"by_kind": by_kind, "base_memory": base if isinstance(base, str) else json.dumps(base)}


def dump_prompts(path: Path, prompts: list[dict[str, Any]], stats: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    records = {r["id"]: r for r in stats["records"]}
    with path.open("w") as out:
        for item in prompts:
            record = records.get(item["id"], {})
            keys = ("prompt_tokens", "cached", "prefilled", "generated", "start", "end", "aborted")
            line = {**item, **{k: record.get(k) for k in keys}}
            out.write(json.dumps(line) + "\n")


# -- figures --------------------------------------------------------------------------------------
def overlap(record: dict[str, Any], a: float, b: float) -> float:
    if record.get("start") is None:
        return 0.0
    end = record["end"] if record.get("end") is not None else b
    return max(0.0, min(end, b) - max(record["start"], a))


def summarise(
    variant: Variant,
    turns: list[Turn],
    records: list[dict[str, Any]],
    *,
    conversation_start: float,
    last_reply: float,
    drained_at: float,
    drained: bool,
    ended_at: float | None,
    memory: dict[str, Any],
    health: Any,
    log: str,
) -> dict[str, Any]:
    all_memory = [r for r in records if r["memory"] and r["arrival"] >= conversation_start]
    # The conversation's memory work: until the queue drained (the goal's count); with
    # --session-end, what the session's end cost after that is counted apart.
    memory_records = [r for r in all_memory if r["arrival"] <= drained_at]
    after_end = [r for r in all_memory if r["arrival"] > drained_at and r["start"] is not None]
    chats = [r for r in records if r["task"] == pi_llm.CHAT]
    per_turn: list[dict[str, Any]] = []
    for turn in turns:
        mine = [
            r
            for r in chats
            if turn.post_at - 0.5 <= r["arrival"] <= turn.reply_at + 0.5 and r["start"] is not None
        ]
        served = next((r for r in reversed(mine) if not r["aborted"]), mine[-1] if mine else None)
        start = served["start"] if served else turn.reply_at
        waits = sum(overlap(r, turn.post_at, start) for r in memory_records)
        per_turn.append(
            {
                "turn": turn.index + 1,
                "latency_s": round(turn.latency_s, 2),
                "status": turn.status,
                "degraded": bool(turn.body.get("degraded")),
                "prompt_tokens": served["prompt_tokens"] if served else None,
                "prefilled": served["prefilled"] if served else None,
                "cached": served["cached"] if served else None,
                "wait_memory_s": round(waits, 2),
                "front_wait_s": round(served["wait_s"], 2) if served else None,
            }
        )
    latencies = [t.latency_s for t in turns]
    counted = [t for t in per_turn if t["prompt_tokens"]]
    prefilled = [t["prefilled"] for t in counted]
    fractions = [t["prefilled"] / t["prompt_tokens"] for t in counted]
    busy = [r for r in records if r["start"] is not None and r["arrival"] >= conversation_start]
    memory_time = sum((r["end"] - r["start"]) for r in memory_records if r["start"] is not None)
    chat_time = sum((r["end"] - r["start"]) for r in busy if not r["memory"])
    embeds = [r for r in busy if r["task"] == pi_llm.EMBED]
    tasks: dict[str, int] = {}
    for r in memory_records:
        tasks[r["task"]] = tasks.get(r["task"], 0) + 1
    n = max(1, len(turns))
    return {
        "variant": variant.name,
        "root": str(variant.root),
        "overrides": variant.overrides,
        "turns": len(turns),
        "errors": sum(1 for t in turns if t.status != 200),
        "degraded": sum(1 for t in per_turn if t["degraded"]),
        "p50_s": round(statistics.median(latencies), 2) if latencies else None,
        "p95_s": round(percentile(latencies, 95), 2),
        "max_s": round(max(latencies), 2) if latencies else None,
        "prefilled_mean": round(statistics.mean(prefilled), 1) if prefilled else None,
        "prompt_mean": round(statistics.mean(t["prompt_tokens"] for t in counted), 1)
        if counted
        else None,
        "prefilled_pct": round(100 * statistics.mean(fractions), 1) if fractions else None,
        "wait_memory_mean_s": round(statistics.mean(t["wait_memory_s"] for t in per_turn), 2)
        if per_turn
        else 0.0,
        "wait_memory_max_s": round(max((t["wait_memory_s"] for t in per_turn), default=0.0), 2),
        "memory_calls": len(memory_records),
        "memory_aborted": sum(1 for r in memory_records if r["aborted"]),
        "memory_tasks": tasks,
        "memory_model_s": round(memory_time, 1),
        "memory_per_turn_s": round(memory_time / n, 1),
        "memory_share_pct": round(100 * memory_time / max(1e-9, memory_time + chat_time), 1),
        "embed_calls": len(embeds),
        "embed_model_s": round(sum(r["end"] - r["start"] for r in embeds), 1),
        "drained": drained,
        "drained_after_s": round(drained_at - last_reply, 1),
        "session_end_calls": len(after_end) if ended_at is not None else None,
        "session_end_tasks": sorted({r["task"] for r in after_end}),
        "session_end_model_s": round(sum(r["end"] - r["start"] for r in after_end), 1)
        if ended_at is not None
        else None,
        "per_turn": per_turn,
        "memory": memory,
        "queue_at_end": health.get("queue") if isinstance(health, dict) else None,
        "daemon_log": log,
    }


def floor_result(args: argparse.Namespace) -> dict[str, Any]:
    values = [floor_s(t, args.prefill_rate, args.gen_rate) for t in CONVERSATION[: args.turns]]
    own = [len(pi_llm.tokenize(t)) for t in CONVERSATION[: args.turns]]
    return {
        "variant": "floor",
        "turns": len(values),
        "p50_s": round(statistics.median(values), 2),
        "p95_s": round(percentile(values, 95), 2),
        "max_s": round(max(values), 2),
        "prefilled_mean": round(statistics.mean(own), 1),
        "per_turn": [round(v, 2) for v in values],
    }


def report(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    lines = [
        f"reply latency in model seconds (speed-up {args.speedup:g}; prefill "
        f"{args.prefill_rate:g} tok/s, generation {args.gen_rate:g} tok/s; {args.turns} turns, "
        f"{args.pause:g} s between a reply and the next turn; embedder {args.embedder})",
        "| variant | reply p50 | p95 | max | prefilled per turn (mean, % of prompt) | "
        "waits behind memory (mean / max) | memory calls (aborted) | memory model time "
        "(total, per turn, share) | drained after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results["variants"].items():
        if name == "floor":
            lines.append(
                f"| floor | {r['p50_s']} s | {r['p95_s']} s | {r['max_s']} s | "
                f"{r['prefilled_mean']} (own words) | — | — | — | — |"
            )
            continue
        lines.append(
            f"| {name} | {r['p50_s']} s | {r['p95_s']} s | {r['max_s']} s | "
            f"{r['prefilled_mean']} of {r['prompt_mean']} ({r['prefilled_pct']} %) | "
            f"{r['wait_memory_mean_s']} / {r['wait_memory_max_s']} s | "
            f"{r['memory_calls']} ({r['memory_aborted']}) | "
            f"{r['memory_model_s']} s, {r['memory_per_turn_s']} s, {r['memory_share_pct']} % | "
            f"{r['drained_after_s']} s{'' if r['drained'] else ' (NOT drained)'} |"
        )
    for name, r in results["variants"].items():
        if name == "floor":
            continue
        extra = (
            f"; embed calls {r['embed_calls']} ({r['embed_model_s']} s)" if r["embed_calls"] else ""
        )
        lines.append(
            f"{name}: errors {r['errors']}, degraded {r['degraded']}, memory tasks "
            f"{r['memory_tasks'] or '{}'}{extra}"
        )
        if r.get("session_end_model_s") is not None:
            whole = r["memory_model_s"] + r["session_end_model_s"]
            lines.append(
                f"{name}: the session's end (the next turn after the idle time, and its own "
                f"extraction): {r['session_end_calls']} memory calls {r['session_end_tasks']}, "
                f"{r['session_end_model_s']} s; with it {whole:.1f} s, "
                f"{whole / max(1, r['turns']):.1f} s per turn"
            )
    lines += goals(results, args)
    return lines


def goals(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    found = results["variants"]
    out: list[str] = []

    def check(ok: bool, text: str) -> None:
        out.append(f"{'PASS' if ok else 'FAIL'}: {text}")

    floor, on = found.get("floor"), found.get(args.goal_variant)
    if floor and on:
        check(
            on["p50_s"] <= 1.5 * floor["p50_s"],
            f"{args.goal_variant} p50 {on['p50_s']} s <= 1.5x floor p50 "
            f"({1.5 * floor['p50_s']:.1f} s)",
        )
        check(
            on["p95_s"] <= 2 * floor["p95_s"],
            f"{args.goal_variant} p95 {on['p95_s']} s <= 2x floor p95 ({2 * floor['p95_s']:.1f} s)",
        )
    if on:
        check(
            on["wait_memory_max_s"] <= 2.0,
            f"{args.goal_variant}: no reply waits > 2 s behind memory work "
            f"(max {on['wait_memory_max_s']} s)",
        )
        check(
            on["memory_per_turn_s"] <= 12.0,
            f"{args.goal_variant}: memory model time {on['memory_per_turn_s']} s per turn <= 12 s",
        )
        check(
            on["drained"] and on["drained_after_s"] <= 600.0,
            f"{args.goal_variant}: the queue drained {on['drained_after_s']} s after the last "
            "reply (<= 10 min)",
        )
    off, today = found.get("memory-off"), found.get("today-memory-off")
    if off and today:
        check(
            off["p50_s"] <= 1.05 * today["p50_s"] and off["p95_s"] <= 1.05 * today["p95_s"],
            f"memory-off no slower than today: p50 {off['p50_s']} vs {today['p50_s']} s, "
            f"p95 {off['p95_s']} vs {today['p95_s']} s (5 % noise allowed)",
        )
    return out


def memory_report(results: dict[str, Any], args: argparse.Namespace) -> list[str]:
    lines = []
    for name, r in results["variants"].items():
        if "memory" not in r:
            continue
        held = r["memory"]["by_kind"]
        counts = ", ".join(f"{k} {len(v)}" for k, v in sorted(held.items())) or "nothing"
        lines.append(f"\n## what {name}'s memory holds: {counts}")
        for kind in sorted(held):
            for text in held[kind]:
                lines.append(f"- [{kind}] {' '.join(text.split())}")
        if r["memory"]["base_memory"]:
            lines.append("base memory:")
            lines += ["  " + line for line in r["memory"]["base_memory"].splitlines()]
    if args.compare:
        a, _, b = args.compare.partition(",")
        if a in results["variants"] and b in results["variants"]:
            lines += compare(results["variants"][a], results["variants"][b], a, b)
    return lines


def compare(ra: dict[str, Any], rb: dict[str, Any], a: str, b: str) -> list[str]:
    lines = [f"\n## {a} vs {b}"]
    for kind in sorted(set(ra["memory"]["by_kind"]) | set(rb["memory"]["by_kind"])):
        sa = {" ".join(t.split()) for t in ra["memory"]["by_kind"].get(kind, [])}
        sb = {" ".join(t.split()) for t in rb["memory"]["by_kind"].get(kind, [])}
        lines.append(f"{kind}: {len(sa)} vs {len(sb)}, {len(sa & sb)} identical")
        lines += [f"  only in {a}: {t}" for t in sorted(sa - sb)]
        lines += [f"  only in {b}: {t}" for t in sorted(sb - sa)]
    same = ra["memory"]["base_memory"].strip() == rb["memory"]["base_memory"].strip()
    lines.append(f"base memory identical: {same}")
    return lines


# -- main -----------------------------------------------------------------------------------------
def variants_of(args: argparse.Namespace) -> list[Variant]:
    chosen = [
        Variant("memory-off", ROOT, {"memory.enabled": "false"}),
        Variant("memory-on", ROOT),
    ]
    if args.root:
        today = Path(args.root).resolve()
        chosen += [
            Variant("today-memory-off", today, {"memory.enabled": "false"}),
            Variant("today-memory-on", today),
        ]
    chosen += [parse_variant(spec, ROOT) for spec in args.variant]
    if args.only:
        wanted = set(args.only.split(","))
        chosen = [v for v in chosen if v.name in wanted]
    return chosen


async def main(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "speedup": args.speedup,
        "prefill_rate": args.prefill_rate,
        "gen_rate": args.gen_rate,
        "embedder": args.embedder,
        "turns": args.turns,
        "variants": {},
    }
    if not args.only or "floor" in args.only.split(","):
        results["variants"]["floor"] = floor_result(args)
    chosen = variants_of(args)
    if not chosen:
        return results
    workdir = Path(tempfile.mkdtemp(prefix="lobug-bench-reply-"))
    front = Front(args)
    await front.start()
    try:
        for variant in chosen:
            began = time.monotonic()
            print(f"running {variant.name} ({variant.root}) …", flush=True)
            results["variants"][variant.name] = await run_variant(variant, front, args, workdir)
            print(f"  done in {time.monotonic() - began:.0f} s wall", flush=True)
    finally:
        front.stop()
    results["loadavg"] = round(os.getloadavg()[0], 2)
    results["workdir"] = str(workdir)
    return results


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--speedup", type=float, default=10.0)
    parser.add_argument("--prefill-rate", type=float, default=30.0, help="tokens/s (30)")
    parser.add_argument("--gen-rate", type=float, default=5.0, help="tokens/s (5)")
    parser.add_argument("--embed-rate", type=float, default=200.0, help="tokens/s (200)")
    parser.add_argument("--embedder", choices=("hashing", "ollama"), default="hashing")
    parser.add_argument("--turns", type=int, default=len(CONVERSATION))
    parser.add_argument("--pause", type=float, default=15.0, help="model s after a reply")
    parser.add_argument("--root", default="", help="another checkout measured as 'today'")
    parser.add_argument("--variant", action="append", default=[], help="NAME:key=value,…")
    parser.add_argument("--only", default="", help="comma-separated variant names")
    parser.add_argument("--goal-variant", default="memory-on")
    parser.add_argument(
        "--scale-keys",
        default="memory.quiet_s",
        help="daemon keys in model seconds, divided by the speed-up where the checkout has them",
    )
    parser.add_argument(
        "--session-end",
        action="store_true",
        help="after the drain, end the session as the household's return does (the idle time "
        "scaled) and count the memory work that follows apart",
    )
    parser.add_argument("--drain-timeout", type=float, default=3600.0, help="model s (3600)")
    parser.add_argument("--idle", type=float, default=30.0, help="model s the front stays idle")
    parser.add_argument("--json", default="", help="save the results here")
    parser.add_argument("--dump-prompts", default="", help="save each request's messages here")
    parser.add_argument("--compare", default="", help="A,B: diff the memories of two variants")
    parser.add_argument("--no-memory-listing", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser.parse_args()


if __name__ == "__main__":
    options = parse()
    found = asyncio.run(main(options))
    print("\n".join(report(found, options)))
    if not options.no_memory_listing:
        print("\n".join(memory_report(found, options)))
    if options.json:
        with contextlib.suppress(OSError):
            Path(options.json).write_text(json.dumps(found, indent=1))
