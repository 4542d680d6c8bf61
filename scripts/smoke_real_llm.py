#!/usr/bin/env python3
"""Lo-Bug with a real model behind a real OpenAI-compatible server (issue 26).

Started by scripts/smoke_real_llm, which builds llama-server and installs the GGUF first.
Starts `llama-server -np 1 --swa-full` on the model, then:
  1. asks each task the daemon parses (the device reply, fact extraction, the judge, the
     insights) and the cascade's summary `--rounds` times with the JSON schema and as many
     times without (`llm.schemas`), through the daemon's own client (lobug.llm.backends) and
     parsers, and counts how often the first answer was valid, and how long it took;
  2. runs the daemon (`lobug serve`, llm.backend = "openai", offline MiniLM embeddings) through
     a short conversation on /chat/text, the memory jobs it starts (extraction, the judge, a
     summary: the cascade), and the OpenAI door with the `openai` client, plain and streamed;
     then reads /metrics (lobug_llm_outputs, lobug_llm_invalid_outputs) and /health.
Prints a Markdown report (docs/benchmarks.md keeps one); exits 1 when a path failed, never
for what the model said. A 270M model answers badly: the point is that every path survives a
real model and a real server.

Usage: .venv/bin/python scripts/smoke_real_llm.py --llama-server BIN --model GGUF [--rounds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import openai

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lobug.chat.prompt import build_messages, load_personality  # noqa: E402
from lobug.config import load_config  # noqa: E402
from lobug.llm.ask import InvalidOutput  # noqa: E402
from lobug.llm.backends import make_llm  # noqa: E402
from lobug.llm.client import LLMUnavailable, OutputSchema  # noqa: E402
from lobug.llm.replies import REPLY_SCHEMA, UnusableReply, parse_reply  # noqa: E402
from lobug.memory import instructions  # noqa: E402
from lobug.memory.extract.llm import FACTS_SCHEMA, parse_facts  # noqa: E402
from lobug.memory.reflect import insights  # noqa: E402
from lobug.memory.reflect.instructions import insight_messages  # noqa: E402
from lobug.memory.summaries.cascades import parse_summary  # noqa: E402
from lobug.memory.write.judge import LABELS_SCHEMA, parse_labels  # noqa: E402

ALIAS = "gemma-3-270m"
TOKEN = "smoke-token-0123456789"
# `lobug serve` with a smaller short cascade (constants: lobug.memory.summaries.cascades), so
# the conversation below starts a summary.
SMALL_CASCADE = (
    "import sys; from lobug.memory.summaries import cascades;"
    " cascades.SHORT_THRESHOLD, cascades.SHORT_KEEP = 8, 2;"
    " from lobug.cli.main import main; sys.exit(main())"
)
SAID = [
    "Hi! My name is Alex and I live in Lisbon.",
    "I have a cat called Tom who likes to sleep on my keyboard.",
    "I drive a Honda to work every morning.",
    "Actually I sold the Honda, I drive a Tesla now.",
    "What do you remember about my cat?",
    "I prefer green tea over coffee.",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- 1. each task with and without its schema ---------------------------------------------------
Task = tuple[list[dict[str, str]], Callable[[str], Any], OutputSchema | None, float]


def tasks(i: int) -> dict[str, Task]:
    """The daemon's prompts and parsers, on inputs that vary by round `i`."""
    said = SAID[i % len(SAID)]
    reply = build_messages(load_personality(None), [], [{"role": "user", "content": said}], [])
    exchange = instructions.extraction_messages([(said, "Nice to hear that!")])
    judge = instructions.judge_messages(
        [(1, "The user drives a Tesla.", [(12, "The user drives a Honda.")])]
    )
    think = insight_messages(
        ["The user has a cat called Tom.", "The user prefers green tea."],
        ["asked about the weather three mornings in a row"],
        "User: keep it short please\nLo-Bug: Sure.",
    )
    summary = instructions.summarize_conversation_messages(
        "\n".join(f"User: {s}\nLo-Bug: I see." for s in SAID[:4])
    )
    return {
        "reply": (reply, parse_reply, REPLY_SCHEMA, 0.7),
        "fact extraction": (exchange, parse_facts, FACTS_SCHEMA, 0.1),
        "fact judgement": (judge, partial(parse_labels, offered={(1, 12)}), LABELS_SCHEMA, 0.0),
        "insights": (think, insights.parse, insights.SCHEMA, 0.0),
        "summary (cascade)": (summary, parse_summary, None, 0.3),
    }


