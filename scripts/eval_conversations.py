#!/usr/bin/env python3
"""Retrieval over long multi-session conversations: BM25, vector and Lo-Bug's /v1/query.

For each conversation of tests/data/conversations/ (made by make_conversation_eval.py), a fresh
database is loaded through the daemon's own code: `lobug memory import`'s turn importer
(`transfer/import_turns`: turns, sessions, refs, embed and extract jobs in batches), then the
memory service's job handlers run to completion on a JobRunner (turn embeddings, heuristic fact
extraction with its judge and caps; summaries need an LLM, which heuristic mode does not call,
so there are none unless the code makes them without one). The service's clock is the
conversation's "now" (the questions' `asked_at`), so relative dates resolve alike everywhere.

Each question is then ranked three ways, each mapped to distinct source turns (refs):

- bm25:   FTS5 bm25() over turns_fts with lobug's query builder (search/fts.py), the turns only;
- vector: sqlite-vec KNN over turn_vectors with the question embedded by the same embedder;
- lobug:  MemoryService.query(kinds fact, summary, episode; top_k 50) — the /v1/query path; an
          episode maps to its turn, a fact or summary to its source turns, in order.

Metrics over the first 10 distinct source turns: recall_any@10 (some evidence turn), recall_all@10
(every evidence turn), MRR (first evidence turn, 0 beyond 50), overall and per question type.

    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python scripts/eval_conversations.py
    .venv/bin/python scripts/eval_conversations.py --embedder hashing --conversations 2
    HF_HUB_OFFLINE=1 .venv/bin/python scripts/eval_conversations.py --write   # docs too
    .venv/bin/python scripts/eval_conversations.py --set memory.max_writes_per_day=100000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from eval_retrieval import write_block  # noqa: E402  (scripts/: the doc's block writer)

from lobug.config import Config, load_config  # noqa: E402
from lobug.memory import MemoryService  # noqa: E402
from lobug.memory import service as memory_service  # noqa: E402
from lobug.memory.query import QueryRequest, QueryResult, Reach  # noqa: E402
from lobug.memory.search.fts import build_fts_query  # noqa: E402
from lobug.memory.transfer import import_turns as importer  # noqa: E402
from lobug.parts import parts  # noqa: E402
from lobug.storage.vectors import pack  # noqa: E402
from lobug.workers.runner import JobRunner  # noqa: E402

DATA = ROOT / "tests" / "data" / "conversations"
DOC = ROOT / "docs" / "retrieval-eval.md"
BEGIN = "<!-- conversations-eval:begin (scripts/eval_conversations.py --write) -->"
END = "<!-- conversations-eval:end -->"
METHODS = ("bm25", "vector", "lobug")
# A diagnostic, not one of the three: the same query over episodes only (the hybrid on turns,
# without facts and summaries taking the first places).
DIAGNOSTIC = "lobug_episodes"
ALL_METHODS = (*METHODS, DIAGNOSTIC)
TYPES = ("single_hop", "multi_hop", "temporal", "paraphrased")
# Temporal questions split: "when did…" (one event) and period questions ("last spring").
BUCKETS = (*TYPES, "temporal_when", "temporal_period")
K = 10  # recall over the first K distinct source turns
DEPTH = 50  # candidates per method, and how deep MRR looks
USER = "default"
LOBUG_KINDS = ("fact", "summary", "episode")
# Nothing listens there: heuristic extraction never calls the LLM, and the summary jobs that
# would (cascades) fail at once and back off instead of waiting on a timeout.
NO_OLLAMA = "http://127.0.0.1:9"


# -- loading a conversation through the daemon's code --------------------
def make_config(data_dir: Path, embedder: str, overrides: dict[str, Any]) -> Config:
    # Hits are reinforcement: written during the run they would make a question's result
    # depend on the questions asked before it. They are counted, never flushed, here.
    memory_service.HIT_FLUSH_S = 1e9
    values: dict[str, Any] = {
        "storage.data_dir": str(data_dir),
        "ollama.host": NO_OLLAMA,
        "ollama.timeout_s": 2.0,
        "memory.llm_timeout_s": 2.0,
        "memory.extraction_mode": "heuristic",
        "embedding.backend": embedder,
        "embedding.model": "all-MiniLM-L6-v2" if embedder == "local" else "hashing",
        "embedding.dim": 384,
        "log.level": "WARNING",
    }
    values.update(overrides)
    return load_config(None, env={}, overrides=values)


@dataclass
class Store:
    """One conversation's database and service, ready to query."""

    conv: dict[str, Any]
    config: Config
    db: Any
    service: MemoryService
    refs: dict[int, str]  # turn id -> ref
    stats: dict[str, Any] = field(default_factory=dict)


