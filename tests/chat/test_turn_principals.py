"""Issue 38, finding 2, on the firmware routes from real addresses: a conversation is the
principal's that opened it (a stranger is known by its address), not its trust level's. Two
strangers sending one device id never share one, and no stranger can take a session name in
advance from the owner, in any form."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from lan_kit import NO_LOOPBACK, lan_client

pytestmark = pytest.mark.timeout(60)

DEVICE_TOKEN = "device-token-0123456789"


def last_prompt(ollama: Any) -> str:
    state, _ = ollama
    return json.dumps(state.chat_calls()[-1]["body"]["messages"])


@pytest.fixture
async def base(make_client: Callable[..., Any]) -> str:
    client = await make_client(**{**NO_LOOPBACK, "api.device_token": DEVICE_TOKEN})
    return str(client.make_url("/"))


async def test_two_strangers_with_one_device_id_do_not_share_a_conversation(
    base: str, ollama: Any
) -> None:
    async with lan_client(base, "127.0.0.2") as one, lan_client(base, "127.0.0.3") as other:
        first = await one.say("the spare key is under the blue pot", device_id="kitchen")
        theirs = await other.say("where is the spare key?", device_id="kitchen")
        assert theirs["session_id"] != first["session_id"]
        assert "blue pot" not in last_prompt(ollama)
        # Each keeps its own: the first stranger's words are still in its own prompt.
        again = await one.say("and where was it?", device_id="kitchen")
        assert again["session_id"] == first["session_id"] and "blue pot" in last_prompt(ollama)


async def test_a_stranger_cannot_claim_a_session_name_before_the_owner(
    base: str, ollama: Any
) -> None:
    # The names the owner may use, and the form the owner's took when a name was taken
    # (before issue 38 it was public: trust + sha256 of the name).
    public_form = "full-" + hashlib.sha256(b"full\0kitchen").hexdigest()[:16]
    owner = {"X-Device-Token": DEVICE_TOKEN}
    async with lan_client(base, "127.0.0.2") as stranger, lan_client(base, "127.0.0.4") as mine:
        for name in ("kitchen", public_form):
            await stranger.say("hello", session_id=name)
        first = await mine.post("/chat/text", {"text": "my PIN is 7311", "session_id": "kitchen"},
                                **owner)  # fmt: skip
        second = await mine.post("/chat/text", {"text": "what is my PIN?", "session_id": "kitchen"},
                                 **owner)  # fmt: skip
        # The owner's conversation of that name keeps its context, turn after turn …
        assert second["session_id"] == first["session_id"] and "7311" in last_prompt(ollama)
        # … and the stranger's stays the stranger's, with none of it.
        for name in ("kitchen", public_form, first["session_id"]):
            got = await stranger.say("what is the PIN?", session_id=name)
            assert got["session_id"] != first["session_id"] and "7311" not in last_prompt(ollama)
