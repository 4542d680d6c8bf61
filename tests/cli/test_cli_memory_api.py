"""`lobug memory …` API commands through the real console script: the same operations, the same
checks (allowlists with --agent) and documented exit codes (0 ok, 1 not found/conflict,
2 bad input/forbidden), with --json and human tables."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cli_kit import config_file, lobug, lobug_json
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import Script, extract_by_keyword

ALEX = "The user's name is Alex and the user works at NASA."
TASK = "The user must renew the car insurance before the end of March."


async def test_cli_round_of_every_command(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, url = ollama
    state.script = Script(extract=extract_by_keyword({"NASA": [ALEX]}))
    config = config_file(tmp_path, url)
    db = tmp_path / "data" / "lobug.db"

    # Each command is a whole process: independent ones run side by side.
    turn, task = await asyncio.gather(
        lobug_json(config, "memory", "add-turn", "chat-1", "user",
                   "My name is Alex and I work at NASA", "--ref", "msg-1"),
        lobug_json(config, "memory", "remember", TASK, "--category", "tasks", "--tag", "car",
                   "--pinned"),
    )  # fmt: skip
    assert turn["extraction"] == "done" and [m["content"] for m in turn["extracted"]] == [ALEX]
    alex = turn["extracted"][0]["id"]
    assert (task["action"], task["tags"], task["pinned"]) == ("added", ["car"], True)
    assert query(db, "SELECT COUNT(*) FROM memory_vectors")[0][0] == 2  # embedded in-process

    (code, out, _), found, why, context, stats = await asyncio.gather(
        lobug(config, "memory", "list"),
        lobug_json(config, "memory", "query", "where does Alex work", "-k", "1"),
        lobug_json(config, "memory", "why", str(alex), "-q", "NASA"),
        lobug_json(config, "memory", "context", "chat-1"),
        lobug_json(config, "memory", "stats"),
    )
    assert code == 0 and out.splitlines()[0].split() == [
        "ID", "KIND", "CATEGORY", "STORE", "STATUS", "IMP", "CONTENT",
    ]  # fmt: skip
    assert TASK[:40] in out and "tasks" in out
    assert [r["id"] for r in found["results"]] == [alex]
    assert found["results"][0]["sources"][0]["ref"] == "msg-1"
    assert found["results"][0]["text"].startswith("[")
    assert why["rank"] == 1 and why["terms"]
    assert [t["text"] for t in context["short_term"]] == ["My name is Alex and I work at NASA"]
    assert stats["memories"]["total"] == 2 and stats["facts_active"] == 2

    stale = task["etag"]
    updated = await lobug_json(config, "memory", "update", str(task["id"]), "--importance", "0.9",
                               "--if-match", stale)  # fmt: skip
    assert updated["importance"] == 0.9 and updated["etag"] != stale
    (code, _, err), history = await asyncio.gather(
        lobug(config, "memory", "update", str(task["id"]), "--unpin", "--if-match", stale),
        lobug_json(config, "memory", "history", str(task["id"])),
    )
    assert code == 1 and "changed since you read it" in err
    events = [e["event"] for e in history["events"] if e["event"] != "HIT"]  # HIT: retrievals
    assert events == ["UPDATE", "ADD"]
    await lobug_json(config, "memory", "gc")  # stores every memory's score
    by_score = await lobug_json(config, "memory", "list", "--sort", "score")
    scored = query(db, "SELECT id FROM memories ORDER BY json_extract(attributes, '$.score') DESC")
    assert [m["id"] for m in by_score["memories"]] == [r[0] for r in scored]
    assert len(scored) == 2 and None not in [
        r[0] for r in query(db, "SELECT json_extract(attributes, '$.score') FROM memories")
    ]
    code, out, _ = await lobug(config, "memory", "forget", str(task["id"]), "--purge")
    assert code == 0 and "purged for good" in out
    assert query(db, "SELECT COUNT(*) FROM memories WHERE id = ?", task["id"])[0][0] == 0


async def test_cli_agent_allowlist_and_exit_codes(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str]
) -> None:
    _, url = ollama
    config = config_file(tmp_path, url)
    task, hobby = await asyncio.gather(
        lobug_json(config, "memory", "remember", TASK, "--category", "tasks"),
        lobug_json(config, "memory", "remember", "The user collects vintage postcards.",
                   "--category", "interests"),
    )  # fmt: skip
    listed = await lobug_json(config, "memory", "list", "--agent", "planner")
    assert [m["id"] for m in listed["memories"]] == [task["id"]]
    cases = [
        (("get", str(hobby["id"]), "--agent", "planner"), 1, f"no memory {hobby['id']}"),
        (("list", "--agent", "planner", "--category", "interests"), 2, "may not read category"),
        (("remember", "The user sails.", "--agent", "planner", "--category", "travel"), 2,
         "may not write category travel"),
        (("export", "--agent", "planner"), 2, "an export needs full trust"),
        (("query", "tea", "--filter", "colour=x"), 2, "unknown filter 'colour'"),
        (("restore", str(task["id"])), 1, "nothing to restore"),
        (("confirm", "999999"), 1, "no memory 999999"),
        (("confirm", str(hobby["id"]), "--agent", "planner"), 1, f"no memory {hobby['id']}"),
        (("update", str(task["id"]), "--content", "I must renew it."), 2, "first person"),
    ]  # fmt: skip
    # None of these writes anything, so they can run side by side.
    done = await asyncio.gather(*(lobug(config, "memory", *a, "--json") for a, _, _ in cases))
    for (args, expected, message), (code, out, err) in zip(cases, done, strict=True):
        assert (code, message in err) == (expected, True), (args, code, err)
        assert json.loads(out)["error"]["message"] in err
    code, _, err = await lobug(config, "memory", "query")  # argparse: usage error
    assert code == 2 and "usage:" in err


async def test_cli_writers_confirm_and_floors(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str]
) -> None:
    """Issue 10 from a shell: who wrote a memory, confirm, threshold (similarity) and min_score."""
    _, url = ollama
    config = config_file(tmp_path, url)
    db = tmp_path / "data" / "lobug.db"
    mine = await lobug_json(config, "memory", "remember", TASK)  # creates the database
    theirs = await lobug_json(config, "memory", "remember", ALEX, "--agent-id", "planner-bot",
                              "--run-id", "run-3", "--actor-id", "alex")  # fmt: skip
    assert (mine["agent_id"], mine["run_id"]) == ("cli", None)  # the CLI's own agent
    assert (theirs["agent_id"], theirs["run_id"], theirs["actor_id"]) == (
        "planner-bot", "run-3", "alex",
    )  # fmt: skip
    row = query(db, "SELECT agent_id, run_id, actor_id FROM memories WHERE id = ?", theirs["id"])
    assert tuple(row[0]) == ("planner-bot", "run-3", "alex")
    words = "renew car insurance Alex NASA user"
    by_agent, by_run, by_actor, found, confirmed, (code, out, _) = await asyncio.gather(
        lobug_json(config, "memory", "list", "--agent-id", "cli"),
        lobug_json(config, "memory", "facts", "--run-id", "run-3"),
        lobug_json(config, "memory", "query", words, "--actor-id", "alex", "-k", "10"),
        lobug_json(config, "memory", "query", words, "-k", "10", "--full"),
        lobug_json(config, "memory", "confirm", str(mine["id"])),
        lobug(config, "memory", "get", str(theirs["id"])),
    )
    assert [m["id"] for m in by_agent["memories"]] == [mine["id"]]
    assert [m["id"] for m in by_run["memories"]] == [theirs["id"]]
    assert [r["id"] for r in by_actor["results"]] == [theirs["id"]]
    assert code == 0 and "planner-bot" in out and "run-3" in out
    assert (confirmed["id"], confirmed["confidence"], confirmed["decay_rate"]) == (
        mine["id"], 1.0, 0.0,
    )  # fmt: skip
    assert query(db, "SELECT decay_rate FROM memories WHERE id = ?", mine["id"])[0][0] == 0
    history = await lobug_json(config, "memory", "history", str(mine["id"]))
    (update,) = [e for e in history["events"] if e["event"] == "UPDATE"]  # HIT: retrievals
    assert update["meta"]["confirmed"] is True and update["actor"] == "cli:cli"
    results = found["results"]
    assert len(results) == 2
    best = max(results, key=lambda r: r["explain"]["similarity"])
    worst = min(results, key=lambda r: r["explain"]["similarity"])
    floor = (best["explain"]["similarity"] + worst["explain"]["similarity"]) / 2
    similar, scored = await asyncio.gather(
        lobug_json(config, "memory", "query", words, "-k", "10", "--threshold", str(floor)),
        lobug_json(config, "memory", "query", words, "-k", "10",
                   "--min-score", str(results[0]["score"])),
    )  # fmt: skip
    assert [r["id"] for r in similar["results"]] == [best["id"]]
    assert [r["id"] for r in scored["results"]] == [results[0]["id"]]


async def test_cli_forget_by_text(tmp_path: Path, ollama: tuple[FakeOllamaState, str]) -> None:
    """Seed 000's `forget --text`: the memory saying it, case and punctuation aside."""
    _, url = ollama
    config = config_file(tmp_path, url)
    db = tmp_path / "data" / "lobug.db"
    made = await lobug_json(config, "memory", "remember", TASK)
    await lobug_json(config, "memory", "remember", "The user collects vintage postcards.")
    gone = await lobug_json(config, "memory", "forget", "--text", TASK.upper().rstrip("."))
    assert gone["status"] == "soft_deleted"
    assert query(db, "SELECT status FROM memories WHERE id = ?", made["id"])[0][0] == "soft_deleted"
    code, _, err = await lobug(config, "memory", "forget", "--text", "vintage postcards")
    assert code != 0 and "no memory says that" in err and "collects vintage postcards" in err
    code, _, err = await lobug(config, "memory", "forget")
    assert code != 0 and "one of them" in err
    await lobug_json(config, "memory", "remember", "The user's email is jo@example.com.")
    with_pii = await lobug_json(config, "memory", "list", "--pii", "email")
    assert [m["content"] for m in with_pii["memories"]] == ["The user's email is jo@example.com."]
    assert query(db, "SELECT COUNT(*) FROM memories WHERE status = 'active'")[0][0] == 2


