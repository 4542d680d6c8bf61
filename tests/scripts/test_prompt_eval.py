"""scripts/eval_prompt.py on a tiny hand-made file shaped like LoCoMo (never the dataset)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from script_kit import load_script
from test_locomo_eval import sample


@pytest.fixture(scope="module")
def ep() -> ModuleType:
    return load_script("eval_prompt")


def test_the_owners_questions_in_the_owners_words(ep: ModuleType) -> None:
    asked = [q["asked"] for q in ep.owner_questions(sample())]
    # Liam's sailing (his evidence) is not the owner's; "What breed?" cites Liam's turn too.
    assert asked == ["What is the name of my puppy?"]
    assert (
        ep.owners_words("When did Ava go to the museum?", "Ava") == "When did I go to the museum?"
    )
    assert ep.owners_words("What does Ava like?", "Ava") == "What do I like?"
    assert ep.owners_words("Ava has a dog, right?", "Ava") == "I have a dog, right?"


def test_generous_extraction_is_every_statement_in_the_third_person(ep: ModuleType) -> None:
    facts = json.loads(ep.generous("User: I adopted my puppy. Is he cute?\nLo-Bug: Yes!"))
    assert [f["fact"] for f in facts] == ["The user adopted the user's puppy."]


def test_end_to_end_on_a_tiny_file(ep: ModuleType, tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample("conv-a")]), encoding="utf-8")
    out = tmp_path / "rows.json"
    assert ep.main(["--data", str(path), "--only", "1", "--json", str(out)]) == 0
    assert "| evidence in the prompt |" in capsys.readouterr().out
    (row,) = json.loads(out.read_text())["rows"]
    # The puppy's name was said in an earlier session: it is in the prompt the model got.
    assert row["in_prompt"] and "Biscuit" in row["block"]


def test_skips_without_the_dataset(ep: ModuleType, tmp_path: Path, capsys: Any) -> None:
    assert ep.main(["--data", str(tmp_path / "absent.json")]) == 0
    assert "skipped" in capsys.readouterr().err
