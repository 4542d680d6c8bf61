#!/usr/bin/env python3
"""Retrieval over real long conversations: LoCoMo, through `lobug memory import` and /v1/query.

LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents",
arXiv:2402.17753, CC BY-NC 4.0) is read from ../shared/datasets/locomo10.json (or --data); it is
never copied into the project, and without it the script says so and exits 0.

Each conversation is imported as a user would (`lobug memory import` lines: `session_id`, `ts`
from the session's date, `speaker`, `ref` = `dia_id`; a shared photo as its caption) into a
fresh database by the importer's code, the memory service's job handlers run to completion
(turn vectors, heuristic fact extraction), and every question of categories 1–4 (1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop; 5, adversarial, has no evidence) is ranked:

- bm25:   FTS5 bm25() over turns_fts with the project's query builder, the turns only;
- vector: sqlite-vec KNN over turn_vectors (the question embedded by the same embedder);
- rrf:    reciprocal-rank fusion (k 60) of those two lists, 50 deep each;
- lobug:  MemoryService.query (the /v1/query path): facts, summaries and episodes, top_k 50.

Metrics over the first 10 distinct source turns (as scripts/eval_conversations.py):
recall_any@10, recall_all@10, hit@1 (an evidence turn first), MRR (0 beyond 50); per
category and overall, for conversations 1–5 (tune on these only), 6–10 and all ten.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/eval_locomo.py
    HF_HUB_OFFLINE=1 .venv/bin/python scripts/eval_locomo.py --only 1-5 --cache /tmp/locomo.emb
    HF_HUB_OFFLINE=1 .venv/bin/python scripts/eval_locomo.py --write   # docs/retrieval-eval.md
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import pickle
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import eval_conversations as ev  # noqa: E402  (scripts/: its loader, job handlers, metrics)

from lobug.memory.query import QueryRequest, Reach  # noqa: E402

DATA = ROOT.parent / "shared" / "datasets" / "locomo10.json"
DOC = ROOT / "docs" / "retrieval-eval.md"
BEGIN = "<!-- locomo-eval:begin (scripts/eval_locomo.py --write) -->"
END = "<!-- locomo-eval:end -->"
METHODS = ("bm25", "vector", "rrf", "lobug")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
GROUPS = {"1-5": range(0, 5), "6-10": range(5, 10), "all": range(0, 10)}
K = 10
DEPTH = 50
RRF_K = 60
USER = "default"
LOBUG_KINDS = ("fact", "summary", "episode")
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


# -- the dataset as `lobug memory import` lines --------------------
def session_time(text: str) -> float:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as Unix seconds (read as UTC)."""
    return datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=UTC).timestamp()


def turn_text(turn: dict[str, Any]) -> str:
    """What was said; a shared photo is its caption, as a chat client would show it."""
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if caption:
        shown = f"[shares a photo: {str(caption).strip()}]"
        text = f"{text} {shown}" if text else shown
    return text


