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
        (("query", "tea", "--filter", "agent_id=x"), 2, "unknown filter 'agent_id'"),
        (("restore", str(task["id"])), 1, "nothing to restore"),
    ]  # fmt: skip
    # None of these writes anything, so they can run side by side.
    done = await asyncio.gather(*(lobug(config, "memory", *a, "--json") for a, _, _ in cases))
    for (args, expected, message), (code, out, err) in zip(cases, done, strict=True):
        assert (code, message in err) == (expected, True), (args, code, err)
        assert json.loads(out)["error"]["message"] in err
    code, _, err = await lobug(config, "memory", "query")  # argparse: usage error
    assert code == 2 and "usage:" in err
