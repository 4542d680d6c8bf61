"""Issue 44, rows 2 and 3: after `chat.session_idle_minutes` of silence a new session starts, and
its prompt opens with what the same caller said in the session before (its gist, dated), never
with another caller's: a stranger's or another token's session stays theirs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from api_kit import TOKENS, App, make_app

from lobug import keys

pytestmark = pytest.mark.timeout(60)

DEVICE_TOKEN = "device-token-0123456789"
OWNER = {"X-Device-Token": DEVICE_TOKEN}
OTHER_TOKEN = {"Authorization": f"Bearer {TOKENS['full']}"}  # full trust, another principal
TITLE = "[Your previous conversation with the user,"


@pytest.fixture
async def app(make_client: Callable[..., Any]) -> App:
    # Loopback plays "the LAN": without a token a caller is a stranger.
    return await make_app(
        make_client, **{"api.device_token": DEVICE_TOKEN, "api.allow_loopback": False}
    )


async def say(app: App, text: str, headers: dict[str, str], **fields: Any) -> dict[str, Any]:
    resp = await app.client.post("/chat/text", json={"text": text, **fields}, headers=headers)
    assert resp.status == 200, await resp.text()
    return dict(await resp.json())


async def complete(app: App, text: str) -> None:
    """One turn through the OpenAI door with a bearer token of its own (issue 38: each token
    is a principal, whatever its trust)."""
    body = {"model": "lobug", "messages": [{"role": "user", "content": text}]}
    resp = await app.client.post("/v1/chat/completions", json=body, headers=OTHER_TOKEN)
    assert resp.status == 200, await resp.text()


def system_message(ollama: Any) -> str:
    state, _ = ollama
    message = state.chat_calls()[-1]["body"]["messages"][0]
    assert message["role"] == "system"
    return str(message["content"])


async def test_the_next_session_opens_with_what_was_said_before(
    app: App, ollama: Any, clock: Any
) -> None:
    breakfast = await say(app, "My blood pressure this morning was 128 over 82.", OWNER,
                          device_id="kitchen")  # fmt: skip
    await say(app, "And I took the blue pill with my porridge.", OWNER, device_id="kitchen")
    # Others talk meanwhile: a stranger on the LAN, and an app with a token of its own.
    await say(app, "The wifi password is hunter2.", {}, device_id="kitchen")
    await complete(app, "My locker code is 4417.")
    assert TITLE not in system_message(ollama)  # nobody's first session carries anything

    clock.advance(4 * 3600)  # lunch: far past session_idle_minutes
    lunch = await say(app, "About what I said this morning, was that reading high?", OWNER,
                      device_id="office")  # fmt: skip
    assert lunch["session_id"] != breakfast["session_id"]
    system = system_message(ollama)
    assert TITLE in system and "today at" in system
    gist = system[system.index(TITLE) :]
    assert "128 over 82" in gist and "blue pill" in gist
    assert "hunter2" not in system and "4417" not in system
    # It stays the same all session: the prompt's cached prefix holds (issue 22).
    await say(app, "And the pill?", OWNER, device_id="office")
    assert system_message(ollama) == system

    # The others' next sessions: the token gets its own words back, the stranger nothing.
    await complete(app, "What was my code again?")
    theirs = system_message(ollama)
    assert "4417" in theirs and "128 over 82" not in theirs
    await say(app, "What is the wifi password?", {}, device_id="kitchen")
    stranger = system_message(ollama)
    assert TITLE not in stranger and "hunter2" not in stranger and "128 over 82" not in stranger


async def test_a_gap_within_the_idle_time_keeps_the_session_and_adds_no_gist(
    app: App, ollama: Any, clock: Any
) -> None:
    first = await say(app, "My blood pressure this morning was 128 over 82.", OWNER)
    clock.advance(10 * 60)
    again = await say(app, "What was it?", OWNER)
    assert again["session_id"] == first["session_id"]
    assert TITLE not in system_message(ollama)


async def test_the_gist_is_the_sessions_record_when_consolidation_wrote_one(
    app: App, ollama: Any, clock: Any
) -> None:
    first = await say(app, "Help me plan Ella's birthday party for Saturday.", OWNER)

    def record(conn: Any) -> None:  # what consolidation's record (seed 002) would write
        conn.execute(
            "INSERT INTO session_summaries (session_id, user_id, request, outcome, decisions,"
            " open_items, created_at, updated_at) VALUES (?, 'default', ?, ?, '[]', ?, 1, 1)",
            (
                first["session_id"],
                "Plan Ella's birthday party on Saturday.",
                "A picnic in the park, twelve children invited.",
                json.dumps(["order the cake"]),
            ),
        )

    await app.client.app[keys.DB].write(record)
    clock.advance(2 * 3600)
    await say(app, "What was left to do for the party?", OWNER)
    gist = system_message(ollama).split(TITLE)[1]
    assert "The user wanted: Plan Ella's birthday party on Saturday." in gist
    assert "How it ended: A picnic in the park" in gist and "Still open: order the cake" in gist
    assert "Help me plan" not in gist  # the record, not the exchanges it sums up