def import_lines(conv: dict[str, Any]) -> list[str]:
    """The conversation as `lobug memory import` JSONL lines (session per session, ref and
    speaker per turn)."""
    lines = []
    for session in conv["sessions"]:
        for turn in session["turns"]:
            row = {
                "session_id": f"{conv['id']}/{session['id']}",
                "role": turn["role"],
                "text": turn["text"],
                "ts": turn["ts"],
                "ref": turn["ref"],
                "speaker": turn["speaker"],
            }
            lines.append(json.dumps(row))
    return lines


@contextlib.asynccontextmanager
async def open_store(
    conv: dict[str, Any], workdir: Path, embedder: str, overrides: dict[str, Any]
) -> Any:
    # `scoring.KEY`: a ScoringWeights field or a list weight by list name (constants in the
    # daemon; varied here for a measurement), the rest config keys.
    weights = {k.split(".", 1)[1]: v for k, v in overrides.items() if k.startswith("scoring.")}
    settings = {k: v for k, v in overrides.items() if not k.startswith("scoring.")}
    config = make_config(workdir / conv["id"], embedder, settings)
    now = float(conv["now_ts"])

    def clock() -> float:
        return now

    async with parts(config, clock=clock) as got:
        db, service = got.db, got.memory
        assert service is not None
        service.weights = service.weights.changed(weights)
        runner = JobRunner(db, config.workers, clock)
        service.register(runner)
        started = time.monotonic()
        lines, errors = importer.read_lines(
            import_lines(conv), max_chars=config.chat.max_text_chars
        )
        if errors:
            raise SystemExit(f"{conv['id']}: the importer rejected lines: {errors[:3]}")
        result = importer.ImportResult()
        partners, batches = importer.plan(lines)
        for batch in batches:
            store = partial(
                importer.store_batch,
                partners=partners,
                now=clock(),
                user_id=USER,
                result=result,
            )
            await db.write(store, batch)
        ran = await drain(runner, db, clock)
        refs = dict(await db.read(_refs))
        stats = await db.read(_stats)
        stats.update(
            turns=result.stored, jobs_run=ran, ingest_s=round(time.monotonic() - started, 2)
        )
        yield Store(conv, config, db, service, refs, stats)


async def drain(runner: JobRunner, db: Any, clock: Callable[[], float]) -> int:
    """Run every job that is ready at the conversation's now (the clock does not move, so a
    job backing off — a summary without an LLM — is left pending, as the CLI leaves it)."""
    total = 0
    while True:
        ran = await runner.run_until_idle(timeout=3600)
        total += ran
        ready = await db.read(
            lambda c: c.execute(
                "SELECT COUNT(*) FROM jobs WHERE state = 'pending' AND run_after <= ?",
                (clock(),),
            ).fetchone()[0]
        )
        if not ran or not ready:
            return total


def _refs(conn: Any) -> list[tuple[int, str]]:
    return [(int(r[0]), str(r[1])) for r in conn.execute("SELECT id, ref FROM turns")]


