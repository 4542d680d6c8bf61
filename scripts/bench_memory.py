#!/usr/bin/env python3
"""Benchmark long-term memory at 1k, 10k and 100k facts on a fresh database per size.

Measures, per size:
  - insert throughput: facts/s through the real write path (memory row + ADD history + FTS
    trigger + vec0 vector), 1000 facts per transaction; embedding is timed separately;
  - dedup write cost: one extracted fact reconciled (hash, fact key, BM25 + KNN neighbours for
    near duplicates, insert, entities, relations, delta), per fact;
  - edge cost (seed 001 §2: <= 2 ms per edge): `link_neighbours` as the embed job runs it when
    a fact's vector arrives (its KNN scan of the nearest facts, then each edge with its
    history and `link` event rows, one transaction), the call's time per edge it made; and
    the same without the scan (`edge_write_ms_per_edge`: a write that has the neighbours);
  - retrieval p50/p95: the prompt's hybrid search (vector KNN above the floor + BM25 + entity,
    RRF, re-score) of the top-k facts, through the reader pool as the daemon does it (query
    embedding excluded: vectors are precomputed);
  - after-embedding p50/p95: the same search as a turn runs it, with a simulated 20 ms
    embedding: the word lists run while it lasts, so this is what the turn waits for after
    its embedding (the KNN scan and the fusion);
  - query p50/p95: `MemoryService.query` (the /v1 query: the same search without the floor,
    50 candidates per list, sources attached), embedding excluded;
  - prompt sections p50/p95: `MemoryService.prompt_sections`, i.e. the whole hot-path memory
    overhead of a turn (gate, cached base memory, hybrid search, formatting), embedding
    excluded;
  - DB size per fact (file after a WAL checkpoint; rows, history, FTS and vectors together)
    and process RSS (VmRSS, which includes the mmap'd DB pages the KNN touched).

Usage: .venv/bin/python scripts/bench_memory.py [--sizes 1000,10000,100000] [--queries 200]
       [--embedder hashing|local] [--dim 384] [--keep DIR] [--no-mmap] [--checkpoint]
The database is the daemon's (`parts.make_database`: the in-memory vector index) with the
planner statistics a running daemon has (`Database.optimize`, as at its start and daily GC).
Targets on a 2-core machine (384-d): retrieval p95 <= 10 ms at 10k and <= 60 ms at 100k;
prompt sections p95 <= 15 ms at 10k; edge creation <= 2 ms per edge at every size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lobug.config import Config, load_config  # noqa: E402
from lobug.llm.embedders import Embedder, make_embedder  # noqa: E402
from lobug.llm.ollama_chat import OllamaChat  # noqa: E402
from lobug.memory.graph import relations  # noqa: E402
from lobug.memory.query import QueryRequest  # noqa: E402
from lobug.memory.search import prompt_context as retrieval  # noqa: E402
from lobug.memory.search import runner  # noqa: E402
from lobug.memory.service import MemoryService  # noqa: E402
from lobug.memory.settings import write_policy  # noqa: E402
from lobug.memory.summaries import base_memory  # noqa: E402
from lobug.memory.table import rows as store  # noqa: E402
from lobug.memory.vectors import knn  # noqa: E402
from lobug.memory.write.candidate import Candidate  # noqa: E402
from lobug.memory.write.reconcile import Origin, reconcile  # noqa: E402
from lobug.parts import make_database  # noqa: E402
from lobug.storage import sqlite as sqlite_driver  # noqa: E402
from lobug.storage.database import Database  # noqa: E402
from lobug.storage.migrations import migrate  # noqa: E402

VERBS = "likes owns visited plans repaired borrowed painted cooked studied photographed".split()
ADJS = "red old tiny quiet bright wooden frozen spicy vintage electric".split()
NOUNS = (
    "bicycle guitar garden lighthouse recipe telescope notebook kayak teapot violin "
    "lantern mountain bakery museum river orchard robot sailboat library greenhouse"
).split()
PLACES = "Lisbon Oslo Kyoto Denver Cairo Lima Perth Dublin Austin Quebec".split()
DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
BASE_WORDS = 380
EMBED_S = 0.02  # a simulated query embedding (a local Ollama embed call is about this)


def fact_text(rng: random.Random, i: int) -> str:
    return (
        f"The user {rng.choice(VERBS)} a {rng.choice(ADJS)} {rng.choice(NOUNS)} "
        f"in {rng.choice(PLACES)} on {rng.choice(DAYS)} (entry {i})."
    )


def query_text(rng: random.Random) -> str:
    return f"what about my {rng.choice(ADJS)} {rng.choice(NOUNS)} in {rng.choice(PLACES)}?"


def pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def rss_mib() -> dict[str, float]:
    """Resident memory: anonymous (heap) and file-backed (mostly the mmap'd database pages,
    shared with the page cache and reclaimable), from /proc/self/status."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    kib = {k: int(fields[k].split()[0]) for k in ("VmRSS", "VmHWM", "RssAnon", "RssFile")}
    return {
        "rss_mib": round(kib["VmRSS"] / 1024, 1),
        "rss_anon_mib": round(kib["RssAnon"] / 1024, 1),
        "rss_file_mib": round(kib["RssFile"] / 1024, 1),
        "rss_peak_mib": round(kib["VmHWM"] / 1024, 1),
    }


