#!/usr/bin/env python3
"""Write the retrieval-quality dataset (tests/data/eval_*.jsonl) from tests/data/eval_source.txt.

One household (Sam, Priya, Leo, Mia, Biscuit the beagle) talking to Lo-Bug over six months,
written by hand in the source file; user turns that answer a question carry an anchor name, and
the questions refer to anchors ("conv03:vet"), resolved here to turn keys ("conv03/s1/t3").
Deterministic: the only randomness (seconds between turns) comes from a fixed seed.

    python scripts/make_eval_data.py            # rewrite tests/data/eval_*.jsonl
    python scripts/make_eval_data.py --check    # fail if the files are out of date
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data"
SOURCE = OUT / "eval_source.txt"
SEED = 20260101
TYPES = ("direct", "paraphrase", "updated_fact", "multi_hop", "distractor-heavy")

Turn = tuple[str, str, str | None]  # role, text, anchor
Session = tuple[str, list[Turn]]  # start "YYYY-MM-DD HH:MM", turns
Conversation = tuple[str, str, list[Session]]  # id, title, sessions
Question = tuple[str, str, list[str], list[str], str]  # type, text, evidence, stale, answer
_TURN = re.compile(r"^([UA])(?:\[([\w-]+)\])?: (.+)$")


def parse(text: str) -> tuple[list[Conversation], list[Question]]:
    """The conversations and questions of the source file (format in its header)."""
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{SOURCE.name}:{number}"
        if line.startswith("= "):
            conv_id, _, title = (part.strip() for part in line[2:].partition("|"))
            conversations.append((conv_id, title, []))
        elif line.startswith("@ "):
            conversations[-1][2].append((line[2:].strip(), []))
        elif line.startswith("? "):
            parts = [part.strip() for part in line[2:].split("|")]
            assert len(parts) == 5, where
            qtype, question, evidence, stale, answer = parts
            questions.append((qtype, question, evidence.split(), stale.split(), answer))
        else:
            match = _TURN.match(line)
            assert match and conversations and conversations[-1][2], where
            role = "user" if match[1] == "U" else "assistant"
            conversations[-1][2][-1][1].append((role, match[3], match[2]))
    return conversations, questions


_STOP = set(
    """a an the is are was were be do does did of in on at to for and or with what who
whom which when where why how our my your his her their its it this that these those there
sam s t now""".split()
)


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The JSONL rows: conversations with keyed, timestamped turns; questions with turn keys."""
    source_conversations, source_questions = parse(SOURCE.read_text(encoding="utf-8"))
    rng = random.Random(SEED)
    conversations: list[dict[str, Any]] = []
    anchors: dict[str, str] = {}
    texts: dict[str, tuple[str, float]] = {}
    for conv_id, title, sessions in source_conversations:
        out_sessions = []
        for s_index, (start, turns) in enumerate(sessions, start=1):
            ts = datetime.strptime(start, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp()
            out_turns = []
            for t_index, (role, text, anchor) in enumerate(turns, start=1):
                key = f"{conv_id}/s{s_index}/t{t_index}"
                out_turns.append({"key": key, "role": role, "text": text, "ts": ts})
                texts[key] = (text, ts)
                if anchor:
                    assert f"{conv_id}:{anchor}" not in anchors, anchor
                    anchors[f"{conv_id}:{anchor}"] = key
                ts += rng.randint(20, 90)
            out_sessions.append({"id": f"s{s_index}", "start": start, "turns": out_turns})
        conversations.append({"id": conv_id, "title": title, "sessions": out_sessions})
    questions = []
    for n, (qtype, question, evidence, stale, answer) in enumerate(source_questions, start=1):
        assert qtype in TYPES, qtype
        keys = [anchors[a] for a in evidence]
        stale_keys = [anchors[a] for a in stale]
        _check(question, qtype, keys, stale_keys, texts)
        questions.append(
            {
                "id": f"q{n:03d}",
                "type": qtype,
                "question": question,
                "evidence": keys,
                "stale": stale_keys,
                "answer": answer,
            }
        )
    return conversations, questions


def _check(
    question: str,
    qtype: str,
    keys: list[str],
    stale: list[str],
    texts: dict[str, tuple[str, float]],
) -> None:
    """The dataset's own rules, so a careless edit fails here rather than skewing the eval."""
    if qtype == "multi_hop":
        assert len(keys) == 2, question
    if qtype == "updated_fact":
        # The stale value must have been said before the one that counts.
        assert stale and all(texts[s][1] < texts[k][1] for s in stale for k in keys), question
    else:
        assert not stale, question
    if qtype == "paraphrase":
        q = content_words(question)
        for key in keys:
            shared = q & content_words(texts[key][0])
            assert len(shared) <= len(q) / 2, (question, shared)


def dump(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the files differ")
    args = parser.parse_args()
    conversations, questions = build()
    files = {
        OUT / "eval_conversations.jsonl": dump(conversations),
        OUT / "eval_questions.jsonl": dump(questions),
    }
    turns = sum(len(s["turns"]) for c in conversations for s in c["sessions"])
    if args.check:
        stale = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
        for path in stale:
            print(f"{path} is out of date; run scripts/make_eval_data.py", file=sys.stderr)
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    print(f"{len(conversations)} conversations, {turns} turns, {len(questions)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
