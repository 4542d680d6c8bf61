"""Helpers for the memory browser's tests: the system chromium, CSRF tokens from pages, and
rows a page shows (a conversation a fact came from, an entity, a consent proposal) written as
the daemon does."""

from __future__ import annotations

import json
import os
import re
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from daemon_proc import Daemon

from lobug import conversation as turns
from lobug.config import Config, load_config
from lobug.memory import settings
from lobug.memory.table.rows import link_sources
from lobug.memory.write import consent
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.reconcile import Origin
from lobug.parts import open_database

CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')
SESSION = "s-kitchen"


def chromium() -> str:
    """Debian's chromium for Playwright (LOBUG_CHROMIUM names another); skipped without one,
    except under CI=true, where that fails."""
    found = os.environ.get("LOBUG_CHROMIUM") or shutil.which("chromium")
    found = found or shutil.which("chromium-browser")
    if found is None:
        message = "no chromium: apt-get install chromium (scripts/test installs it)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "the page has no CSRF token"
    return found.group(1)


def converse(conn: Any, memory_id: int, *, now: float, said: str, summary_id: int | None = None,
             entity: str = "Casa Azul") -> int:  # fmt: skip
    """A session whose user turn is the memory's source, an entity it mentions, and (when
    given) a summary memory covering the turn. The turn's id."""
    turns.resolve_session(conn, device_id="kitchen", session_id=SESSION, now=now, idle_s=0)
    turn = turns.insert_turn(conn, session_id=SESSION, role="user", text=said, ts=now,
                             device_id="kitchen")  # fmt: skip
    link_sources(conn, memory_id, [turn.id])
    if summary_id is not None:
        link_sources(conn, summary_id, [turn.id], reason="summarized")
    cur = conn.execute(
        "INSERT INTO entities (canonical_name, type, aliases, store, created_at, last_mentioned)"
        " VALUES (?, 'place', ?, 'private', ?, ?)",
        (entity, json.dumps(["the capital"]), now, now),
    )
    conn.execute("INSERT INTO memory_entities (memory_id, entity_id) VALUES (?, ?)",
                 (memory_id, cur.lastrowid))  # fmt: skip
    return turn.id


def propose(conn: Any, facts: list[str], *, config: Config, now: float) -> list[int]:
    """A voice turn whose profile facts went through consent (seed 001 §10): proposal ids."""
    turns.resolve_session(conn, device_id="desk", session_id="s-voice", now=now, idle_s=0)
    user = turns.insert_turn(conn, session_id="s-voice", role="user", text="(spoken)", ts=now,
                             device_id="desk", ref=turns.VOICE_REF)  # fmt: skip
    origin = Origin(session_id="s-voice", turn_ids=[user.id])
    policy = settings.write_policy(config)
    for fact in facts:
        held = consent.intercept(conn, Candidate(fact, "profile", 0.9, ()), origin=origin,
                                 voice=user.voice, cfg=config.memory, policy=policy,
                                 now=now)  # fmt: skip
        assert held, fact
    return [r[0] for r in conn.execute("SELECT id FROM proposals ORDER BY id")]


async def daemon_with_a_proposal(
    data_dir: Path, ollama_url: str, env: dict[str, str] | None = None
) -> Daemon:
    """A started daemon whose database holds one pending proposal ("The user's name is
    Sam."), proposed before it started (so the browser has something to accept)."""
    proc = Daemon(data_dir, ollama_url=ollama_url, env=env)
    config = load_config(None, env={k: v for k, v in proc.env.items() if k.startswith("LOBUG_")})
    db = open_database(config)
    try:
        db.write_sync(partial(propose, config=config, now=1_750_000_000.0 + 10**8),
                      ["The user's name is Sam."])  # fmt: skip
    finally:
        db.close_sync()
    return await proc.start()