def _stats(conn: Any) -> dict[str, Any]:
    """What the store holds after the jobs: memories by kind and status, jobs, counters."""
    memories = {
        f"{kind}.{status}": n
        for kind, status, n in conn.execute(
            "SELECT kind, status, COUNT(*) FROM memories GROUP BY kind, status ORDER BY 1, 2"
        )
    }
    jobs = {
        f"{kind}.{state}": n
        for kind, state, n in conn.execute(
            "SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state ORDER BY 1, 2"
        )
    }
    counters = {
        key.removeprefix("counter."): value
        for key, value in conn.execute(
            "SELECT key, value FROM meta WHERE key LIKE 'counter.%' ORDER BY key"
        )
    }
    vectors = conn.execute("SELECT COUNT(*) FROM turn_vectors").fetchone()[0]
    return {"memories": memories, "jobs": jobs, "counters": counters, "turn_vectors": vectors}


# -- the three methods --------------------
def bm25_ids(conn: Any, text: str, depth: int) -> list[int]:
    match = build_fts_query(text)
    if match is None:
        return []
    rows = conn.execute(
        "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? ORDER BY bm25(turns_fts) LIMIT ?",
        (match, depth),
    ).fetchall()
    return [int(r[0]) for r in rows]


def knn_ids(conn: Any, vector: Sequence[float], depth: int) -> list[int]:
    rows = conn.execute(
        "SELECT turn_id, distance FROM turn_vectors WHERE embedding MATCH ? AND k = ?"
        " ORDER BY distance",
        (pack(vector), depth),
    ).fetchall()
    return [int(r[0]) for r in rows if r[1] is not None]


def distinct(refs: Iterator[str | None] | Sequence[str | None], depth: int = DEPTH) -> list[str]:
    seen: dict[str, None] = {}
    for ref in refs:
        if ref is not None and ref not in seen:
            seen[ref] = None
            if len(seen) >= depth:
                break
    return list(seen)


def lobug_refs(results: Sequence[QueryResult]) -> tuple[list[str], list[str]]:
    """Distinct source turns in result order, and which kind put each one there."""
    refs: list[str] = []
    via: list[str] = []
    for result in results:
        for source in result.sources:
            ref = source.ref
            if ref is not None and ref not in refs and len(refs) < DEPTH:
                refs.append(ref)
                via.append(result.kind)
    return refs, via


# -- metrics --------------------
def metrics(ranked: Sequence[str], evidence: Sequence[str], stale: Sequence[str]) -> dict[str, Any]:
    position = {ref: i for i, ref in enumerate(ranked[:DEPTH], start=1)}
    ranks = [position.get(e) for e in evidence]
    found = [r for r in ranks if r is not None]
    first = min(found) if found else None
    row: dict[str, Any] = {
        "any": float(first is not None and first <= K),
        "all": float(all(r is not None and r <= K for r in ranks)),
        "mrr": 1.0 / first if first else 0.0,
        "rank": first,
    }
    if stale:
        stale_first = min((position[s] for s in stale if s in position), default=None)
        row["newest_first"] = float(
            first is not None and (stale_first is None or first < stale_first)
        )
    return row


def mean(rows: Sequence[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in rows if r.get(key) is not None]
    return sum(values) / len(values) if values else 0.0


@dataclass
class Outcome:
    """Per method, the metric rows of every question (with its id and type)."""

    rows: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {m: [] for m in ALL_METHODS}
    )
    stores: list[dict[str, Any]] = field(default_factory=list)
    crowd: Counter[str] = field(default_factory=Counter)  # kinds among lobug's first K refs
    evidence_via: Counter[str] = field(default_factory=Counter)  # kind that found evidence
    seconds: float = 0.0

    def of(self, method: str, bucket: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.rows[method] if bucket is None or bucket in r["buckets"]]


