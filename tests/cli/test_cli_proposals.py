"""`lobug memory proposals|accept|reject` through the real console script: the consent queue
(seed 001 §10) on the same code as /v1/proposals, with the documented exit codes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from cli_kit import config_file, lobug, lobug_json
from dbutil import query
from fake_ollama import FakeOllamaState

from lobug import conversation as turns
from lobug.access import load_config_checked
from lobug.memory import settings
from lobug.memory.write import consent
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.reconcile import Origin
from lobug.parts import open_database

SAM = "The user's name is Sam."
LISBON = "The user lives in Lisbon."


def spoken(config_path: Path, *facts: str) -> list[int]:
    """Proposals as the extract job leaves them after a voice turn."""
    config = load_config_checked(config_path, env={})
    db = open_database(config)

    def write(conn: Any) -> list[int]:
        now = time.time()
        turns.resolve_session(conn, device_id="desk", session_id="s-1", now=now, idle_s=0)
        user = turns.insert_turn(conn, session_id="s-1", role="user", text="(spoken)", ts=now,
                                 device_id="desk", ref=turns.VOICE_REF)  # fmt: skip
        for fact in facts:
            assert consent.intercept(
                conn, Candidate(fact, "profile", 0.9, ()),
                origin=Origin(session_id="s-1", turn_ids=[user.id]), voice=user.voice,
                cfg=config.memory, policy=settings.write_policy(config), now=now,
            )  # fmt: skip
        return [r[0] for r in conn.execute("SELECT id FROM proposals ORDER BY id")]

    try:
        return db.write_sync(write)
    finally:
        db.close_sync()


async def test_list_accept_reject(tmp_path: Path, ollama: tuple[FakeOllamaState, str]) -> None:
    config = config_file(tmp_path, ollama[1])
    await lobug_json(config, "memory", "proposals")  # creates and migrates the database
    sam, lisbon = spoken(config, SAM, LISBON)
    db = tmp_path / "data" / "lobug.db"

    listing = await lobug_json(config, "memory", "proposals")
    assert [(p["id"], p["field"]) for p in listing["proposals"]] == [
        (lisbon, "city"), (sam, "preferred_name"),
    ]  # fmt: skip
    code, out, _ = await lobug(config, "memory", "proposals")
    assert code == 0 and out.splitlines()[0].split()[:4] == ["ID", "STATUS", "FIELD", "SEEN"]
    assert SAM in out and LISBON in out

    accepted = await lobug_json(config, "memory", "accept", str(sam))
    assert (accepted["status"], accepted["action"], accepted["decided_by"]) == (
        "accepted", "added", "cli:cli",
    )  # fmt: skip
    assert [r[0] for r in query(db, "SELECT content FROM memories WHERE status = 'active'")] == [
        SAM
    ]
    # No daemon: the accepted fact was embedded in-process.
    assert query(db, "SELECT COUNT(*) FROM memory_vectors")[0][0] == 1
    code, out, _ = await lobug(config, "memory", "reject", str(lisbon))
    assert code == 0 and "rejected" in out

    # Decided, unknown: exit 1 with the reason; nothing pending is left.
    code, _, err = await lobug(config, "memory", "accept", str(sam))
    assert code == 1 and "already accepted" in err
    code, _, err = await lobug(config, "memory", "reject", "999")
    assert code == 1 and "no proposal 999" in err
    code, out, _ = await lobug(config, "memory", "proposals")
    assert code == 0 and out.strip() == "no pending proposals"
    every = await lobug_json(config, "memory", "proposals", "--all")
    assert [p["status"] for p in every["proposals"]] == ["rejected", "accepted"]
    # An agent whose allowlist has no `profile` sees none of them (like the API's 404).
    narrowed = await lobug_json(config, "memory", "proposals", "--all", "--agent", "planner")
    assert narrowed["proposals"] == []
