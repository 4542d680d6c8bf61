#!/usr/bin/env python3
"""What reaches the answer: the prompt's memory on LoCoMo, asked through POST /chat/text.

LoCoMo (Maharana et al., arXiv:2402.17753, CC BY-NC 4.0; ../shared/datasets/locomo10.json,
never copied into the project; without it the script says so and exits 0) replayed as the
device would live it (issue 39): the first speaker is the owner, the second Lo-Bug; every
turn imported as the owner's sessions with their dates (`lobug memory import`'s importer, no
speaker names: a household's device has none), the memory jobs run to completion (the
heuristic extractor by default; `--llm URL` runs extraction through an OpenAI-compatible
server, e.g. scripts/smoke_real_llm's llama-server; `--generous`: the issue's generous
extractor, a fake model making every statement the owner makes a third-person fact), then
every question whose evidence the owner said (categories 1–4), asked in the owner's words
("What did Caroline research?" -> "What did I research?"), goes through POST /chat/text of
the daemon's app, on its own clock a day after the last session, each in a session of its
own, to a fake model that records the prompt (tests/fake_ollama.py). Reported:

- evidence in the prompt: the fraction of questions whose prompt (the turn block the model
  received) holds an evidence turn: a sentence of it, or a memory extracted from it;
- memory tokens in the turn block (p50, p95; ~4 characters a token, as the budget counts);
- /v1/query at the same budget: the fraction whose results (facts, summaries, turns, cut to
  the prompt's `BUDGET_TOKENS`) hold an evidence turn or a memory from one.

Tune on conversations 1–5 only (`--only 1-5`, the default); 6–10 are held out, measured once.

    .venv/bin/python scripts/eval_prompt.py [--only 1-5] [--embedder hashing|local]
        [--llm http://127.0.0.1:8080/v1 | --generous] [--json out.json]
The reply latency the richer prompt costs is scripts/bench_reply.py's (Pi speed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

import eval_conversations as ev  # noqa: E402
import eval_locomo as locomo  # noqa: E402
from aiohttp.test_utils import TestClient, TestServer  # noqa: E402
from fake_ollama import FakeOllamaState, build_app  # noqa: E402
from memory_kit import Script  # noqa: E402

from lobug import keys  # noqa: E402
from lobug.app import Overrides, create_app  # noqa: E402
from lobug.memory.query import tokens_of  # noqa: E402
from lobug.memory.search import prompt_context, snippet  # noqa: E402
from lobug.memory.transfer import import_turns as importer  # noqa: E402
from lobug.parts import parts  # noqa: E402
from lobug.workers.runner import JobRunner  # noqa: E402

QUIET = Script(reply=lambda _: json.dumps({"action": "RESPOND", "response": "Okay."}))
# The generous extractor (issue 39's measurement): every statement the owner makes becomes a
# third-person fact, answered by the fake model to the daemon's own extraction prompt.
THIRD_PERSON = {
    "i'm": "the user is",
    "i've": "the user has",
    "i'll": "the user will",
    "i'd": "the user would",
    "i": "the user",
    "me": "the user",
    "my": "the user's",
    "mine": "the user's",
    "myself": "the user",
}
WORD = re.compile(r"[A-Za-z’']+")


def generous(exchange: str) -> str:
    """Each statement (not a question) of the exchange's user line, in the third person."""
    said = exchange.split("\n")[0].removeprefix("User:").strip()
    facts = []
    for sentence in sentences(said):
        if sentence.endswith("?"):
            continue
        text = WORD.sub(
            lambda m: THIRD_PERSON.get(m.group(0).lower().replace("’", "'"), m.group(0)), sentence
        )
        facts.append({"fact": text[0].upper() + text[1:], "type": "personal"})
    return json.dumps(facts)


KINDS = ["fact", "summary", "episode"]
SENTENCE = re.compile(r"[^.!?]+[.!?]*")
MIN_SENTENCE_CHARS = 12  # shorter ("Wow!", "Thanks!") says nothing of the evidence
# The owner's name in a question, as the owner would say it (verb agreement after "I").
AGREE = {
    "does I": "do I",
    "is I": "am I",
    "has I": "have I",
    "I has": "I have",
    "I is": "I am",
    "I does": "I do",
    "I was": "I was",
    "Is I": "Am I",
    "Does I": "Do I",
    "Has I": "Have I",
}


def owners_words(question: str, owner: str) -> str:
    """The question as the owner asks it: their name becomes I, me or my."""
    name = re.escape(owner)
    text = re.sub(rf"\b{name}['’]s\b", "my", question)
    text = re.sub(rf"^{name}\b", "I", text)
    text = re.sub(
        rf"\b(did|does|do|is|was|has|have|can|could|would|will)\s+{name}\b",
        r"\1 I",
        text,
        flags=re.I,
    )
    text = re.sub(
        rf"\b{name}\b(?=\s+(?:\w+ed|\w+s|is|was|has|had|did|does|do|go|get|make)\b)", "I", text
    )
    text = re.sub(rf"\b{name}\b", "me", text)
    for wrong, right in AGREE.items():
        text = re.sub(rf"\b{wrong}\b", right, text)
    return text[0].upper() + text[1:] if text else text


