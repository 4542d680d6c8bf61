"""`lobug memory …` as a real process: import (bad lines, no Ollama), the views, and `reembed`
fixing an embedding-dimension change that stopped the daemon's start."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from contract import assert_valid
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import Script, drain, extract_by_keyword

from lobug import keys
from lobug.memory.vectors.gate import EmbeddingMismatch

ALEX = "The user's name is Alex and the user works at NASA."
TEA = "The user drinks green tea every morning."
JAZZ = "The user listens to jazz while cooking."
TABLE = {"NASA": [ALEX], "tea": [TEA], "jazz": [JAZZ]}


def config_file(tmp_path: Path, url: str, dim: int = 64) -> Path:
    path = tmp_path / f"lobug-{dim}.toml"
    path.write_text(
        f'[storage]\ndata_dir = "{tmp_path / "data"}"\n'
        f'[ollama]\nhost = "{url}"\ntimeout_s = 2.0\n'
        f'[embedding]\nbackend = "hashing"\ndim = {dim}\n'
        f"[workers]\nbackoff_base_s = 0.05\n"
        f'[memory]\nllm_timeout_s = 2.0\n[log]\nlevel = "WARNING"\n',
        encoding="utf-8",
    )
    return path


async def lobug(config: Path, *args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOBUG_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lobug",
        "--config",
        str(config),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env, "HF_HUB_OFFLINE": "1"},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return int(proc.returncode or 0), out.decode(), err.decode()


def jsonl(path: Path, lines: list[Any]) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


GOOD_AND_BAD = [
    {
        "session_id": "a",
        "role": "user",
        "text": "My name is Alex and I work at NASA",
        "ts": 1_700_000_000,
        "ref": "msg-1",
    },
    {"session_id": "a", "role": "assistant", "text": "Nice to meet you, Alex.", "ref": "msg-2"},
    "{not json",
    {"session_id": "a", "role": "bot", "text": "beep"},
    "",
    {
        "session_id": "b",
        "role": "user",
        "text": "I drink green tea every morning",
        "ts": "2024-05-01T10:00:00Z",
        "ref": "msg-3",
    },
    {"session_id": "b", "role": "user", "text": "   "},
    {"session_id": "b", "role": "user", "text": "hi", "ts": "yesterday"},
    {"session_id": "b", "role": "user", "text": "I listen to jazz while cooking", "ref": "msg-4"},
]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "lobug.db"


async def test_import_stores_extracts_embeds_and_reports_bad_lines(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], db_path: Path
) -> None:
    state, url = ollama
    script = Script(extract=extract_by_keyword(TABLE))
    state.script = script
    config = config_file(tmp_path, url)
    source = jsonl(tmp_path / "turns.jsonl", GOOD_AND_BAD)
    code, out, err = await lobug(config, "memory", "import", str(source), "--json")
    assert code == 1, err  # bad lines were reported
    for lineno, reason in [(3, "not JSON"), (4, "'role'"), (7, "'text'"), (8, "'ts'")]:
        assert f"line {lineno}: " in err and reason in err.split(f"line {lineno}: ")[1]
    assert "storing turns" in err and "memory jobs" in err  # progress on stderr
    report = json.loads(out)
    assert (report["stored"], report["skipped"], report["facts_added"]) == (4, 0, 3)
    assert len(report["errors"]) == 4 and report["jobs"] == {}
    turns = query(db_path, "SELECT id, session_id, role, ref, ts FROM turns ORDER BY id")
    assert [(r[1], r[2], r[3]) for r in turns] == [
        ("a", "user", "msg-1"),
        ("a", "assistant", "msg-2"),
        ("b", "user", "msg-3"),
        ("b", "user", "msg-4"),
    ]
    assert turns[0][4] == 1_700_000_000 and turns[2][4] == 1_714_557_600
    facts = [r[0] for r in query(db_path, "SELECT content FROM memories ORDER BY id")]
    assert facts == [ALEX, TEA, JAZZ]
    # The exchange was extracted as a pair; the lone user lines on their own.
    prompts = [m[1]["content"].split("\n", 1)[1] for m in script.seen["extract"]]
    assert "User: My name is Alex and I work at NASA\nLo-Bug: Nice to meet you, Alex." in prompts
    assert "User: I listen to jazz while cooking" in prompts
    sources = query(db_path, "SELECT turn_id FROM memory_sources WHERE memory_id = 1")
    assert [r[0] for r in sources] == [turns[0][0], turns[1][0]]
    assert query(db_path, "SELECT COUNT(*) FROM turn_vectors")[0][0] == 4
    # Importing the same file again skips what is already there.
    code, out, _ = await lobug(config, "memory", "import", str(source), "--json")
    assert json.loads(out)["skipped"] == 4 and json.loads(out)["stored"] == 0

    code, out, _ = await lobug(config, "memory", "facts", "--json")
    facts = json.loads(out)["memories"]
    assert code == 0 and [f["content"] for f in facts] == [JAZZ, TEA, ALEX]
    question = "Alex works at NASA, right?"
    code, out, _ = await lobug(config, "memory", "search", question, "--full", "--json")
    found = json.loads(out)["results"]
    assert found[0]["text"] == ALEX and "vector" in found[0]["explain"]["ranks"]
    code, out, _ = await lobug(config, "memory", "stats", "--json")
    stats = json.loads(out)
    assert (stats["facts_active"], stats["turns_unsummarized"], stats["jobs"]) == (3, 4, {})


async def test_import_without_ollama_stores_embeds_and_leaves_extraction_pending(
    tmp_path: Path,
    ollama: tuple[FakeOllamaState, str],
    db_path: Path,
    make_client: Any,
    clock: Any,
) -> None:
    state, url = ollama
    state.mode = "down"
    config = config_file(tmp_path, url)
    good = [line for line in GOOD_AND_BAD if isinstance(line, dict) and "ref" in line]
    source = jsonl(tmp_path / "good.jsonl", good)
    code, out, err = await lobug(config, "memory", "import", str(source))
    assert code == 0, err
    assert "the LLM is not usable" in err and "left pending for the daemon" in err
    assert "imported 4 turn(s)" in out and "extract" in out
    assert query(db_path, "SELECT COUNT(*) FROM turns")[0][0] == 4
    assert query(db_path, "SELECT COUNT(*) FROM turn_vectors")[0][0] == 4
    pending = query(
        db_path, "SELECT COUNT(*) FROM jobs WHERE kind = 'extract' AND state = 'pending'"
    )
    assert pending[0][0] == 3
    # Ollama is back and the daemon runs: the left-over work is done.
    state.mode = "ok"
    state.script = Script(extract=extract_by_keyword(TABLE))
    clock.now = time.time() + 1  # the CLI enqueued on the wall clock
    client = await make_client(**{"embedding.dim": 64})
    await drain(db_path, clock)
    assert len(query(db_path, "SELECT id FROM memories WHERE kind = 'fact'")) == 3
    assert client.app[keys.MEMORY] is not None


async def test_dimension_change_stops_the_daemon_and_reembed_fixes_it(
    tmp_path: Path,
    ollama: tuple[FakeOllamaState, str],
    db_path: Path,
    make_client: Any,
    clock: Any,
) -> None:
    state, url = ollama
    state.script = Script(extract=extract_by_keyword(TABLE))
    source = jsonl(tmp_path / "turns.jsonl", [line for line in GOOD_AND_BAD[:2]])
    code, _, err = await lobug(config_file(tmp_path, url, 64), "memory", "import", str(source))
    assert code == 0, err
    blob = "SELECT length(embedding) FROM memory_vectors"
    assert [r[0] for r in query(db_path, blob)] == [64 * 4]

    # The config now asks for 32-d vectors: the daemon does not start on them (it would search
    # by words alone), it says what to run, and nothing is dropped.
    with pytest.raises(EmbeddingMismatch, match="lobug memory reembed"):
        await make_client(**{"embedding.dim": 32})
    assert [r[0] for r in query(db_path, blob)] == [64 * 4]  # untouched

    code, out, err = await lobug(config_file(tmp_path, url, 32), "memory", "reembed", "--json")
    assert code == 0, err
    assert "re-embedding" in err
    result = json.loads(out)
    assert (result["reembedded"], result["dim"], result["memories"], result["turns"]) == (
        True,
        32,
        1,
        2,  # the two imported turns: the daemon never ran on the wrong size
    )
    assert [r[0] for r in query(db_path, blob)] == [32 * 4]
    assert query(db_path, "SELECT value FROM meta WHERE key = 'embedding_dim'")[0][0] == "32"

    # Now the daemon starts, with its vectors on, and finds the fact.
    client = await make_client(**{"embedding.dim": 32})
    health = await (await client.get("/health")).json()
    assert_valid("health.response", health)
    assert health["embedding"]["vectors"] is True and health["status"] == "ok", health
    resp = await client.post("/chat/text", json={"text": "Alex works at NASA, right?"})
    assert resp.status == 200
    assert f"[Relevant memories]\n- {ALEX}" in state.prompt_text()
    clock.advance(400)  # the deferred embed jobs come due: already embedded, they just finish
    await drain(db_path, clock)
    assert query(db_path, "SELECT COUNT(*) FROM jobs WHERE state != 'done'")[0][0] == 0
    code, out, _ = await lobug(config_file(tmp_path, url, 32), "memory", "reembed")
    assert code == 0 and "nothing to do" in out
