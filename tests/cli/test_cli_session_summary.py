"""`lobug memory session-summary SESSION` as a real process, on the database the memory jobs
wrote: seed 002's record of an ended session (made by the `consolidate_session` job in
process), as text and as JSON; exit 1 with the not-found error for a session without one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from cli_kit import config_file, lobug, lobug_json
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Reply, Script

RECORD = {
    "request": "The user asked how to repot a cactus.",
    "outcome": "Lo-Bug explained the steps and suggested gloves.",
    "decisions": ["The user will repot it on Sunday."],
    "open_items": ["The user needs cactus soil.", "The user wants a bigger pot."],
}


@dataclass
class Gardener(Script):
    """The default answers, plus the session record."""

    session: Reply = lambda _: json.dumps(RECORD)  # noqa: E731


async def test_session_summary_command(
    tmp_path: Path, mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, url = ollama
    state.script = Gardener()
    await mem.exchange("How do I repot a cactus?", "Carefully, with gloves.", session_id="pot-1")
    await mem.exchange("Which soil?", "Cactus soil, well drained.", session_id="pot-1")
    await mem.exchange("Thanks!", "Any time.", session_id="pot-2")
    await mem.run()
    assert len(state.memory_calls("session")) == 1
    config = config_file(tmp_path, url)
    assert tmp_path / "data" == mem.config.storage.data_dir  # the same database

    found = await lobug_json(config, "memory", "session-summary", "pot-1")
    assert {k: found[k] for k in RECORD} == RECORD and found["turn_count"] == 4
    code, out, err = await lobug(config, "memory", "session-summary", "pot-1")
    assert code == 0, err
    assert "request: The user asked how to repot a cactus." in out
    assert "open items:\n  - The user needs cactus soil.\n  - The user wants a bigger pot." in out

    code, out, err = await lobug(config, "memory", "session-summary", "pot-2", "--json")
    assert code == 1 and "no summary of session 'pot-2'" in err
    assert json.loads(out)["error"]["code"] == "not_found"
