#!/usr/bin/env python3
"""Measure retrieval quality on tests/data: vector, BM25, hybrid (RRF) and hybrid + re-score.

Loads every turn of the dataset into a fresh temporary database (as the daemon stores them:
`turns`, `turns_fts`, `turn_vectors`, entities from regex NER), embeds them, ranks the turns
for each question with each method, and reports recall@5/@10 and MRR as a markdown table.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/eval_retrieval.py            # local MiniLM
    .venv/bin/python scripts/eval_retrieval.py --embedder hashing --no-write
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lobug.config import EmbeddingConfig  # noqa: E402
from lobug.conversation import insert_turn  # noqa: E402
from lobug.llm.embedders import HashingEmbedder, LocalEmbedder  # noqa: E402
from lobug.memory.graph.entities import create_or_get_entity, extract_entities  # noqa: E402
from lobug.memory.search.hybrid import (  # noqa: E402
    TURNS,
    entity_ranks,
    fuse_and_rescore,
    ranked_lists,
    text_ranks,
    vector_ranks,
)
from lobug.memory.search.scoring import ScoringWeights  # noqa: E402
from lobug.storage.migrations import migrate  # noqa: E402
from lobug.storage.sqlite import connect  # noqa: E402
from lobug.storage.vectors import create_vector_tables, pack  # noqa: E402

DATA = ROOT / "tests" / "data"
DOC = ROOT / "docs" / "retrieval-eval.md"
BEGIN = "<!-- retrieval-eval:begin (scripts/eval_retrieval.py) -->"
END = "<!-- retrieval-eval:end -->"
NOW = datetime(2026, 6, 21, tzinfo=UTC).timestamp()  # "today", after the last session
DEPTH = 50  # candidates per list, and how deep MRR looks
METHODS = ("vector", "bm25", "entity", "hybrid", "hybrid+entity", "hybrid+rescore")
TYPES = ("direct", "paraphrase", "updated_fact", "multi_hop", "distractor-heavy")


@dataclass
class Corpus:
    conn: Any
    ids: dict[str, int]  # turn key → turn id
    embed: Callable[[Sequence[str]], list[list[float]]]


def load(embedder: str, workdir: Path) -> tuple[Corpus, list[dict[str, Any]]]:
    conversations = [json.loads(line) for line in (DATA / "eval_conversations.jsonl").open()]
    questions = [json.loads(line) for line in (DATA / "eval_questions.jsonl").open()]
    embed, dim = _embedder(embedder)
    conn = connect(workdir / "eval.db")
    migrate(conn)
    create_vector_tables(conn, dim)
    turns = sorted(
        (
            (turn, f"{conv['id']}/{session['id']}")
            for conv in conversations
            for session in conv["sessions"]
            for turn in session["turns"]
        ),
        key=lambda pair: pair[0]["ts"],
    )
    ids: dict[str, int] = {}
    conn.execute("BEGIN")
    for turn, session_id in turns:  # in time order, so turn ids grow with time as in the daemon
        record = insert_turn(
            conn, session_id=session_id, role=turn["role"], text=turn["text"], ts=turn["ts"]
        )
        ids[turn["key"]] = record.id
        for entity in extract_entities(turn["text"]):
            create_or_get_entity(conn, "default", entity, turn["ts"])
    vectors = embed([turn["text"] for turn, _ in turns])
    for (turn, _), vector in zip(turns, vectors, strict=True):
        conn.execute(
            "INSERT INTO turn_vectors (turn_id, embedding) VALUES (?, ?)",
            (ids[turn["key"]], pack(vector)),
        )
    conn.execute("COMMIT")
    return Corpus(conn, ids, embed), questions


def _embedder(name: str) -> tuple[Callable[[Sequence[str]], list[list[float]]], int]:
    if name == "hashing":
        hashing = HashingEmbedder(384)
        return (lambda texts: [hashing.embed_one(t) for t in texts]), 384
    local = LocalEmbedder(EmbeddingConfig(backend="local", model="all-MiniLM-L6-v2", dim=384))
    return local.encode, 384


def rankings(
    corpus: Corpus, question: str, vector: list[float], weights: ScoringWeights, depth: int
) -> dict[str, list[int]]:
    conn = corpus.conn

    def fused(lists: tuple[str, ...] | None = None, now: float | None = None) -> list[int]:
        # What the search runner does per corpus: the ranked lists, then fusion (+ re-score).
        found = ranked_lists(
            conn, question, vector, corpus=TURNS, weights=weights, depth=depth, lists=lists
        )
        hits, _ = fuse_and_rescore(conn, found, corpus=TURNS, weights=weights, now=now)
        return [h.id for h in hits[:depth]]

    return {
        "hybrid+entity": fused(("vector", "bm25", "entity")),
        "vector": vector_ranks(conn, vector, depth, corpus=TURNS),
        "bm25": text_ranks(conn, question, depth, corpus=TURNS),
        "entity": entity_ranks(conn, question, depth, corpus=TURNS),
        "hybrid": fused(),
        "hybrid+rescore": fused(now=NOW),
    }


def metrics(ranked: list[int], evidence: list[int], stale: list[int]) -> dict[str, float]:
    position = {doc: i for i, doc in enumerate(ranked, start=1)}
    ranks = [position.get(e) for e in evidence]
    found = [r for r in ranks if r is not None]
    first = min(found) if found else None
    row = {"mrr": 1.0 / first if first else 0.0}
    for k in (5, 10):
        row[f"any@{k}"] = float(first is not None and first <= k)
        row[f"all@{k}"] = float(all(r is not None and r <= k for r in ranks))
    if stale:
        stale_first = min((position[s] for s in stale if s in position), default=None)
        row["newest_first"] = float(
            first is not None and (stale_first is None or first < stale_first)
        )
    return row


def evaluate(
    corpus: Corpus,
    questions: list[dict[str, Any]],
    weights: ScoringWeights,
    depth: int = DEPTH,
    vectors: list[list[float]] | None = None,
) -> dict[str, dict[str, list[dict[str, float]]]]:
    """Per method, per question type ("all" too): the metric rows of each question."""
    if vectors is None:
        vectors = corpus.embed([q["question"] for q in questions])
    results: dict[str, dict[str, list[dict[str, float]]]] = {m: {} for m in METHODS}
    for index, (question, vector) in enumerate(zip(questions, vectors, strict=True)):
        evidence = [corpus.ids[k] for k in question["evidence"]]
        stale = [corpus.ids[k] for k in question["stale"]]
        for method, ranked in rankings(
            corpus, question["question"], vector, weights, depth
        ).items():
            row = metrics(ranked, evidence, stale)
            # Two halves (odd/even questions) show whether a difference holds up on each.
            for bucket in ("all", question["type"], f"half{index % 2}"):
                results[method].setdefault(bucket, []).append(row)
    return results


def mean(rows: list[dict[str, float]], key: str) -> float:
    values = [r[key] for r in rows if key in r]
    return sum(values) / len(values) if values else 0.0


def tables(results: dict[str, dict[str, list[dict[str, float]]]]) -> str:
    lines: list[str] = [
        "| method | R@5 any | R@5 all | R@10 any | R@10 all | MRR | MRR half 1 / 2 |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in METHODS:
        rows = results[method]["all"]
        cells = [mean(rows, k) for k in ("any@5", "all@5", "any@10", "all@10", "mrr")]
        halves = " / ".join(f"{mean(results[method][h], 'mrr'):.3f}" for h in ("half0", "half1"))
        lines.append(f"| {method} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {halves} |")
    lines += [
        "",
        "Per question type — R@5 any / MRR (updated_fact also: newest value ranked "
        "above the stale one):",
        "",
        "| method | " + " | ".join(TYPES) + " | newest first |",
        "|---|" + "---|" * (len(TYPES) + 1),
    ]
    for method in METHODS:
        by_type = [
            f"{mean(results[method].get(t, []), 'any@5'):.2f} / "
            f"{mean(results[method].get(t, []), 'mrr'):.2f}"
            for t in TYPES
        ]
        newest = mean(results[method].get("updated_fact", []), "newest_first")
        lines.append(f"| {method} | " + " | ".join(by_type) + f" | {newest:.2f} |")
    return "\n".join(lines)


# Each variant changes one knob of the defaults; the defaults are the first row.
VARIANTS: list[tuple[str, dict[str, float]]] = [
    ("defaults", {}),
    ("plain RRF: every BM25 hit joins (min words 1)", {"bm25_min_words": 1}),
    ("BM25 hits must share 3 words", {"bm25_min_words": 3}),
    ("BM25 list weight 1.0", {"bm25": 1.0}),
    ("BM25 list weight 0.25", {"bm25": 0.25}),
    ("re-score w_memory 0.6", {"w_memory": 0.6}),
    ("re-score w_memory 0.6, λ 0.05/day", {"w_memory": 0.6, "rescore_lambda": 0.05}),
]


def sensitivity(
    corpus: Corpus, questions: list[dict[str, Any]], base: ScoringWeights, depth: int
) -> str:
    vectors = corpus.embed([q["question"] for q in questions])
    lines = [
        "| variant | hybrid R@5 | hybrid R@10 | hybrid MRR | +rescore MRR | newest first |",
        "|---|---|---|---|---|---|",
    ]
    for label, changes in VARIANTS:
        weights = base.changed(changes)
        results = evaluate(corpus, questions, weights, depth, vectors)
        hybrid, rescored = results["hybrid"]["all"], results["hybrid+rescore"]
        cells = [
            mean(hybrid, "any@5"),
            mean(hybrid, "any@10"),
            mean(hybrid, "mrr"),
            mean(rescored["all"], "mrr"),
            mean(rescored["updated_fact"], "newest_first"),
        ]
        lines.append(f"| {label} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--embedder",
        action="append",
        choices=("local", "hashing"),
        help="repeatable; default: local and hashing",
    )
    parser.add_argument("--depth", type=int, default=DEPTH)
    parser.add_argument("--no-write", action="store_true", help="print only; keep the doc")
    parser.add_argument("--quick", action="store_true", help="skip the sensitivity runs")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a ScoringWeights field (sensitivity runs), e.g. "
        "--set w_memory=0.3 --set bm25=1.0 (list weights by list name)",
    )
    args = parser.parse_args()
    weights = _weights(args.set)
    sections = []
    for embedder in args.embedder or ["local", "hashing"]:
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            corpus, questions = load(embedder, Path(tmp))
            results = evaluate(corpus, questions, weights, args.depth)
            extra = (
                sensitivity(corpus, questions, weights, args.depth)
                if (embedder == "local" and not args.quick)
                else ""
            )
            corpus.conn.close()
        summary = (
            f"Embedder `{embedder}`: {len(questions)} questions over {len(corpus.ids)} "
            f"turns, candidate depth {args.depth}, {time.monotonic() - started:.1f}s."
        )
        sections.append(summary + "\n\n" + tables(results))
        if extra:
            sections.append(
                "Sensitivity (embedder `local`; each row changes one setting):\n\n" + extra
            )
        print(sections[-1] + "\n")
    if not args.no_write:
        settings = f"Settings: {_describe(weights)}."
        write_block(DOC, BEGIN, END, "\n\n".join([settings, *sections]))
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


def _weights(overrides: list[str]) -> ScoringWeights:
    changes = {}
    for item in overrides:
        name, _, value = item.partition("=")
        changes[name] = float(value)
    return ScoringWeights().changed(changes)


def write_block(path: Path, begin: str, end: str, body: str) -> None:
    """Replace what lies between the `begin` and `end` markers of `path` with `body`: each eval
    script writes its own tables; the prose around them is edited in the doc itself."""
    old = path.read_text(encoding="utf-8")
    if begin not in old or end not in old:
        raise SystemExit(f"{path} has lost its markers {begin!r} … {end!r}: put them back")
    head, rest = old.split(begin, 1)
    path.write_text(f"{head}{begin}\n{body}\n{end}{rest.split(end, 1)[1]}", encoding="utf-8")


def _describe(w: ScoringWeights) -> str:
    lists = ", ".join(f"{name} {value:g}" for name, value in w.list_weights.items())
    return (
        f"RRF k={w.rrf_k}; list weights {lists}; BM25 hits must share "
        f"{w.bm25_min_words} query words; re-score w_memory={w.w_memory:g}, "
        f"rescore λ={w.rescore_lambda:g}/day, w_rel={w.w_rel:g}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