async def evaluate_conversation(
    store: Store, questions: Sequence[dict[str, Any]], outcome: Outcome
) -> None:
    service, db, refs = store.service, store.db, store.refs
    texts = [q["question"] for q in questions]
    vectors = await service.embedder.embed(texts)
    for question, vector in zip(questions, vectors, strict=True):
        text = question["question"]
        ranked: dict[str, list[str]] = {
            "bm25": distinct(refs.get(i) for i in await db.read(bm25_ids, text, DEPTH)),
            "vector": distinct(refs.get(i) for i in await db.read(knn_ids, vector, DEPTH)),
        }
        results = await service.query(
            QueryRequest(
                query=text, kinds=list(LOBUG_KINDS), top_k=DEPTH, reach=Reach(user_id=USER)
            )
        )
        ranked["lobug"], via = lobug_refs(results)
        episodes = await service.query(
            QueryRequest(query=text, kinds=["episode"], top_k=DEPTH, reach=Reach(user_id=USER))
        )
        ranked[DIAGNOSTIC] = lobug_refs(episodes)[0]
        outcome.crowd.update(via[:K])
        evidence = set(question["evidence"])
        for ref, kind in zip(ranked["lobug"][:K], via[:K], strict=True):
            if ref in evidence:
                outcome.evidence_via[kind] += 1
        buckets = [question["type"]]
        if question["type"] == "temporal":
            buckets.append("temporal_period" if "window" in question else "temporal_when")
        for method in ALL_METHODS:
            row = metrics(ranked[method], question["evidence"], question["stale"])
            row.update(id=question["id"], type=question["type"], buckets=buckets)
            outcome.rows[method].append(row)


async def run(
    conversations: Sequence[dict[str, Any]],
    questions: Sequence[dict[str, Any]],
    embedder: str,
    overrides: dict[str, Any],
    progress: Callable[[str], None] = lambda _: None,
) -> Outcome:
    outcome = Outcome()
    started = time.monotonic()
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        by_conv.setdefault(q["conversation"], []).append(q)
    with tempfile.TemporaryDirectory(prefix="lobug-conv-eval-") as tmp:
        for conv in conversations:
            async with open_store(conv, Path(tmp), embedder, overrides) as store:
                t0 = time.monotonic()
                await evaluate_conversation(store, by_conv.get(conv["id"], []), outcome)
                store.stats["query_s"] = round(time.monotonic() - t0, 2)
                store.stats["id"] = conv["id"]
                outcome.stores.append(store.stats)
                progress(
                    f"{conv['id']}: {store.stats['turns']} turns, "
                    f"{_facts(store.stats)} facts, ingest {store.stats['ingest_s']}s, "
                    f"queries {store.stats['query_s']}s"
                )
    outcome.seconds = time.monotonic() - started
    return outcome


def _facts(stats: dict[str, Any]) -> int:
    return sum(n for key, n in stats["memories"].items() if key.startswith("fact."))


# -- reporting --------------------
def summary(outcome: Outcome) -> dict[str, Any]:
    """The numbers behind the tables (and --json)."""
    out: dict[str, Any] = {"methods": {}, "seconds": round(outcome.seconds, 1)}
    for method in ALL_METHODS:
        per: dict[str, Any] = {}
        for qtype in (None, *BUCKETS):
            rows = outcome.of(method, qtype)
            per[qtype or "all"] = {
                "n": len(rows),
                "recall_any@10": round(mean(rows, "any"), 4),
                "recall_all@10": round(mean(rows, "all"), 4),
                "mrr": round(mean(rows, "mrr"), 4),
            }
        stale_rows = [r for r in outcome.rows[method] if "newest_first" in r]
        per["newest_first"] = round(mean(stale_rows, "newest_first"), 4)
        out["methods"][method] = per
    bm25 = out["methods"]["bm25"]["all"]["recall_any@10"]
    lobug = out["methods"]["lobug"]["all"]["recall_any@10"]
    out["lobug_over_bm25_any@10"] = round(lobug / bm25, 3) if bm25 else None
    out["lobug_kinds_in_first_10"] = dict(outcome.crowd.most_common())
    out["lobug_evidence_found_via"] = dict(outcome.evidence_via.most_common())
    out["stores"] = outcome.stores
    return out


