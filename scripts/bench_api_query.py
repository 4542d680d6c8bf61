#!/usr/bin/env python3
"""Benchmark POST /v1/query end to end over HTTP at 10k memories (or turns), embedding excluded.

The real app (create_app) serves on a real local port from this process; requests go through
aiohttp's client, the auth and error middlewares, validation, the access checks, hybrid search
(vector KNN + BM25 + entities, RRF, re-score), bullets and the delta. The query's embedding
call is timed on the embedder and subtracted from each request's latency, so the figure is
the API's own cost on top of the embedder (the hashing embedder is used; Ollama or MiniLM
would add their own time). Beside the wall times, the CPU the process spent per request
(`cpu_p50_ms`, `cpu_p95_ms`): on a machine busy with other work the wall times measure the
wait for a core too, the CPU time mostly what the request costs.

`--turns N` fills the conversation log instead: N short imported turns from a small
vocabulary, each with its vector (the stress of issue 13: every query word matches tens of
thousands of rows). The anchor is measured in the same run: a raw sqlite-vec KNN (k = 10) over
the same vectors with the same query vectors, on a connection of its own.

A second anchor, the door's floor, is measured in the same run: the same questions again with
the search answered empty once the question is embedded (`floor_p50_ms`, `floor_p95_ms`):
what the HTTP path costs around the search (client, middlewares, validation, access checks,
the delta), so p95 − floor is what the search itself adds.

`--embed-ms X` makes each question's embedding take at least X ms, as a real embedder does
(the hashing one takes a few µs): the word lists, which need no vector, run meanwhile, so the
figure is what the API adds on top of an embedder of that speed. Without it they add in full.

Usage: .venv/bin/python scripts/bench_api_query.py [--facts 10000 | --turns 100000]
       [--queries 300] [--dim 384] [--return bullets|full] [--top-k 5] [--embed-ms 0]
       [--person NAME (with --turns: every tenth turn names them)] [--period]
Goal (2-core machine, 384-d): p95 <= max(10 ms, 2x raw KNN) at 10k; <= 15 ms at 100k.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lobug import keys  # noqa: E402
from lobug.app import Overrides, create_app  # noqa: E402
from lobug.config import load_config  # noqa: E402
from lobug.conversation import insert_turn  # noqa: E402
from lobug.memory import MemoryService  # noqa: E402
from lobug.memory.graph.entities import link_turn_entities  # noqa: E402
from lobug.memory.graph.ner import Mention  # noqa: E402
from lobug.memory.table import rows as store  # noqa: E402
from lobug.memory.vectors import knn, replies  # noqa: E402
from lobug.storage.sqlite import connect  # noqa: E402
from lobug.storage.vectors import pack  # noqa: E402

VERBS = "likes owns visited plans repaired borrowed painted cooked studied photographed".split()
ADJS = "red old tiny quiet bright wooden frozen spicy vintage electric".split()
NOUNS = (
    "bicycle guitar garden lighthouse recipe telescope notebook kayak teapot violin "
    "lantern mountain bakery museum river orchard robot sailboat library greenhouse"
).split()
PLACES = "Lisbon Oslo Kyoto Denver Cairo Lima Perth Dublin Austin Quebec".split()
CATEGORIES = ("personal", "preference", "knowledge", "event")


class NoTranscriber:
    """/v1 needs no speech; the app still wants a transcriber to hold."""

    name = "none"

    def load(self) -> None:
        raise RuntimeError("no speech in this benchmark")

    def transcribe(self, audio: Any, language: str | None = None) -> Any:
        raise RuntimeError("no speech in this benchmark")


class TimedEmbedder:
    """The service's embedder, with the time spent in it counted (and later subtracted)."""

    def __init__(self, inner: Any, at_least_s: float = 0.0) -> None:
        self.inner, self.name, self.dim, self.spent = inner, inner.name, inner.dim, 0.0
        self.at_least_s = at_least_s  # `--embed-ms`: a call takes at least this long

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        started = time.perf_counter()
        try:
            vectors = await self.inner.embed(texts)
            await asyncio.sleep(self.at_least_s - (time.perf_counter() - started))
            return vectors
        finally:
            self.spent += time.perf_counter() - started


