"""Issues 25 and 38 on the Wyoming door: a stranger's conversation id never joins the owner's
session, nor another stranger's (a peer is known by its address)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from wyoming_kit import client, handle

DEVICE_TOKEN = "device-token-0123456789"


async def test_a_stranger_cannot_join_the_owners_conversation_by_its_id(
    make_door: Callable[..., Any], ollama: Any
) -> None:
    state, _ = ollama
    door = await make_door(**{"api.device_token": DEVICE_TOKEN, "api.allow_loopback": False})
    resp = await door.http.post(
        "/chat/text",
        json={"text": "the garage door code is 8642", "session_id": "wyoming-kitchen"},
        headers={"X-Device-Token": DEVICE_TOKEN},
    )
    assert resp.status == 200 and (await resp.json())["session_id"] == "wyoming-kitchen"
    async with client(door.port) as conn:  # loopback is "the LAN" here: a stranger
        await handle(conn, "what's the code?", {"conversation_id": "kitchen"})
        await handle(conn, "and now?", {"conversation_id": "kitchen"})
    prompt = json.dumps(state.chat_calls()[-1]["body"]["messages"])
    assert "8642" not in prompt and "what's the code?" in prompt  # its own conversation
    sql = "SELECT DISTINCT session_id FROM turns WHERE text = 'and now?'"
    assert door.rows(sql) != [("wyoming-kitchen",)]


async def test_two_strangers_with_one_conversation_id_do_not_share_it(
    make_door: Callable[..., Any], ollama: Any
) -> None:
    state, _ = ollama
    door = await make_door(**{"api.allow_loopback": False})
    async with client(door.port, "127.0.0.2") as one:
        await handle(one, "the spare key is under the blue pot", {"conversation_id": "kitchen"})
    async with client(door.port, "127.0.0.3") as other:
        await handle(other, "where is the spare key?", {"conversation_id": "kitchen"})
    assert "blue pot" not in json.dumps(state.chat_calls()[-1]["body"]["messages"])
    async with client(door.port, "127.0.0.2") as one:  # the first keeps its own
        await handle(one, "and where was it?", {"conversation_id": "kitchen"})
    assert "blue pot" in json.dumps(state.chat_calls()[-1]["body"]["messages"])
