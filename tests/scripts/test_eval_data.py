"""The retrieval dataset keeps its rules, and the evaluation script runs end to end (hashing)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from script_kit import load_script

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def conversations() -> list[dict[str, Any]]:
    return rows("eval_conversations.jsonl")


@pytest.fixture(scope="module")
def questions() -> list[dict[str, Any]]:
    return rows("eval_questions.jsonl")


def turns(conversations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["key"]: t for c in conversations for s in c["sessions"] for t in s["turns"]}


def test_files_match_the_generator() -> None:
    make = load_script("make_eval_data")
    conversations, questions = make.build()
    assert (DATA / "eval_conversations.jsonl").read_text() == make.dump(conversations)
    assert (DATA / "eval_questions.jsonl").read_text() == make.dump(questions)


def test_size_and_shape(
    conversations: list[dict[str, Any]], questions: list[dict[str, Any]]
) -> None:
    assert len(conversations) >= 20
    assert sum(len(c["sessions"]) > 1 for c in conversations) >= 20
    all_turns = turns(conversations)
    assert len(all_turns) >= 300
    assert {t["role"] for t in all_turns.values()} == {"user", "assistant"}
    assert len(questions) >= 60
    counts = Counter(q["type"] for q in questions)
    assert set(counts) == {"direct", "paraphrase", "updated_fact", "multi_hop", "distractor-heavy"}
    assert min(counts.values()) >= 10
    assert len({q["id"] for q in questions}) == len(questions)


def test_keys_are_well_formed_and_time_ordered(conversations: list[dict[str, Any]]) -> None:
    for conv in conversations:
        last = 0.0
        for s_index, session in enumerate(conv["sessions"], start=1):
            for t_index, turn in enumerate(session["turns"], start=1):
                assert turn["key"] == f"{conv['id']}/s{s_index}/t{t_index}"
                assert turn["ts"] > last
                last = turn["ts"]


def test_question_rules(
    conversations: list[dict[str, Any]], questions: list[dict[str, Any]]
) -> None:
    make = load_script("make_eval_data")
    all_turns = turns(conversations)
    for q in questions:
        assert q["evidence"] and all(k in all_turns for k in q["evidence"] + q["stale"])
        assert q["answer"]
        if q["type"] == "multi_hop":
            assert len(q["evidence"]) == 2
        if q["type"] == "updated_fact":
            assert q["stale"]
            newest = min(all_turns[k]["ts"] for k in q["evidence"])
            assert all(all_turns[s]["ts"] < newest for s in q["stale"])
        else:
            assert q["stale"] == []
        if q["type"] == "paraphrase":
            words = make.content_words(q["question"])
            for key in q["evidence"]:
                assert len(words & make.content_words(all_turns[key]["text"])) <= len(words) / 2


def test_evaluation_runs_with_the_hashing_embedder(tmp_path: Path) -> None:
    evaluate = load_script("eval_retrieval")
    corpus, questions = evaluate.load("hashing", tmp_path)
    results = evaluate.evaluate(corpus, questions, evaluate.ScoringWeights())
    corpus.conn.close()
    assert set(results) == set(evaluate.METHODS)
    for method in evaluate.METHODS:
        assert len(results[method]["all"]) == len(questions)
        for key in ("any@5", "all@5", "any@10", "all@10", "mrr"):
            assert 0.0 <= evaluate.mean(results[method]["all"], key) <= 1.0
    # Lexical matching alone finds most direct questions: the pipeline is wired correctly.
    assert evaluate.mean(results["bm25"]["direct"], "any@10") >= 0.8
    table = evaluate.tables(results)
    assert table.count("\n| hybrid ") == 2 and "newest first" in table
    doc = tmp_path / "doc.md"
    doc.write_text(evaluate.DOC.read_text())
    evaluate.write_block(doc, evaluate.BEGIN, evaluate.END, table)
    written = doc.read_text().split("## Results")[1]
    assert written.split(evaluate.BEGIN)[1].startswith(f"\n{table}\n{evaluate.END}")