def owner_questions(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """Categories 1–4 whose evidence turns the owner (the first speaker) said, in their words."""
    conv = sample["conversation"]
    owner = conv["speaker_a"]
    said = {t["dia_id"]: t["speaker"] for _, _, turns in locomo.sessions_of(sample) for t in turns}
    found = []
    for q in locomo.questions_of(sample):
        if all(said.get(ref) == owner for ref in q["evidence"]):
            found.append({**q, "asked": owners_words(q["question"], owner)})
    return found


def import_lines(conv: dict[str, Any]) -> list[str]:
    """The conversation as `lobug memory import` lines, without speaker names."""
    return [
        json.dumps(
            {
                "session_id": f"{conv['id']}/{s['id']}",
                "role": t["role"],
                "text": t["text"],
                "ts": t["ts"],
                "ref": t["ref"],
            }
        )
        for s in conv["sessions"]
        for t in s["turns"]
    ]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.findall(text) if len(s.strip()) >= MIN_SENTENCE_CHARS]


def holds(
    shown: str, evidence: Sequence[int], texts: dict[int, str], facts: dict[int, list[str]]
) -> bool:
    """Whether `shown` holds an evidence turn: a sentence of it, or a memory from it."""
    for turn_id in evidence:
        if any(s in shown for s in sentences(texts.get(turn_id, ""))):
            return True
        if any(f in shown for f in facts.get(turn_id, [])):
            return True
    return False


def _evidence_rows(conn: Any) -> tuple[dict[str, int], dict[int, str], dict[int, list[str]]]:
    refs = {str(r[1]): int(r[0]) for r in conn.execute("SELECT id, ref FROM turns")}
    texts = {int(r[0]): str(r[1]) for r in conn.execute("SELECT id, text FROM turns")}
    facts: dict[int, list[str]] = {}
    for turn_id, content in conn.execute(
        "SELECT s.turn_id, m.content FROM memory_sources s JOIN memories m ON m.id = s.memory_id"
        " WHERE m.status = 'active'"
    ):
        facts.setdefault(int(turn_id), []).append(str(content))
    return refs, texts, facts


async def ingest(conv: dict[str, Any], config: Any, llm: str | None) -> dict[str, Any]:
    """Import and run the memory jobs to completion, at the conversation's last moment."""
    now = float(conv["now_ts"]) - 86_400.0

    def clock() -> float:
        return now

    started = time.monotonic()
    async with parts(config, clock=clock) as got:
        runner = JobRunner(got.db, config.workers, clock)
        assert got.memory is not None
        got.memory.register(runner)
        lines, errors = importer.read_lines(import_lines(conv), max_chars=100_000)
        if errors:
            raise SystemExit(f"{conv['id']}: the importer rejected lines: {errors[:3]}")
        result = importer.ImportResult()
        partners, batches = importer.plan(lines)
        for batch in batches:
            store = partial(
                importer.store_batch,
                partners=partners,
                now=clock(),
                user_id="default",
                result=result,
            )
            await got.db.write(store, batch)
        ran = await ev.drain(runner, got.db, clock)
        facts = await got.db.read(
            lambda c: c.execute("SELECT COUNT(*) FROM memories WHERE kind = 'fact'").fetchone()[0]
        )
    return {
        "turns": result.stored,
        "jobs": ran,
        "facts": facts,
        "ingest_s": round(time.monotonic() - started, 1),
    }


async def ask_all(
    conv: dict[str, Any], config: Any, questions: Sequence[dict[str, Any]], state: FakeOllamaState
) -> list[dict[str, Any]]:
    """Each question through POST /chat/text (a session of its own) and POST /v1/query."""
    now = float(conv["now_ts"])
    app = create_app(config, Overrides(clock=lambda: now))
    client = TestClient(TestServer(app))
    await client.start_server()
    rows = []
    try:
        db = app[keys.DB]
        refs, texts, facts = await db.read(_evidence_rows)
        for i, q in enumerate(questions):
            evidence = [refs[r] for r in q["evidence"] if r in refs]
            session = f"ask-{i}"
            resp = await client.post("/chat/text", json={"text": q["asked"], "session_id": session})
            assert resp.status == 200, await resp.text()
            content = str(state.chat_calls()[-1]["body"]["messages"][-1]["content"])
            block = content[: -len(q["asked"])].rstrip() if content.endswith(q["asked"]) else ""
            found = await client.post(
                "/v1/query",
                json={
                    "query": q["asked"],
                    "kinds": KINDS,
                    "top_k": 50,
                    "budget_tokens": prompt_context.BUDGET_TOKENS,
                    "return": "full",
                },
            )
            results = (await found.json())["results"]
            listed = "\n".join(r["text"] for r in results)
            by_source = any(s["turn_id"] in evidence for r in results for s in r.get("sources", []))
            rows.append(
                {
                    "id": q["id"],
                    "category": q["category"],
                    "asked": q["asked"],
                    "in_prompt": holds(block, evidence, texts, facts),
                    "query": by_source or holds(listed, evidence, texts, facts),
                    "tokens": tokens_of(block) if block else 0,
                    "block": block,
                }
            )
            # The question is no memory of the conversation: out of the next ones' search.
            await db.write(
                lambda c, s=session: c.execute(
                    "UPDATE turns SET degraded = 1 WHERE session_id = ?", (s,)
                )
            )
    finally:
        await client.close()
    return rows