async def task_rates(base_url: str, rounds: int, timeout_s: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for schemas in (True, False):
        config = load_config(
            None,
            env={},
            overrides={
                "llm.backend": "openai",
                "llm.base_url": base_url,
                "llm.schemas": schemas,
                "ollama.timeout_s": timeout_s,
            },
        )
        llm = make_llm(config)
        try:
            for name, (_, _, task_schema, _) in tasks(0).items():
                if task_schema is None and not schemas:
                    continue  # free text: asked once
                valid, errors, seconds = 0, 0, []
                for i in range(rounds):
                    messages, parse, schema, temperature = tasks(i)[name]
                    started = time.monotonic()
                    try:
                        raw = await llm.chat(messages, schema=schema, temperature=temperature)
                    except LLMUnavailable as exc:
                        errors += 1
                        print(f"  {name}: {exc.kind}: {exc}", file=sys.stderr)
                        continue
                    seconds.append(time.monotonic() - started)
                    try:
                        parse(raw)
                        valid += 1
                    except (InvalidOutput, UnusableReply):
                        print(f"  {name} invalid: {raw[:120]!r}", file=sys.stderr)
                rows.append(
                    {
                        "task": name,
                        "schema": "yes" if schemas and task_schema else "no",
                        "valid": valid,
                        "asked": rounds,
                        "errors": errors,
                        "median_s": statistics.median(seconds) if seconds else None,
                        "max_s": max(seconds) if seconds else None,
                    }
                )
                print(f"rates: {rows[-1]}", file=sys.stderr)
        finally:
            await llm.close()
    return rows


# -- 2. the daemon end to end --------------------------------------------------------------------
async def daemon_run(base_url: str, timeout_s: float, data_dir: Path) -> dict[str, Any]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "LOBUG_DATA_DIR": str(data_dir),
        "LOBUG_LLM_BACKEND": "openai",
        "LOBUG_LLM_BASE_URL": base_url,
        "LOBUG_OLLAMA_TIMEOUT_S": str(timeout_s),
        "LOBUG_MEMORY_LLM_TIMEOUT_S": str(timeout_s),
        "LOBUG_EMBEDDER": "local",
        "LOBUG_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "LOBUG_EMBEDDING_DIM": "384",
        "LOBUG_SPEECH_LOAD_AT_START": "false",
        "LOBUG_WYOMING_ENABLED": "false",
        "LOBUG_MEMORY_QUIET_S": "0",
        "LOBUG_WORKERS_CONCURRENCY": "1",
        "LOBUG_API_TOKENS": f"{TOKEN}:full:supervisor:smoke",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("NOTIFY_SOCKET", None)
    log_path = data_dir / "daemon.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", SMALL_CASCADE, "serve"]
            + ["--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    report: dict[str, Any] = {"turns": [], "problems": []}
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as http:
            await _wait(http, url + "/health", 120, proc)
            for said in SAID[:5]:
                started = time.monotonic()
                async with http.post(url + "/chat/text", json={"text": said}) as resp:
                    body = await resp.json()
                report["turns"].append(
                    {
                        "status": resp.status,
                        "seconds": time.monotonic() - started,
                        "degraded": bool(body.get("degraded")),
                        "action": body.get("action"),
                        "response": str(body.get("response", ""))[:80],
                    }
                )
            report["jobs_s"] = await _drain(http, url, 900)
            try:
                report["door"] = await _door(url)
            except openai.APIError as exc:  # the door's own error: the path held
                report["door_error"] = str(exc)
            async with http.get(url + "/metrics", headers=_auth()) as resp:
                report["metrics"] = _llm_metrics(await resp.text())
            async with http.get(url + "/health") as resp:
                health = await resp.json()
            report["health"] = {"llm": health.get("llm"), "problems": health.get("problems")}
            async with http.get(url + "/v1/memories?limit=50", headers=_auth()) as resp:
                listing = await resp.json()
            report["memories"] = [
                (m.get("kind"), m.get("content", "")[:90]) for m in listing.get("memories", [])
            ]
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    report["log_tail"] = log_path.read_text(errors="replace").splitlines()[-15:]
    return report


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


async def _wait(
    http: aiohttp.ClientSession, url: str, timeout: float, proc: subprocess.Popen[bytes]
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the process exited with {proc.returncode}")
        try:
            async with http.get(url) as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.5)
    raise RuntimeError(f"{url} did not answer within {timeout}s")


async def _drain(http: aiohttp.ClientSession, url: str, timeout: float) -> float:
    """Seconds until no memory job is pending or running (jobs that wait out a backoff after a
    failure count as pending: the wait ends at `timeout`)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        async with http.get(url + "/health") as resp:
            queue = (await resp.json())["queue"]
        if queue["pending"] == 0 and queue["running"] == 0:
            break
        await asyncio.sleep(1.0)
    return time.monotonic() - started


async def _door(url: str) -> dict[str, Any]:
    async with openai.AsyncOpenAI(base_url=url + "/v1", api_key=TOKEN, max_retries=0) as ai:
        started = time.monotonic()
        plain = await ai.chat.completions.create(
            model="lobug", messages=[{"role": "user", "content": "Tell me about my cat."}]
        )
        plain_s = time.monotonic() - started
        started, first, pieces = time.monotonic(), None, []
        stream = await ai.chat.completions.create(
            model="lobug",
            stream=True,
            messages=[{"role": "user", "content": "What do I drink in the morning?"}],
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                first = first if first is not None else time.monotonic() - started
                pieces.append(chunk.choices[0].delta.content)
        return {
            "plain_s": plain_s,
            "plain": (plain.choices[0].message.content or "")[:80],
            "stream_first_s": first,
            "stream_s": time.monotonic() - started,
            "stream_pieces": len(pieces),
            "stream": "".join(pieces)[:80],
        }


def _llm_metrics(text: str) -> dict[str, dict[str, float]]:
    from prometheus_client.parser import text_string_to_metric_families

    found: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name in ("lobug_llm_outputs", "lobug_llm_invalid_outputs", "lobug_ollama_errors"):
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    key = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                    found.setdefault(family.name, {})[key] = sample.value
    return found


# -- the report ------------------------------------------------------------------------------------
def render(rates: Sequence[dict[str, Any]], daemon: dict[str, Any], args: Any) -> str:
    def secs(value: float | None) -> str:
        return "–" if value is None else f"{value:.1f} s"

    lines = [
        f"llama-server `-np 1 --swa-full -c {args.ctx} --cache-ram {args.cache_ram} -n"
        f" {args.n_predict}`, {Path(args.model).name}, {os.cpu_count()} CPU cores;"
        f" {args.rounds} rounds per task and setting.",
        "",
        "| task | schema sent | valid first answers | errors | median | max |",
        "|---|---|---|---|---|---|",
    ]
    for r in rates:
        lines.append(
            f"| {r['task']} | {r['schema']} | {r['valid']}/{r['asked']} | {r['errors']} |"
            f" {secs(r['median_s'])} | {secs(r['max_s'])} |"
        )
    turns = daemon.get("turns", [])
    lines += ["", 'The daemon (llm.backend = "openai", local MiniLM embeddings):', ""]
    for t in turns:
        lines.append(
            f"- /chat/text {t['status']} in {t['seconds']:.1f} s"
            f"{' (degraded)' if t['degraded'] else ''}: {t['action']} {t['response']!r}"
        )
    lines.append(f"- memory jobs drained {daemon.get('jobs_s', 0):.0f} s after the last turn")
    door = daemon.get("door", {})
    if door:
        lines.append(
            f"- OpenAI door: plain {door['plain_s']:.1f} s; streamed first piece after"
            f" {secs(door['stream_first_s'])}, {door['stream_pieces']} pieces in"
            f" {door['stream_s']:.1f} s"
        )
    if daemon.get("door_error"):
        lines.append(f"- OpenAI door answered with an error: {daemon['door_error']}")
    for family, samples in sorted(daemon.get("metrics", {}).items()):
        lines.append(f"- {family}: " + "; ".join(f"{k} {v:g}" for k, v in samples.items()))
    lines.append(f"- /health: {json.dumps(daemon.get('health'))}")
    lines.append(f"- memories: {len(daemon.get('memories', []))}")
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> int:
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    argv = [
        args.llama_server,
        "-m", args.model,
        "--host", "127.0.0.1",
        "--port", str(port),
        "-np", "1",
        "--swa-full",
        "-c", str(args.ctx),
        "--cache-ram", str(args.cache_ram),
        "-n", str(args.n_predict),
        "--alias", ALIAS,
        "-t", str(os.cpu_count() or 1),
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="lobug-smoke-") as tmp:
        log_path = Path(tmp) / "llama-server.log"
        with open(log_path, "ab") as log:
            server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            async with aiohttp.ClientSession() as http:
                await _wait(http, base_url.removesuffix("/v1") + "/health", 300, server)
            print(f"llama-server up at {base_url}", file=sys.stderr)
            rates = await task_rates(base_url, args.rounds, args.timeout)
            daemon = await daemon_run(base_url, args.timeout, Path(tmp) / "data")
        finally:
            server.terminate()
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
        print(render(rates, daemon, args))
        if args.json:
            Path(args.json).write_text(json.dumps({"rates": rates, "daemon": daemon}, indent=1))
    broken = [t for t in daemon["turns"] if t["status"] != 200]
    door_error = daemon.get("door_error", "")
    if broken or (door_error and "language model is unavailable" not in door_error):
        print("FAILED: a path did not answer", file=sys.stderr)
        return 1
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-server", required=True)
    parser.add_argument("--model", required=True, help="the GGUF")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--cache-ram", type=int, default=256, help="MiB of host prompt cache")
    parser.add_argument("--n-predict", type=int, default=384, help="tokens per answer at most")
    parser.add_argument("--timeout", type=float, default=120.0, help="per model call")
    parser.add_argument("--json", default="", help="also write the raw figures here")
    sys.exit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