def tables(data: dict[str, Any], embedder: str, shape: dict[str, Any]) -> str:
    methods = data["methods"]
    n_turns = sum(s["turns"] for s in data["stores"])
    label = {m: m for m in METHODS} | {DIAGNOSTIC: "*lobug, episodes only*"}
    lines = [
        f"Embedder `{embedder}`: {shape['questions']} questions over {len(data['stores'])} "
        f"conversations ({n_turns} turns), {data['seconds']:.0f}s wall time (loading, jobs and "
        "queries).",
        "",
        "| method | recall_any@10 | recall_all@10 | MRR | newest first |",
        "|---|---|---|---|---|",
    ]
    for method in ALL_METHODS:
        row = methods[method]["all"]
        lines.append(
            f"| {label[method]} | {row['recall_any@10']:.3f} | {row['recall_all@10']:.3f} | "
            f"{row['mrr']:.3f} | {methods[method]['newest_first']:.3f} |"
        )
    ratio = data["lobug_over_bm25_any@10"]
    if ratio is not None:
        lines += ["", f"Lo-Bug / BM25 recall_any@10: {ratio:.2f}x."]
    n = methods["bm25"]
    lines += [
        "",
        "Per question type — recall_any@10 / recall_all@10 / MRR (temporal also split into "
        '"when did…" and period questions such as "last spring"):',
        "",
        "| method | " + " | ".join(f"{_bucket(t)} ({n[t]['n']})" for t in BUCKETS) + " |",
        "|---|" + "---|" * len(BUCKETS),
    ]
    for method in ALL_METHODS:
        cells = [
            f"{methods[method][t]['recall_any@10']:.2f} / {methods[method][t]['recall_all@10']:.2f}"
            f" / {methods[method][t]['mrr']:.2f}"
            for t in BUCKETS
        ]
        lines.append(f"| {label[method]} | " + " | ".join(cells) + " |")
    crowd = data["lobug_kinds_in_first_10"]
    via = data["lobug_evidence_found_via"]
    facts = [_facts(s) for s in data["stores"]]
    capped = sum(int(s["counters"].get("extraction_capped_total", 0)) for s in data["stores"])
    summaries = sum(
        n for s in data["stores"] for k, n in s["memories"].items() if k.startswith("summary.")
    )
    spread = f"{min(facts)}" if min(facts) == max(facts) else f"{min(facts)}–{max(facts)}"
    slots = sum(crowd.values()) or 1
    lines += [
        "",
        f"Lo-Bug's store after the jobs: {spread} facts per conversation ({sum(facts)} in all; "
        f"{capped} candidates dropped by the write caps), {summaries} summaries. Of Lo-Bug's "
        f"first {K} distinct source turns per question, "
        + ", ".join(f"{n / slots:.0%} came from {kind}s" for kind, n in crowd.items())
        + "; the evidence turns found there came "
        + (", ".join(f"{n} from {kind}s" for kind, n in via.items()) or "from nothing")
        + ". The *episodes only* row is a diagnostic: the same query with kinds `episode`.",
    ]
    return "\n".join(lines)


def _bucket(name: str) -> str:
    return {"temporal_when": "temporal: when", "temporal_period": "temporal: period"}.get(
        name, name
    )