def fact(rng: random.Random, i: int) -> str:
    return (
        f"The user {rng.choice(VERBS)} a {rng.choice(ADJS)} {rng.choice(NOUNS)} "
        f"in {rng.choice(PLACES)} (note {i})."
    )


FIRST_DAY_AGO = 400  # --turns: the first turn's day; the turns span a week from it


def said(rng: random.Random) -> str:
    """A short turn from a small vocabulary: every word is in thousands of turns."""
    return (
        f"I {rng.choice(VERBS)} the {rng.choice(ADJS)} {rng.choice(NOUNS)} "
        f"in {rng.choice(PLACES)} today"
    )


def pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def service_of(app: web.Application) -> MemoryService:
    memory = app[keys.MEMORY]
    assert memory is not None, "the bench needs memory on"
    return memory


def embedder_of(app: web.Application) -> Any:
    """The embedder under the bench's timing wrapper (`TimedEmbedder.inner`)."""
    return getattr(service_of(app).embedder, "inner", service_of(app).embedder)


async def fill(app: web.Application, n: int, rng: random.Random) -> float:
    """n facts through the store's insert path with their vectors, 1000 per transaction."""
    db, embedder = app[keys.DB], embedder_of(app)
    started = time.perf_counter()
    for start in range(0, n, 1000):
        texts = [fact(rng, i) for i in range(start, min(n, start + 1000))]
        vectors = await embedder.embed(texts)

        def write(conn: Any, texts: list[str] = texts, vectors: Any = vectors) -> None:
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                memory_id = store.insert_memory(
                    conn, user_id="default", kind="fact", content=text,
                    category=CATEGORIES[i % 4], importance=rng.random(), now=time.time(),
                    actor="bench",
                )  # fmt: skip
                knn.put_memory_vector(conn, memory_id, vector)

        await db.write(write)
    await db.write_raw(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    return time.perf_counter() - started


async def fill_turns(
    app: web.Application, n: int, rng: random.Random, asking: bool = False, person: str = ""
) -> float:
    """n imported turns (sessions of 20, a minute apart) with their vectors, 2000 per batch.
    `asking`: every assistant turn ends with a question, so every user turn after one is a
    reply and gets its key as `embed_turn` stores it (`vectors/replies`): half the turns.
    `person`: every tenth turn names them and is linked to them, as the enrichment links a
    turn to the people it names (what a person filter finds)."""
    db, embedder = app[keys.DB], embedder_of(app)
    started = time.perf_counter()
    day0 = time.time() - FIRST_DAY_AGO * 86400
    for start in range(0, n, 2000):
        texts = [said(rng) for _ in range(start, min(n, start + 2000))]
        if person:
            texts = [
                t + (f" with {person}" if (start + i) % 10 == 0 else "")
                for i, t in enumerate(texts)
            ]
        if asking:
            texts = [
                t + (" Where was that?" if (start + i) % 2 else "") for i, t in enumerate(texts)
            ]
        vectors = await embedder.embed(texts)

        def write(
            conn: Any, start: int = start, texts: list[str] = texts, vectors: Any = vectors
        ) -> list[tuple[int, str]]:
            stored = []
            for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
                at = start + i
                turn = insert_turn(
                    conn, session_id=f"import-{at // 20}", role=("user", "assistant")[at % 2],
                    text=text, ts=day0 + at * 60, ref=f"bench:{at}",
                )  # fmt: skip
                knn.put_turn_vector(conn, turn.id, vector)
                if person and at % 10 == 0:
                    named = Mention(person, person, "person", (0, len(person)))
                    link_turn_entities(conn, turn.id, [named], turn.user_id, turn.ts)
                stored.append((turn.id, text))
            return stored

        keyed = await db.read(replies.keys_of, await db.write(write))
        if keyed:
            key_vectors = await embedder.embed([key for _, key in keyed])
            await db.write(replies.put_keys, keyed, key_vectors)
    await db.write_raw(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    return time.perf_counter() - started


def raw_knn(path: Path, table: str, vectors: Sequence[Sequence[float]], k: int = 10) -> list[float]:
    """The anchor: sqlite-vec's own KNN over the same vectors, nothing else (ms per query)."""
    conn = connect(path)
    key = "turn_id" if table == "turn_vectors" else "memory_id"
    timings = []
    try:
        for vector in vectors:
            blob = pack(vector)
            started = time.perf_counter()
            conn.execute(
                f"SELECT {key}, distance FROM {table} WHERE embedding MATCH ? AND k = ?", (blob, k)
            ).fetchall()
            timings.append((time.perf_counter() - started) * 1000)
    finally:
        conn.close()
    return timings


def question(rng: random.Random, period: bool = False) -> str:
    """A question from the turns' vocabulary; `period`: naming one of the week of turns' days
    ("… on March 3, 2025?", `search.when`), so its `when` list ranks that day's ~1,440 turns."""
    asked = f"what about my {rng.choice(ADJS)} {rng.choice(NOUNS)} in {rng.choice(PLACES)}"
    if not period:
        return asked + "?"
    day = datetime.fromtimestamp(time.time() - (FIRST_DAY_AGO - rng.randrange(1, 6)) * 86400)
    return f"{asked} on {day:%B} {day.day}, {day.year}?"


async def ask(
    url: str,
    timed: TimedEmbedder,
    questions: Sequence[str],
    args: argparse.Namespace,
    *,
    empty: MemoryService | None = None,
) -> tuple[list[float], list[float], list[float], list[int]]:
    """Each question POSTed in turn: (ms beyond the embedder, CPU ms, embedder ms, results) of
    those past the warm-up. `empty`: its search answers nothing once the question is embedded
    (the door's floor: every step of the request but the search)."""
    if empty is not None:

        async def nothing(req: Any) -> list[Any]:
            await (await empty.vectors.later(req.query))
            return []

        empty.query = nothing  # type: ignore[method-assign]
    latencies, cpu_ms, embed_ms, counts = [], [], [], []
    async with aiohttp.ClientSession() as session:
        for i, text in enumerate(questions):
            body: dict[str, Any] = {
                "query": text,
                "top_k": args.top_k,
                "return": args.mode,
                "session_id": "bench",
            }
            if args.turns and args.kinds:
                body["kinds"] = args.kinds.split(",")
            if args.person:
                body["filters"] = {"person": args.person}
            timed.spent = 0.0
            started, cpu_started = time.perf_counter(), time.process_time()
            async with session.post(url, json=body) as resp:
                answer = await resp.json()
                assert resp.status == 200, answer
            total = time.perf_counter() - started
            cpu = time.process_time() - cpu_started
            if i >= args.warmup:
                latencies.append((total - timed.spent) * 1000)
                cpu_ms.append(cpu * 1000)
                embed_ms.append(timed.spent * 1000)
                counts.append(len(answer["results"]))
    return latencies, cpu_ms, embed_ms, counts


async def main(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(7)
    data = Path(tempfile.mkdtemp(prefix="lobug-bench-api-"))
    config = load_config(
        None,
        env={},
        overrides={
            "storage.data_dir": str(data),
            "embedding.backend": "hashing",
            "embedding.dim": args.dim,
            "ollama.host": "http://127.0.0.1:9",  # no LLM needed to query
            "speech.load_at_start": False,
            "lifecycle.gc_interval_s": 0,
            "log.level": "WARNING",
        },
    )
    app = create_app(config, Overrides(transcriber=NoTranscriber()))  # type: ignore[arg-type]
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    url = f"http://127.0.0.1:{port}/v1/query"
    memory = service_of(app)
    # The query's embedding is asked of `vectors.embedder` (the service's own is the jobs').
    timed = memory.vectors.embedder = TimedEmbedder(memory.vectors.embedder)
    if args.turns:
        fill_s = await fill_turns(app, args.turns, rng, args.asking, args.person)
    else:
        fill_s = await fill(app, args.facts, rng)
    timed.at_least_s = args.embed_ms / 1000  # after the fill: only the questions wait
    questions = [question(rng, args.period) for _ in range(args.warmup + args.queries)]
    latencies, cpu_ms, embed_ms, counts = await ask(url, timed, questions, args)
    asked = questions[args.warmup :]
    floor = await ask(url, timed, questions, args, empty=memory)
    await runner.cleanup()
    table = "turn_vectors" if args.turns else "memory_vectors"
    anchor = raw_knn(app[keys.DB].path, table, await timed.inner.embed(asked))
    p95 = pct(latencies, 95)
    size = args.turns or args.facts
    goal = 15.0 if size >= 100_000 else max(10.0, 2 * pct(anchor, 95))
    return {
        "facts": 0 if args.turns else args.facts,
        "turns": args.turns,
        "reply_keys": args.asking,
        "dim": args.dim,
        "queries": args.queries,
        "return": args.mode,
        "top_k": args.top_k,
        "fill_s": round(fill_s, 1),
        "p50_ms": round(pct(latencies, 50), 2),
        "p95_ms": round(pct(latencies, 95), 2),
        "p99_ms": round(pct(latencies, 99), 2),
        "mean_ms": round(statistics.fmean(latencies), 2),
        # The CPU this process spent per request (client, server and reader threads, the
        # hashing embedder's few µs included): what the request costs, whatever else runs on
        # the machine; the wall times above also hold the waits for a core.
        "cpu_p50_ms": round(pct(cpu_ms, 50), 2),
        "cpu_p95_ms": round(pct(cpu_ms, 95), 2),
        "embed_ms_at_least": args.embed_ms,
        "embed_ms_mean_excluded": round(statistics.fmean(embed_ms), 3),
        "results_mean": round(statistics.fmean(counts), 2),
        "floor_p50_ms": round(pct(floor[0], 50), 2),
        "floor_p95_ms": round(pct(floor[0], 95), 2),
        "anchor_raw_knn_k10_p50_ms": round(pct(anchor, 50), 2),
        "anchor_raw_knn_k10_p95_ms": round(pct(anchor, 95), 2),
        "p95_over_anchor": round(p95 / max(pct(anchor, 95), 1e-9), 2),
        "goal_p95_ms": round(goal, 2),
        "loadavg": round(os.getloadavg()[0], 2),
    }


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=0, help="fill imported turns, not facts")
    parser.add_argument("--kinds", default="fact,episode",
                        help="with --turns: the kinds filter sent (\"\" for none)")  # fmt: skip
    parser.add_argument("--person", default="", help="a person filter sent with every query")
    parser.add_argument(
        "--period", action="store_true", help="with --turns: each question names one of its days"
    )
    parser.add_argument(
        "--asking", action="store_true", help="assistant turns ask: half the turns are keyed"
    )
    parser.add_argument(
        "--embed-ms", type=float, default=0.0,
        help="each question's embedding takes at least this long (a real embedder's time: "
        "the word lists run meanwhile); still excluded from the latencies",
    )  # fmt: skip
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--return", dest="mode", choices=["bullets", "full"], default="bullets")
    return parser.parse_args()


if __name__ == "__main__":
    result = asyncio.run(main(parse()))
    print(json.dumps(result, indent=2))
    sys.exit(0 if result["p95_ms"] <= result["goal_p95_ms"] else 1)