class Precomputed:
    """An embedder that answers from a table: the benchmark excludes embedding time."""

    def __init__(self, name: str, dim: int, table: dict[str, list[float]]) -> None:
        self.name, self.dim, self.table = name, dim, table

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.table[t] for t in texts]


def insert_batch(conn: Any, texts: list[str], vectors: list[list[float]], now: float) -> list[int]:
    """Facts with their vectors and no relation edges; returns their ids."""
    ids = []
    for text, vector in zip(texts, vectors, strict=True):
        memory_id = store.insert_memory(
            conn,
            user_id="default",
            kind="fact",
            content=text,
            category="knowledge",
            now=now,
            actor="bench",
        )
        knn.put_memory_vector(conn, memory_id, vector)
        ids.append(memory_id)
    return ids


async def fill(db: Database, embedder: Embedder, n: int, rng: random.Random) -> dict[str, float]:
    embed_s = insert_s = 0.0
    for start in range(0, n, 1000):
        texts = [fact_text(rng, i) for i in range(start, min(n, start + 1000))]
        t0 = time.perf_counter()
        vectors = await embedder.embed(texts)
        t1 = time.perf_counter()
        await db.write(insert_batch, texts, vectors, time.time())
        t2 = time.perf_counter()
        embed_s += t1 - t0
        insert_s += t2 - t1
        if start and start % 20000 == 0:
            print(f"  … {start} facts", file=sys.stderr, flush=True)
    return {"insert_facts_per_s": n / insert_s, "embed_facts_per_s": n / embed_s}