def config_for(
    workdir: Path,
    embedder: str,
    ollama: str,
    llm: str | None,
    extra: dict[str, Any],
    extract_by_model: bool = False,
) -> Any:
    values: dict[str, Any] = {"ollama.host": ollama, "memory.user_first": False, **extra}
    if extract_by_model:  # the fake model's generous extraction
        values.update({"memory.extraction_mode": "llm", "memory.llm_timeout_s": 60.0})
    if llm:
        values.update(
            {
                "llm.backend": "openai",
                "llm.base_url": llm,
                "memory.extraction_mode": "llm",
                "memory.llm_timeout_s": 600.0,
            }
        )
    return ev.make_config(workdir, embedder, values)


def percentile(values: Sequence[float], pct: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))])


async def run(samples: Sequence[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    state = FakeOllamaState()
    state.script = Script(reply=QUIET.reply, extract=generous) if args.generous else QUIET
    fake = TestServer(build_app(state))
    await fake.start_server()
    ollama = str(fake.make_url("")).rstrip("/")
    extra = ev._overrides(args.set)
    out: dict[str, Any] = {"conversations": [], "rows": []}
    try:
        with tempfile.TemporaryDirectory(prefix="lobug-prompt-") as tmp:
            for sample in samples:
                conv = locomo.to_conversation(sample)
                workdir = Path(tmp) / conv["id"]
                stats = await ingest(
                    conv,
                    config_for(workdir, args.embedder, ollama, args.llm, extra, args.generous),
                    args.llm,
                )
                questions = owner_questions(sample)
                asked = config_for(workdir, args.embedder, ollama, None, extra)
                started = time.monotonic()
                rows = await ask_all(conv, asked, questions, state)
                stats.update(
                    id=conv["id"],
                    questions=len(rows),
                    ask_s=round(time.monotonic() - started, 1),
                    in_prompt=sum(r["in_prompt"] for r in rows),
                    query=sum(r["query"] for r in rows),
                )
                print(json.dumps(stats), file=sys.stderr)
                out["conversations"].append(stats)
                out["rows"] += rows
    finally:
        await fake.close()
    return out


def report(out: dict[str, Any], args: argparse.Namespace) -> str:
    rows = out["rows"]
    n = len(rows) or 1
    tokens = [r["tokens"] for r in rows]
    prompt = sum(r["in_prompt"] for r in rows) / n
    query = sum(r["query"] for r in rows) / n
    extractor = f"LLM at {args.llm}" if args.llm else "generous" if args.generous else "heuristic"
    per = ", ".join(f"{c['in_prompt']}/{c['questions']}" for c in out["conversations"])
    return "\n".join(
        [
            f"LoCoMo conversations {args.only}, {len(rows)} owner questions, extractor {extractor},"
            f" embedder {args.embedder}, budget {prompt_context.BUDGET_TOKENS} tokens:",
            "",
            "| evidence in the prompt | /v1/query, same budget | ratio | memory tokens p50 | p95 |",
            "|---|---|---|---|---|",
            f"| {prompt:.3f} | {query:.3f} | {prompt / query if query else 0:.2f} |"
            f" {percentile(tokens, 50):.0f} | {percentile(tokens, 95):.0f} |",
            "",
            f"Per conversation (in the prompt): {per}.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=locomo.DATA)
    parser.add_argument("--embedder", choices=("local", "hashing"), default="hashing")
    parser.add_argument("--only", default="1-5", help="conversations by position: 1-5, 6-10")
    parser.add_argument("--llm", default=None, help="OpenAI-compatible API root for extraction")
    parser.add_argument("--json", type=Path, default=None, help="every question's row")
    parser.add_argument(
        "--generous", action="store_true", help="every owner statement a fact (a fake model)"
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--budget", type=int, default=None, help="the prompt's memory tokens")
    parser.add_argument("--floor", type=float, default=None, help="share of the best score")
    parser.add_argument("--snippet", type=int, default=None, help="tokens of one exchange")
    args = parser.parse_args(argv)
    # The prompt's constants, varied for a measurement (the daemon has them fixed).
    if args.budget is not None:
        prompt_context.BUDGET_TOKENS = args.budget
    if args.floor is not None:
        prompt_context.FLOOR = args.floor
    if args.snippet is not None:
        snippet.MAX_TOKENS = args.snippet
    logging.basicConfig(level=logging.ERROR)
    if not args.data.exists():
        print(f"skipped: {args.data} is absent (LoCoMo: see the datasets README)", file=sys.stderr)
        return 0
    samples = locomo.select(json.loads(args.data.read_text(encoding="utf-8")), args.only)
    out = asyncio.run(run(samples, args))
    print(report(out, args))
    if args.json is not None:
        args.json.write_text(json.dumps(out), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