async def test_query_store_and_history_options(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str]
) -> None:
    """`lobug memory query --store S` narrows to that store; `--include-superseded` brings back
    the facts a newer one replaced (left out by default, seed 003)."""
    _, url = ollama
    config = config_file(tmp_path, url)
    old = await lobug_json(config, "memory", "remember", "The user lives in Portland.")
    new = await lobug_json(config, "memory", "remember", "The user lives in Seattle.")
    family = await lobug_json(config, "memory", "remember", "The user's sister lives in Denver.",
                              "--store", "shared")  # fmt: skip
    assert new["supersedes"] == old["id"] and family["store"] == "shared"
    words = "where does the user live"
    current, history, shared, private = await asyncio.gather(
        lobug_json(config, "memory", "query", words, "--store", "private"),
        lobug_json(config, "memory", "query", words, "--include-superseded", "-k", "10"),
        lobug_json(config, "memory", "query", words, "--store", "shared"),
        lobug_json(config, "memory", "query", words, "--store", "private", "--include-superseded"),
    )
    assert [r["id"] for r in current["results"]] == [new["id"]]
    assert {r["id"] for r in history["results"]} == {new["id"], old["id"], family["id"]}
    assert [r["id"] for r in shared["results"]] == [family["id"]]
    assert [r["id"] for r in private["results"]] == [new["id"], old["id"]]