async def bench_size(
    n: int, args: argparse.Namespace, config: Config, embedder: Embedder
) -> dict[str, Any]:
    rng = random.Random(n)
    db = make_database(config)  # as the daemon builds it: with the in-memory vector index
    await db.open()
    await db.write_raw(migrate)
    base = " ".join(["Profile"] + [rng.choice(NOUNS) for _ in range(BASE_WORDS)])
    await db.write(
        lambda c: base_memory.set_base(c, "default", base, now=1.0, actor="bench", meta={})
    )
    started = time.perf_counter()
    result: dict[str, Any] = {"facts": n, "loadavg_start": os.getloadavg()[0]}
    # The service's setup makes the vec0 tables for this model and dimension.
    queries = [query_text(rng) for _ in range(args.queries)]
    table = dict(zip(queries, await embedder.embed(queries), strict=True))
    pre = Precomputed(embedder.name, embedder.dim, table)
    llm = OllamaChat(config.ollama)
    service = MemoryService(db=db, llm=llm, embedder=pre, config=config)  # type: ignore[arg-type]
    await service.start()
    result.update(await fill(db, embedder, n, rng))
    # The planner's statistics, as a daemon has them after a start or its daily GC.
    await db.optimize()
    result["fill_s"] = round(time.perf_counter() - started, 1)
    result["rss_after_fill"] = rss_mib()
    await db.write_raw(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())

    # Dedup write cost: the full reconcile of one new fact, 100 facts, one tx each.
    fresh = [fact_text(rng, n + i) for i in range(100)]
    fresh_vectors = await embedder.embed(fresh)
    writing, origin = write_policy(config), Origin(actor="bench")
    times = []
    for text, fresh_vector in zip(fresh, fresh_vectors, strict=True):
        t0 = time.perf_counter()
        await db.write(
            partial(reconcile, origin=origin, policy=writing, now=time.time()),
            Candidate(text, "knowledge", 0.5, ()),
            fresh_vector,
        )
        times.append((time.perf_counter() - t0) * 1000)
    result["reconcile_ms_p50"] = round(pct(times, 50), 2)

    # Seed 001 §2, "edge creation <= 2 ms per edge": facts stored without edges, then
    # `link_neighbours` for each in its own transaction (the edges, their LINK history and
    # `link` event rows), the time per edge made: `link_ms_per_edge` as the embed job calls it
    # (its own KNN scan of the nearest facts included), `edge_write_ms_per_edge` as a write
    # that has the neighbours already calls it (reconcile: one KNN scan for both).
    for key, scan in (("link_ms_per_edge", True), ("edge_write_ms_per_edge", False)):
        linking = [fact_text(rng, n + 100 + i) for i in range(100)]
        link_vectors = await embedder.embed(linking)
        link_ids = await db.write(insert_batch, linking, link_vectors, time.time())
        link_s, edges = 0.0, 0
        for memory_id, link_vector in zip(link_ids, link_vectors, strict=True):
            found = None
            if not scan:
                found = await db.read(
                    partial(knn.nearest_facts, user_id="default", k=writing.link_k + 1),
                    link_vector,
                )
            link = partial(
                relations.link_neighbours, user_id="default", link_min=writing.link_min,
                k=writing.link_k, now=time.time(), actor="bench", found=found,
            )  # fmt: skip
            t0 = time.perf_counter()
            made = await db.write(link, memory_id, link_vector)
            link_s += time.perf_counter() - t0
            edges += len(made)
        result["link_edges_per_fact"] = round(edges / len(link_ids), 2)
        result[key] = round(link_s * 1000 / max(edges, 1), 3)

    wal = Path(str(config.storage.db_path) + "-wal")
    result["wal_kib_before_retrieval"] = round(wal.stat().st_size / 1024) if wal.exists() else 0
    if args.checkpoint:
        await db.write_raw(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())

    # Retrieval: the prompt's hybrid search through the reader pool, vector and word lists on
    # two connections at once as the daemon does it (warm-up first, as a running daemon is).
    def plan(q: str) -> Any:
        return retrieval.context_plan(
            q,
            user_id="default",
            session_id="bench",
            k=config.memory.top_k,
            min_similarity=config.memory.min_similarity,
            weights=service.weights,
            window_start=None,  # a fresh session: the working memory holds none of its turns
            now=time.time(),
        )

    top_k, policy = config.memory.top_k, service.categories

    async def vector(q: str) -> list[float]:
        return table[q]

    async def context(req: Any, vector: Any) -> Any:
        """The memories of MemoryService.prompt_sections: the word lists while the query is
        embedded, then one reader round trip (the owner's notes left out)."""
        words = await runner.while_embedding(db, req, vector)
        read = partial(
            retrieval.read_context, now=time.time(), k=top_k, policy=policy, want_base=False
        )
        return await db.read(read, req, words.vector, await words.lists)

    async def read(q: str) -> Any:
        return await context(plan(q), vector(q))

    for q in queries[:10]:
        await read(q)
    times, hits = [], []
    for q in queries:
        t0 = time.perf_counter()
        found = (await read(q)).found
        times.append((time.perf_counter() - t0) * 1000)
        hits.append(len(found))
    result["retrieval_ms_p50"] = round(pct(times, 50), 2)
    result["retrieval_ms_p95"] = round(pct(times, 95), 2)
    result["hits_mean"] = round(statistics.mean(hits), 2)

    # What a real turn waits for after its embedding: the word lists run while the query is
    # embedded, so only the KNN scan and the fusion follow it. Embedding simulated (20 ms).
    async def embedded(q: str, started: list[float]) -> list[float]:
        await asyncio.sleep(EMBED_S)
        started.append(time.perf_counter())
        return table[q]

    times = []
    for q in queries:
        mark: list[float] = []
        await context(plan(q), embedded(q, mark))
        times.append((time.perf_counter() - mark[0]) * 1000)
    result["after_embedding_ms_p50"] = round(pct(times, 50), 2)
    result["after_embedding_ms_p95"] = round(pct(times, 95), 2)
    result["rss_after_retrieval"] = rss_mib()

    times = []
    for q in queries:
        t0 = time.perf_counter()
        await service.query(QueryRequest(query=q, top_k=config.memory.top_k))
        times.append((time.perf_counter() - t0) * 1000)
    result["query_ms_p50"] = round(pct(times, 50), 2)
    result["query_ms_p95"] = round(pct(times, 95), 2)

    times = []
    for q in queries:
        t0 = time.perf_counter()
        sections = await service.prompt_sections(user_id="default", session_id="s", text=q)
        times.append((time.perf_counter() - t0) * 1000)
    assert any(s.startswith("[Long-term memory]") for s in sections.all())
    result["sections_ms_p50"] = round(pct(times, 50), 2)
    result["sections_ms_p95"] = round(pct(times, 95), 2)

    await db.write_raw(lambda c: c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall())
    size = config.storage.db_path.stat().st_size
    result["db_mib"] = round(size / 2**20, 1)
    result["db_bytes_per_fact"] = round(size / n)
    result.update(rss_mib())
    result["loadavg_end"] = os.getloadavg()[0]
    await service.close()
    await llm.close()
    await db.close()
    return result