def section(body: str, shape: dict[str, Any]) -> str:
    types = shape["types"]
    return "\n".join(
        [
            "## Long multi-session conversations (the main eval)",
            "",
            "Can Lo-Bug find, in a year of someone's conversations, the turn that answers a "
            "question? `scripts/make_conversation_eval.py` writes the dataset "
            "(`tests/data/conversations/`, format and generation in its README) and "
            "`scripts/eval_conversations.py` measures it:",
            "",
            "```sh",
            "HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python "
            "scripts/eval_conversations.py --write",
            ".venv/bin/python scripts/make_conversation_eval.py --check   # dataset is current",
            ".venv/bin/python scripts/eval_conversations.py --embedder hashing --conversations 2",
            "```",
            "",
            f"**Dataset**: {shape['conversations']} conversations between two named people "
            f"(the first stored as `user`, the second as `assistant`), {shape['sessions']} dated "
            f"sessions over about a year, {shape['turns']} turns; {shape['questions']} questions "
            f"— {types['single_hop']} single_hop, {types['multi_hop']} multi_hop, "
            f'{types["temporal"]} temporal ("when did…", "what did I do last spring"), '
            f"{types['paraphrased']} paraphrased. {shape['no_shared_word']} questions "
            f"({shape['no_shared_word_share']:.0%}) share no content word with any of their "
            f"evidence turns; {shape['with_stale']} have a `stale` turn (a fact that changed "
            'later: "newest first" is the share where the current statement ranks above it).',
            "",
            "**Loading**: one fresh database per conversation, filled by the code of `lobug "
            "memory import` (turns with their session and `ref`, embed and extract jobs), then "
            "the memory service's job handlers run on a JobRunner: turn vectors, heuristic fact "
            "extraction (`memory.extraction_mode = heuristic`, no LLM), the judge and the write "
            "caps. The service's clock is the conversation's \"now\", a day after its last "
            "session; retrieval hits are not written during the run (no order effects).",
            "",
            "**Methods**, each mapped to distinct source turns: `bm25` — FTS5 `bm25()` over "
            "`turns_fts` with `build_fts_query`; `vector` — sqlite-vec KNN over `turn_vectors`; "
            "`lobug` — `MemoryService.query` (the /v1/query path) over facts, summaries and "
            "episodes with top_k 50: an episode is its turn, a fact or summary its source turns "
            "in order. **Metrics**: recall_any@10 (some evidence turn among the first 10 "
            "distinct source turns), recall_all@10 (all of them — a summary citing a whole "
            "session counts as that many turns, not one hit), MRR (0 beyond 50).",
            "",
            body,
            "",
            "Below: what moved these numbers, then the older, smaller household eval "
            "(`scripts/eval_retrieval.py`).",
        ]
    )


def wrap(text: str, width: int = 96) -> str:
    """Prose paragraphs wrapped like the rest of the page; tables, code and markers kept."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        keep = fenced or line.startswith(("|", "```", "<!--", "#")) or len(line) <= width
        out.append(line if keep else textwrap.fill(line, width, break_on_hyphens=False))
    return "\n".join(out)


def write_doc(text: str) -> list[Path]:
    """Put the section into the doc, in place of the one between its markers."""
    write_block(DOC, BEGIN, END, text)
    return [DOC]


# -- data --------------------
def _generator() -> ModuleType:
    import make_conversation_eval  # scripts/, beside this one; loaded only when needed

    return make_conversation_eval


def load_data(data: Path | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The dataset from DIR; without one, the committed files, or a fresh generation."""
    folder = data or DATA
    if (folder / "conversations.jsonl").exists():
        read = (folder / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
        conversations = [json.loads(line) for line in read]
        read = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        return conversations, [json.loads(line) for line in read]
    if data is not None:
        raise SystemExit(f"no conversations.jsonl in {data}")
    return _generator().build()


def _overrides(items: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--set wants KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N")
    parser.add_argument("--data", type=Path, default=None, help=f"default {DATA}")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--write", action="store_true", help=f"update {DOC.relative_to(ROOT)}")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override for every store, e.g. memory.max_writes_per_day=100000",
    )
    parser.add_argument("--verbose", action="store_true", help="the daemon's log on stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR)
    conversations, questions = load_data(args.data)
    if args.conversations:
        conversations = conversations[: args.conversations]
        keep = {c["id"] for c in conversations}
        questions = [q for q in questions if q["conversation"] in keep]
    shape = _generator().check(conversations, questions)
    progress = (lambda line: print(line, file=sys.stderr)) if not args.json else (lambda _: None)
    outcome = asyncio.run(
        run(conversations, questions, args.embedder, _overrides(args.set), progress)
    )
    data = summary(outcome)
    if args.json:
        data["questions"] = {m: outcome.rows[m] for m in ALL_METHODS}
        print(json.dumps(data, indent=1))
    else:
        print(tables(data, args.embedder, shape))
    if args.write:
        if args.conversations:
            raise SystemExit("--write needs the whole dataset (no --conversations)")
        for path in write_doc(wrap(section(tables(data, args.embedder, shape), shape))):
            print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