def sessions_of(sample: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """(number, date text, turns) of each session, in order."""
    conv = sample["conversation"]
    found = []
    for key, turns in conv.items():
        if key.startswith("session_") and isinstance(turns, list) and turns:
            number = int(key.removeprefix("session_"))
            found.append((number, str(conv[f"{key}_date_time"]), turns))
    return sorted(found, key=lambda s: s[0])


def to_conversation(sample: dict[str, Any]) -> dict[str, Any]:
    """The conversation in eval_conversations' shape: the first speaker is the user, the
    second the assistant; each turn a second after the one before, from the session's date."""
    conv = sample["conversation"]
    roles = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
    sessions = []
    last = 0.0
    for number, date, turns in sessions_of(sample):
        start = session_time(date)
        rows = []
        for i, turn in enumerate(turns):
            text = turn_text(turn)
            if not text:
                continue
            rows.append(
                {
                    "role": roles.get(turn["speaker"], "assistant"),
                    "text": text,
                    "ts": start + i,
                    "ref": turn["dia_id"],
                    "speaker": turn["speaker"],
                }
            )
            last = max(last, start + i)
        sessions.append({"id": f"session_{number}", "turns": rows})
    return {"id": sample["sample_id"], "sessions": sessions, "now_ts": last + 86_400.0}


def evidence_of(item: dict[str, Any]) -> list[str]:
    """The dia_ids a question cites ("D8:6; D9:17" in one string is two of them)."""
    refs: list[str] = []
    for entry in item.get("evidence") or []:
        for part in str(entry).replace(";", " ").replace(",", " ").split():
            if part not in refs:
                refs.append(part)
    return refs


def questions_of(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """Categories 1–4 with at least one evidence turn."""
    out = []
    for i, item in enumerate(sample["qa"]):
        category = int(item.get("category", 0))
        evidence = evidence_of(item)
        if category in CATEGORIES and evidence:
            out.append(
                {
                    "id": f"{sample['sample_id']}#{i}",
                    "conversation": sample["sample_id"],
                    "question": str(item["question"]),
                    "evidence": evidence,
                    "category": category,
                }
            )
    return out


# -- metrics --------------------
def rrf(lists: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Plain reciprocal-rank fusion of ranked refs; ties keep the order of first appearance."""
    scores: dict[str, float] = {}
    for ranked in lists:
        for rank, ref in enumerate(ranked, start=1):
            scores[ref] = scores.get(ref, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda r: -scores[r])


def score(ranked: Sequence[str], evidence: Sequence[str]) -> dict[str, float]:
    """recall_any@10, recall_all@10, hit@1 and reciprocal rank of one ranked list of refs."""
    row = ev.metrics(list(ranked), list(evidence), [])
    return {
        "any": row["any"],
        "all": row["all"],
        "hit1": float(row["rank"] == 1),
        "mrr": row["mrr"],
    }


METRICS = (("recall_any@10", "any"), ("recall_all@10", "all"), ("hit@1", "hit1"), ("MRR", "mrr"))


def aggregate(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    n = len(rows)
    out: dict[str, float] = {"n": float(n)}
    for name, key in METRICS:
        out[name] = sum(r[key] for r in rows) / n if n else 0.0
    return out


@dataclass
class Outcome:
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {m: [] for m in METHODS})
    stores: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def summary(outcome: Outcome, order: Sequence[str]) -> dict[str, Any]:
    """Per group (1-5, 6-10, all), method and category (plus "all"): the four metrics."""
    position = {conv: i for i, conv in enumerate(order)}
    out: dict[str, Any] = {}
    for group, members in GROUPS.items():
        per: dict[str, Any] = {}
        for method in METHODS:
            rows = [r for r in outcome.rows[method] if position[r["conversation"]] in members]
            if not rows:
                continue
            cats = {"all": aggregate(rows)}
            for number, name in CATEGORIES.items():
                cats[name] = aggregate([r for r in rows if r["category"] == number])
            per[method] = cats
        if per:
            out[group] = per
    return out


# -- running --------------------
async def evaluate_conversation(
    store: Any, questions: Sequence[dict[str, Any]], outcome: Outcome
) -> None:
    service, db, refs = store.service, store.db, store.refs
    vectors = await service.embedder.embed([q["question"] for q in questions])
    for question, vector in zip(questions, vectors, strict=True):
        text = question["question"]
        ranked: dict[str, list[str]] = {
            "bm25": ev.distinct(refs.get(i) for i in await db.read(ev.bm25_ids, text, DEPTH)),
            "vector": ev.distinct(refs.get(i) for i in await db.read(ev.knn_ids, vector, DEPTH)),
        }
        ranked["rrf"] = rrf([ranked["bm25"], ranked["vector"]])[:DEPTH]
        results = await service.query(
            QueryRequest(
                query=text, kinds=list(LOBUG_KINDS), top_k=DEPTH, reach=Reach(user_id=USER)
            )
        )
        ranked["lobug"] = ev.lobug_refs(results)[0]
        for method in METHODS:
            row: dict[str, Any] = score(ranked[method], question["evidence"])
            row.update(
                id=question["id"],
                conversation=question["conversation"],
                category=question["category"],
                first=ranked[method][:K],
            )
            outcome.rows[method].append(row)


async def run(
    samples: Sequence[dict[str, Any]],
    embedder: str,
    overrides: dict[str, Any],
    progress: Callable[[str], None] = lambda _: None,
) -> Outcome:
    outcome = Outcome()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lobug-locomo-") as tmp:
        for sample in samples:
            conv = to_conversation(sample)
            async with ev.open_store(conv, Path(tmp), embedder, overrides) as store:
                t0 = time.monotonic()
                await evaluate_conversation(store, questions_of(sample), outcome)
                store.stats.update(id=conv["id"], query_s=round(time.monotonic() - t0, 2))
                outcome.stores.append(store.stats)
                progress(
                    f"{conv['id']}: {store.stats['turns']} turns, ingest "
                    f"{store.stats['ingest_s']}s, queries {store.stats['query_s']}s"
                )
    outcome.seconds = time.monotonic() - started
    return outcome


def cache_embeddings(path: Path) -> None:
    """Keep the local embedder's vectors in `path`, keyed by text: a rerun embeds only what is
    new (an evaluation aid; the daemon never caches this way)."""
    from lobug.llm import embedders

    cache: dict[str, list[float]] = pickle.loads(path.read_bytes()) if path.exists() else {}
    original = embedders.LocalEmbedder.encode

    def encode(
        self: Any, texts: Sequence[str], cancelled: threading.Event | None = None
    ) -> list[list[float]]:
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if missing:
            for text, vector in zip(missing, original(self, missing, cancelled), strict=True):
                cache[text] = vector
            path.write_bytes(pickle.dumps(cache))
        return [cache[t] for t in texts]

    embedders.LocalEmbedder.encode = encode  # type: ignore[method-assign]


# -- reporting --------------------
def tables(data: dict[str, Any], embedder: str, outcome: Outcome, cached: bool = False) -> str:
    lines = [
        f"Embedder `{embedder}`: {len(outcome.stores)} conversations "
        f"({sum(s['turns'] for s in outcome.stores)} turns), {outcome.seconds:.0f}s wall time"
        + (" (embeddings cached by `--cache`)." if cached else "."),
    ]
    for group, per in data.items():
        n = int(per["bm25"]["all"]["n"])
        lines += [
            "",
            f"**Conversations {group}** ({n} questions) — overall:",
            "",
            "| method | recall_any@10 | recall_all@10 | hit@1 | MRR |",
            "|---|---|---|---|---|",
        ]
        for method in METHODS:
            row = per[method]["all"]
            lines.append(
                f"| {method} | " + " | ".join(f"{row[name]:.3f}" for name, _ in METRICS) + " |"
            )
        bm25 = per["bm25"]["all"]["recall_any@10"]
        if bm25:
            lines += [
                "",
                f"lobug / bm25 recall_any@10: {per['lobug']['all']['recall_any@10'] / bm25:.2f}x",
            ]
        lines += [
            "",
            "By category — recall_any@10 / recall_all@10 / hit@1 / MRR:",
            "",
            "| method | "
            + " | ".join(f"{name} ({int(per['bm25'][name]['n'])})" for name in CATEGORIES.values())
            + " |",
            "|---|" + "---|" * len(CATEGORIES),
        ]
        for method in METHODS:
            cells = [
                " / ".join(f"{per[method][name][m]:.2f}" for m, _ in METRICS)
                for name in CATEGORIES.values()
            ]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def section(body: str) -> str:
    return "\n".join(
        [
            "## Real long conversations: LoCoMo",
            "",
            'LoCoMo (Maharana, Lee, Tulyakov, Bansal, Barbieri, Fang, "Evaluating Very Long-Term '
            'Conversational Memory of LLM Agents", arXiv:2402.17753, 2024; CC BY-NC 4.0, read '
            "from `../shared/datasets/locomo10.json`, never copied here): ten conversations "
            "between two people, 369 to 689 turns over 19 to 32 dated sessions each. "
            "`scripts/eval_locomo.py` imports each one as `lobug memory import` lines "
            "(`session_id`, `ts` from the session's date, `speaker`, `ref` = `dia_id`, a shared "
            "photo as its caption), runs the job handlers, and asks every question of categories "
            "1–4 (multi-hop, temporal, open-domain, single-hop; the adversarial category has no "
            "evidence) through `MemoryService.query`, the /v1/query path. Same metrics as above "
            "plus hit@1 (an evidence turn first); `rrf` is a plain reciprocal-rank fusion (k 60) "
            "of the `bm25` and `vector` lists. Changes are tuned on conversations 1–5 only; 6–10 "
            "are the check.",
            "",
            "```sh",
            "HF_HUB_OFFLINE=1 .venv/bin/python scripts/eval_locomo.py --write",
            "HF_HUB_OFFLINE=1 .venv/bin/python scripts/eval_locomo.py --only 1-5 "
            "--cache /tmp/locomo.emb",
            "```",
            "",
            body,
        ]
    )


def write_doc(body: str) -> list[Path]:
    ev.write_block(DOC, BEGIN, END, body)
    return [DOC]


def select(samples: list[dict[str, Any]], only: str | None) -> list[dict[str, Any]]:
    """`--only 1-5`, `6-10`, `3`: conversations by their 1-based position in the file."""
    if not only:
        return samples
    first, _, last = only.partition("-")
    return samples[int(first) - 1 : int(last or first)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"default {DATA}")
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--only", default=None, help="conversations by position: 1-5, 6-10, 3")
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache file")
    parser.add_argument("--json", type=Path, default=None, help="write every question's row")
    parser.add_argument("--write", action="store_true", help=f"update {DOC.relative_to(ROOT)}")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    if not args.data.exists():
        print(
            f"skipped: {args.data} is absent (LoCoMo, CC BY-NC 4.0: see the datasets README; "
            "it is never copied into the project)",
            file=sys.stderr,
        )
        return 0
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    order = [s["sample_id"] for s in samples]
    chosen = select(samples, args.only)
    if args.cache is not None:
        cache_embeddings(args.cache)
    outcome = asyncio.run(
        run(chosen, args.embedder, ev._overrides(args.set), lambda s: print(s, file=sys.stderr))
    )
    data = summary(outcome, order)
    text = tables(data, args.embedder, outcome, cached=args.cache is not None)
    print(text)
    if args.json is not None:
        args.json.write_text(json.dumps({"summary": data, "rows": outcome.rows}), encoding="utf-8")
    if args.write:
        if args.only:
            raise SystemExit("--write needs all ten conversations (no --only)")
        for path in write_doc(ev.wrap(section(text))):
            print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