def check(results: list[dict[str, Any]]) -> list[str]:
    misses = []
    for r in results:
        targets = []
        if r["facts"] == 10_000:
            targets = [("retrieval_ms_p95", 10.0), ("sections_ms_p95", 15.0)]
        elif r["facts"] == 100_000:
            targets = [("retrieval_ms_p95", 60.0)]
        targets.append(("link_ms_per_edge", 2.0))
        for key, limit in targets:
            if r[key] > limit:
                misses.append(f"{r['facts']} facts: {key} = {r[key]} ms > {limit} ms")
    return misses


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embedder", choices=["hashing", "local"], default="hashing")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--keep", type=Path, help="keep the databases in this directory")
    parser.add_argument("--no-mmap", action="store_true", help="A/B: SQLite reads without mmap")
    parser.add_argument(
        "--checkpoint", action="store_true", help="A/B: checkpoint the WAL before the reads"
    )
    args = parser.parse_args()
    if args.no_mmap:
        sqlite_driver.MMAP_BYTES = 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    workroot = args.keep or Path(tempfile.mkdtemp(prefix="lobug-bench-memory-"))
    results = []
    embedder: Embedder | None = None
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            overrides = {
                "storage.data_dir": str(workroot / f"facts-{n}"),
                "embedding.backend": args.embedder,
                "embedding.dim": args.dim if args.embedder == "hashing" else 384,
                "embedding.model": "all-MiniLM-L6-v2",
                "log.level": "WARNING",
            }
            config = load_config(None, env={}, overrides=overrides)
            if embedder is None:  # one embedder (one model load) for every size
                embedder = make_embedder(config)
            print(f"filling {n} facts ({embedder.name}, {embedder.dim}-d)…", file=sys.stderr)
            result = await bench_size(n, args, config, embedder)
            print(json.dumps(result), flush=True)
            results.append(result)
    finally:
        if args.keep is None:
            shutil.rmtree(workroot, ignore_errors=True)
    misses = check(results)
    for miss in misses:
        print(f"TARGET MISSED: {miss}", file=sys.stderr)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
