"""`lobug devices` through the real console script on the daemon's database, with a device
calling the firmware routes from its own address: trust pairs it (its prompts get the owner's
memory), forget makes it a stranger again, and bad input gets the documented exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_kit import config_file, lobug, lobug_json
from lan_kit import NO_LOOPBACK, lan_client

pytestmark = pytest.mark.timeout(120)

DEVICE = "m5stack-kitchen"


def last_prompt(ollama: Any) -> str:
    state, _ = ollama
    return json.dumps(state.chat_calls()[-1]["body"]["messages"])


async def test_trust_and_forget_from_the_cli(
    make_client: Callable[..., Any], ollama: Any, tmp_path: Path
) -> None:
    client = await make_client(**NO_LOOPBACK)  # its data dir: tmp_path / "data", as the CLI's
    config = config_file(tmp_path, ollama[1])
    async with lan_client(str(client.make_url("/")), "127.0.0.2") as m5stack:
        await m5stack.say("my locker code is 4417", device_id=DEVICE)
        code, out, _ = await lobug(config, "devices")
        assert code == 0 and "a stranger: answered without memory" in out, out
        (row,) = (await lobug_json(config, "devices"))["devices"]
        assert (row["device_id"], row["address"], row["trust"]) == (DEVICE, "127.0.0.2", None)

        trusted = await lobug_json(config, "devices", "trust", str(row["id"]))
        assert trusted["trust"] == "full" and "via cli" in trusted["paired_by"]
        await m5stack.say("my bike is blue", device_id=DEVICE)
        await m5stack.say("what is my bike's colour?", device_id=DEVICE)
        assert "my bike is blue" in last_prompt(ollama)  # its own conversation, now the owner's

        forgotten = await lobug_json(config, "devices", "forget", str(row["id"]))
        assert forgotten["id"] == row["id"]
        await m5stack.say("what is my bike's colour?", device_id=DEVICE)
        assert "blue" not in last_prompt(ollama)  # a stranger again, in a conversation of its own
        (again,) = (await lobug_json(config, "devices"))["devices"]
        assert again["trust"] is None


async def test_bad_input_and_a_window_that_runs_out(ollama: Any, tmp_path: Path) -> None:
    config = config_file(tmp_path, ollama[1])
    code, _, err = await lobug(config, "devices", "trust", "99")
    assert code == 1 and "no device #99" in err
    code, _, err = await lobug(config, "devices", "forget", "99")
    assert code == 1 and "no device #99" in err
    code, _, err = await lobug(config, "devices", "pair", "--seconds", "0")
    assert code == 2 and "--seconds" in err
    code, out, _ = await lobug(config, "devices", "pair", "--seconds", "0.5")
    assert code == 1 and "nothing was paired" in out
    assert (await lobug_json(config, "devices"))["pairing_until"] is None
