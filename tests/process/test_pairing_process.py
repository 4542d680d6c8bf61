"""Seed 004's verification flow with pairing (issue 40), through a real daemon process, real
sockets from other addresses and a restart: the M5Stack remembers with the firmware it has
(no token), and nobody else on the LAN gets its memory by sending its device id."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_kit import SCRIPT, config_file, lobug_json
from daemon_proc import Daemon
from dbutil import query
from fake_ollama import FakeOllamaState
from lan_kit import lan_client
from memory_kit import Script, extract_by_keyword

from lobug.devices import HOW_TO_PAIR

pytestmark = pytest.mark.timeout(180)

ALEX = "The user's name is Alex."
EVE = "The user's name is Eve."
# Loopback is the owner's only while api.allow_loopback is on: off, 127.0.0.x are LAN peers.
ENV = {"LOBUG_API_ALLOW_LOOPBACK": "false"}
DEVICE = "m5stack-kitchen"


async def wait_idle(daemon: Daemon, timeout: float = 60.0) -> None:
    """Until no job waits (what the turns queued has run)."""
    db = daemon.data_dir / "lobug.db"
    sql = "SELECT kind, state, attempts FROM jobs WHERE state IN ('pending', 'running')"
    deadline = asyncio.get_running_loop().time() + timeout
    while (waiting := [tuple(r) for r in query(db, sql)]) and (
        asyncio.get_running_loop().time() < deadline
    ):
        await asyncio.sleep(0.1)
    assert not waiting, waiting


async def pair_from_the_cli(config: Path, daemon: Daemon) -> str:
    """`lobug devices pair`, waiting, while the device says its first words; what it printed."""
    argv = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "lobug"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOBUG_")}
    proc = await asyncio.create_subprocess_exec(
        *argv, "--config", str(config), "devices", "pair", "--seconds", "60",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    assert proc.stdout is not None
    opened = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
    assert "say something to Lo-Bug now" in opened, opened
    async with lan_client(daemon.url, "127.0.0.5") as m5stack:
        said = await m5stack.say("My name is Alex", device_id=DEVICE)
    assert said["response"]
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, (out, err)
    return opened + out.decode()


async def test_a_paired_device_remembers_across_a_restart_and_nobody_else_gets_it(
    daemons: Callable[..., Daemon], ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    state, url = ollama
    state.script = Script(extract=extract_by_keyword({"Alex": [ALEX], "Eve": [EVE]}))
    config = config_file(tmp_path, url)  # the daemons' data dir: tmp_path / "data"
    db = tmp_path / "data" / "lobug.db"
    daemon = await daemons(env=ENV).start()
    # Never silent: nothing is paired and no device token is set.
    assert HOW_TO_PAIR in daemon.log()
    _, health = await daemon.request("GET", "/health")
    assert health["devices"]["paired"] == 0 and health["devices"]["note"] == HOW_TO_PAIR

    printed = await pair_from_the_cli(config, daemon)
    # Who got paired is shown at once, with the way to undo it (the command and the log).
    assert f"paired #1 '{DEVICE}' at 127.0.0.5 (paired at trust full)" in printed
    assert "lobug devices forget 1" in printed
    assert f"paired device #1 '{DEVICE}' at 127.0.0.5" in daemon.log()
    await wait_idle(daemon)
    assert [tuple(r) for r in query(db, "SELECT content, store FROM memories")] == [
        (ALEX, "private")
    ]
    _, health = await daemon.request("GET", "/health")
    assert health["devices"]["paired"] == 1 and "note" not in health["devices"]
    assert await daemon.terminate() == 0

    again = await daemons(env=ENV).start()
    assert HOW_TO_PAIR not in again.log().split("daemon-")[-1]  # this run's log: paired now
    async with lan_client(again.url, "127.0.0.5") as m5stack:
        await m5stack.say("Do you remember my name?", device_id=DEVICE)
    assert "Alex" in state.prompt_text()

    # Another address sending the same device id gets nothing of the owner's and changes
    # nothing: a stranger, listed as a new address of the paired device.
    async with lan_client(again.url, "127.0.0.6") as other:
        await other.say("Do you remember my name?", device_id=DEVICE)
        assert "Alex" not in state.prompt_text()
        await other.say("My name is Eve", device_id=DEVICE)
        assert "Alex" not in state.prompt_text()
    # A device after the window closed is a stranger too.
    async with lan_client(again.url, "127.0.0.7") as late:
        await late.say("Do you remember my name?", device_id="m5stack-bedroom")
        assert "Alex" not in state.prompt_text()
    await wait_idle(again)
    private = query(db, "SELECT content FROM memories WHERE store = 'private'")
    assert [r[0] for r in private] == [ALEX]
    listed = await lobug_json(config, "devices")
    by_address = {d["address"]: d for d in listed["devices"]}
    assert by_address["127.0.0.5"]["trust"] == "full" and by_address["127.0.0.5"]["turns"] == 2
    assert by_address["127.0.0.6"]["trust"] is None
    assert by_address["127.0.0.6"]["paired_elsewhere"] == "127.0.0.5"
    assert by_address["127.0.0.7"]["trust"] is None and listed["pairing_until"] is None
    assert await again.terminate() == 0
