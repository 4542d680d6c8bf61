"""The long-conversation dataset keeps its rules; its evaluation runs end to end (hashing)."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from script_kit import load_script

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "conversations"
TYPES = {"single_hop", "multi_hop", "temporal", "paraphrased"}


@pytest.fixture(scope="module")
def make() -> ModuleType:
    return load_script("make_conversation_eval")


@pytest.fixture(scope="module")
def dataset() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    def rows(name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (DATA / name).read_text().splitlines()]

    return rows("conversations.jsonl"), rows("questions.jsonl")


def turns_of(conversations: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["ref"]: t for c in conversations for s in c["sessions"] for t in s["turns"]}


def simple_words(text: str) -> set[str]:
    """The issue's definition (lowercase, stopwords out, plural -s stripped), independent of
    the generator's stricter comparison; the stopwords are lobug's FTS ones."""
    stop = load_script("make_conversation_eval").STOPWORDS
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words if w not in stop}


def test_committed_files_are_current(make: ModuleType) -> None:
    assert make.main(["--check"]) == 0
    for name, text in make.files().items():
        assert (DATA / name).read_text(encoding="utf-8") == text, name


def test_check_flags_stale_files(make: ModuleType, tmp_path: Path) -> None:
    for name in make.FILES:
        shutil.copy(DATA / name, tmp_path / name)
    assert make.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "questions.jsonl").write_text("{}\n")
    assert make.main(["--check", "--out", str(tmp_path)]) == 1


def test_generation_is_deterministic(make: ModuleType) -> None:
    first = make.build(2, seed=7)
    assert first == make.build(2, seed=7)
    assert first != make.build(2, seed=8)


def test_counts(dataset: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    conversations, questions = dataset
    assert len(conversations) >= 10
    per_conv = Counter(q["conversation"] for q in questions)
    for conv in conversations:
        assert len(conv["sessions"]) >= 20
        assert sum(len(s["turns"]) for s in conv["sessions"]) >= 300
        assert per_conv[conv["id"]] >= 100
        assert conv["speakers"]["user"] != conv["speakers"]["assistant"]
        dates = [s["date"] for s in conv["sessions"]]
        assert dates == sorted(dates) and len(set(dates)) == len(dates)
        assert conv["now"] > dates[-1]
    assert len({c["speakers"]["user"] for c in conversations}) == len(conversations)
    types = Counter(q["type"] for q in questions)
    assert set(types) == TYPES
    assert min(types.values()) >= 50
    assert len({q["id"] for q in questions}) == len(questions)


def test_turns_are_well_formed(dataset: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    conversations, _ = dataset
    for conv in conversations:
        last = 0.0
        for s, session in enumerate(conv["sessions"], start=1):
            for t, turn in enumerate(session["turns"], start=1):
                assert turn["ref"] == f"{conv['id']}/s{s}/t{t}"
                assert turn["role"] in ("user", "assistant")
                assert turn["speaker"] == conv["speakers"][turn["role"]]
                assert turn["text"] and turn["ts"] > last
                last = turn["ts"]
        assert last < conv["now_ts"]


def test_question_rules(dataset: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    conversations, questions = dataset
    turns = turns_of(conversations)
    now = {c["id"]: c["now_ts"] for c in conversations}
    for q in questions:
        assert q["evidence"], q["id"]
        assert all(ref in turns for ref in q["evidence"] + q["stale"]), q["id"]
        assert all(ref.startswith(q["conversation"] + "/") for ref in q["evidence"])
        assert q["answer"] and q["asked_at"] == now[q["conversation"]]
        if q["type"] == "multi_hop":
            assert len(set(q["evidence"])) >= 2
        newest = min(turns[r]["ts"] for r in q["evidence"])
        assert all(turns[s]["ts"] < newest for s in q["stale"])


def test_paraphrase_share(
    make: ModuleType, dataset: tuple[list[dict[str, Any]], list[dict[str, Any]]]
) -> None:
    conversations, questions = dataset
    turns = turns_of(conversations)

    def shares(q: dict[str, Any]) -> bool:
        words = simple_words(q["question"])
        return any(words & simple_words(turns[r]["text"]) for r in q["evidence"])

    for q in questions:
        if q["type"] == "paraphrased":
            assert not shares(q), q
            assert not any(
                make.shared_words(q["question"], turns[r]["text"]) for r in q["evidence"]
            )
    assert sum(not shares(q) for q in questions) >= len(questions) / 3


def test_the_generator_refuses_a_lexical_paraphrase(
    make: ModuleType, dataset: tuple[list[dict[str, Any]], list[dict[str, Any]]]
) -> None:
    assert make.shared_words("Where was the proposal?", "He proposed on a beach") == ["proposal"]
    assert make.shared_words("When did I start pottery?", "Started a pottery class") == [
        "pottery",
        "start",
    ]
    assert make.shared_words("Which ceramics lessons?", "A pottery class") == []
    conversations, questions = dataset
    turns = turns_of(conversations)
    # A third of the questions made lexical: the whole-dataset check fails.
    copied = [dict(q) for q in questions]
    for q in copied[: len(copied) * 3 // 4]:
        q["question"] = turns[q["evidence"][0]]["text"]
    with pytest.raises(make.DatasetError):
        make.check(conversations, copied)


def test_no_answer_leaks_into_small_talk(
    dataset: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    """A single-hop answer that names a place or thing occurs only in planted turns."""
    conversations, questions = dataset
    planted = {r for q in questions for r in q["evidence"] + q["stale"]}
    turns = turns_of(conversations)
    for q in questions:
        if q["type"] != "single_hop" or q["stale"] or len(q["answer"]) < 6:
            continue
        if q["question"].startswith("Who"):
            continue  # people are talked about all the time; that is not the answer leaking
        answer = q["answer"].lower()
        if answer not in turns[q["evidence"][0]]["text"].lower():
            continue  # a paraphrased answer ("no, stopped")
        for ref, turn in turns.items():
            if ref.startswith(q["conversation"] + "/") and ref not in planted:
                assert answer not in turn["text"].lower(), (q["id"], ref)


# -- the evaluation --------------------------------------------------------------------------------


async def test_evaluation_on_one_conversation(
    dataset: tuple[list[dict[str, Any]], list[dict[str, Any]]], tmp_path: Path
) -> None:
    ev = load_script("eval_conversations")
    conversations, questions = dataset
    conv = conversations[0]
    mine = [q for q in questions if q["conversation"] == conv["id"]]
    outcome = ev.Outcome()
    async with ev.open_store(conv, tmp_path, "hashing", {}) as store:
        # Loaded through the importer and the jobs: every turn, with its ref and a vector.
        n_turns = sum(len(s["turns"]) for s in conv["sessions"])
        assert sorted(store.refs.values()) == sorted(turns_of([conv]))
        assert store.stats["turns"] == n_turns == store.stats["turn_vectors"]
        assert store.stats["jobs"].get("extract.done", 0) > 0
        await ev.evaluate_conversation(store, mine, outcome)
        outcome.stores.append(store.stats)
        # Lo-Bug's answer maps to distinct refs of this conversation.
        question = next(q for q in mine if q["type"] == "single_hop")
        results = await store.service.query(
            ev.QueryRequest(query=question["question"], kinds=list(ev.LOBUG_KINDS), top_k=ev.DEPTH)
        )
        refs, via = ev.lobug_refs(results)
        assert refs and len(refs) == len(set(refs)) == len(via)
        assert set(refs) <= set(store.refs.values())
        assert set(via) <= set(ev.LOBUG_KINDS)
    for method in ev.METHODS:
        rows = outcome.rows[method]
        assert len(rows) == len(mine)
        for key in ("any", "all", "mrr"):
            assert all(0.0 <= r[key] <= 1.0 for r in rows)
        assert all(r["all"] <= r["any"] for r in rows)
    # BM25 finds single-hop questions whose words are in their evidence turn.
    turns = turns_of([conv])
    bm25 = {r["id"]: r for r in outcome.rows["bm25"]}
    lexical = [
        q
        for q in mine
        if q["type"] == "single_hop"
        and len(simple_words(q["question"]) & simple_words(turns[q["evidence"][0]]["text"])) >= 2
    ]
    assert lexical
    assert sum(bm25[q["id"]]["any"] for q in lexical) >= len(lexical) / 2
    data = ev.summary(outcome)
    assert set(data["methods"]) == set(ev.ALL_METHODS) >= set(ev.METHODS)
    shape = load_script("make_conversation_eval").check([conv], mine)
    text = ev.tables(data, "hashing", shape)
    assert text.count("\n| lobug |") == 2 and "recall_all@10" in text


def test_metrics() -> None:
    ev = load_script("eval_conversations")
    ranked = [f"r{i}" for i in range(1, 21)]
    row = ev.metrics(ranked, ["r3", "r12"], ["r1"])
    assert (row["any"], row["all"], row["mrr"], row["newest_first"]) == (1.0, 0.0, 1 / 3, 0.0)
    row = ev.metrics(ranked, ["r2", "r10"], [])
    assert (row["any"], row["all"], row["mrr"]) == (1.0, 1.0, 0.5)
    assert ev.metrics(ranked, ["x"], [])["mrr"] == 0.0
    assert ev.distinct(["a", None, "a", "b", "c"], depth=2) == ["a", "b"]


def test_each_script_rewrites_only_its_own_block(tmp_path: Path, monkeypatch: Any) -> None:
    """--write replaces the section between its markers; the synthetic eval's rerun replaces
    only its own block, and the prose the team edits in the doc stays as it was."""
    ev = load_script("eval_conversations")
    retrieval = load_script("eval_retrieval")
    doc = tmp_path / "doc.md"
    shutil.copy(ev.DOC, doc)
    monkeypatch.setattr(ev, "DOC", doc)
    body = "| method | {braces} stay |"
    shape = load_script("make_conversation_eval").check(*_small())
    ev.write_doc(ev.section(body, shape))
    ev.write_doc(ev.section(body + " again", shape))
    retrieval.write_block(doc, retrieval.BEGIN, retrieval.END, "RESULTS")
    text = doc.read_text()
    assert text.count(ev.BEGIN) == 1 and text.count(ev.END) == 1
    assert "{braces} stay | again" in text and "{braces} stay |\n" not in text
    assert text.index(ev.BEGIN) < text.index("## Dataset")  # the section comes first
    assert f"{retrieval.BEGIN}\nRESULTS\n{retrieval.END}" in text
    assert "### What moved LoCoMo (issue 23)" in text and "## What we learned" in text
    doc.write_text("no markers here")
    with pytest.raises(SystemExit, match="lost its markers"):
        ev.write_doc("x")


def _small() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    conversations = [json.loads(line) for line in (DATA / "conversations.jsonl").open()][:1]
    questions = [
        q
        for q in (json.loads(line) for line in (DATA / "questions.jsonl").open())
        if q["conversation"] == conversations[0]["id"]
    ]
    return conversations, questions
