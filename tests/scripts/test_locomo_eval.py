"""scripts/eval_locomo.py on a tiny hand-made file shaped like LoCoMo (never the dataset)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from script_kit import load_script


@pytest.fixture(scope="module")
def el() -> ModuleType:
    return load_script("eval_locomo")


def sample(sample_id: str = "conv-x") -> dict[str, Any]:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ava",
            "speaker_b": "Liam",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ava", "dia_id": "D1:1", "text": "I adopted a puppy called Biscuit!"},
                {"speaker": "Liam", "dia_id": "D1:2", "text": "Lovely! What breed is Biscuit?"},
                {"speaker": "Ava", "dia_id": "D1:3", "text": "A beagle, full of energy."},
            ],
            "session_2_date_time": "10:00 am on 3 June, 2023",
            "session_2": [
                {
                    "speaker": "Liam",
                    "dia_id": "D2:1",
                    "text": "We went sailing on the lake.",
                    "blip_caption": "a photo of a small white boat",
                },
                {"speaker": "Ava", "dia_id": "D2:2", "text": "The lake looks calm."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ava's puppy?", "evidence": ["D1:1"], "category": 4},
            {"question": "When did Liam go sailing?", "evidence": ["D2:1"], "category": 2},
            {"question": "What breed?", "evidence": ["D1:2; D1:3"], "category": 1},
            {"question": "Did Ava adopt a cat?", "evidence": ["D1:1"], "category": 5},
            {"question": "No evidence", "evidence": [], "category": 3},
        ],
    }


def test_import_lines_follow_the_conversation(el: ModuleType) -> None:
    conv = el.to_conversation(sample())
    turns = [t for s in conv["sessions"] for t in s["turns"]]
    assert [t["ref"] for t in turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert (
        turns[3]["text"]
        == "We went sailing on the lake. [shares a photo: a photo of a small white boat]"
    )
    start = datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp()
    assert [t["ts"] for t in turns[:3]] == [start, start + 1, start + 2]
    assert conv["now_ts"] == datetime(2023, 6, 3, 10, 0, 1, tzinfo=UTC).timestamp() + 86_400


def test_questions_keep_categories_one_to_four_with_evidence(el: ModuleType) -> None:
    questions = el.questions_of(sample())
    assert [q["category"] for q in questions] == [4, 2, 1]
    assert questions[2]["evidence"] == ["D1:2", "D1:3"]


def test_metrics(el: ModuleType) -> None:
    ranked = [f"r{i}" for i in range(1, 21)]
    assert el.score(ranked, ["r1", "r30"]) == {"any": 1.0, "all": 0.0, "hit1": 1.0, "mrr": 1.0}
    assert el.score(ranked, ["r4", "r9"]) == {"any": 1.0, "all": 1.0, "hit1": 0.0, "mrr": 0.25}
    assert el.score(ranked, ["r12"]) == {"any": 0.0, "all": 0.0, "hit1": 0.0, "mrr": 1 / 12}
    assert el.score([], ["r1"])["mrr"] == 0.0
    rows = [el.score(ranked, ["r1"]), el.score(ranked, ["r12"])]
    assert el.aggregate(rows) == {
        "n": 2.0,
        "recall_any@10": 0.5,
        "recall_all@10": 0.5,
        "hit@1": 0.5,
        "MRR": (1.0 + 1 / 12) / 2,
    }
    # Plain RRF: in both lists beats first in one.
    assert el.rrf([["a", "b"], ["b", "c"]]) == ["b", "a", "c"]


def test_groups_split_by_position(el: ModuleType) -> None:
    outcome = el.Outcome()
    order = [f"c{i}" for i in range(10)]
    for i, conv in enumerate(order):
        for method in el.METHODS:
            row = el.score(["x"], ["x"] if i < 5 else ["y"])
            outcome.rows[method].append({**row, "conversation": conv, "category": 4})
    data = el.summary(outcome, order)
    assert data["1-5"]["lobug"]["all"]["recall_any@10"] == 1.0
    assert data["6-10"]["lobug"]["all"]["recall_any@10"] == 0.0
    assert data["all"]["lobug"]["single-hop"]["recall_any@10"] == 0.5
    assert data["all"]["lobug"]["temporal"]["n"] == 0


def test_end_to_end_on_a_tiny_file(el: ModuleType, tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample("conv-a"), sample("conv-b")]), encoding="utf-8")
    out = tmp_path / "rows.json"
    assert el.main(["--data", str(path), "--embedder", "hashing", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "**Conversations 1-5** (6 questions)" in text and "| lobug |" in text
    rows = json.loads(out.read_text())["rows"]
    assert set(rows) == set(el.METHODS)
    assert all(len(rows[m]) == 6 for m in el.METHODS)
    puppy = [r for r in rows["bm25"] if r["id"].endswith("#0")]
    assert all(r["first"][0] == "D1:1" for r in puppy)  # "Biscuit"/"puppy"/"adopted": lexical


def test_skips_without_the_dataset(el: ModuleType, tmp_path: Path, capsys: Any) -> None:
    assert el.main(["--data", str(tmp_path / "absent.json")]) == 0
    assert "skipped" in capsys.readouterr().err
