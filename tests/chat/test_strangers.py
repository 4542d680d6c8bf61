"""Issue 38, finding 7: a stranger (no token) could store turns without end (~42 MB/min) until the
owner's device got 503 storage_full, and nothing deleted them; a `public` token added a
`revisions` row per /v1/query with a fresh session id. Now strangers together have a daily
byte allowance and never the owner's reserve, their turns go after
`lifecycle.stranger_turn_days`, and a caller that sees no change writes no delta mark."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from api_kit import App, make_app
from memory_kit import drain

from lobug import keys
from lobug.parts import open_database
from lobug.storage.sqlite import connect, pages_in_use

pytestmark = pytest.mark.timeout(60)

DEVICE_TOKEN = "device-token-0123456789"
OWNER = {"X-Device-Token": DEVICE_TOKEN}
DAY_S = 86400.0
WORDS = "lorem ipsum dolor sit amet " * 14  # ~380 bytes; the fake model echoes it back


async def make(make_client: Callable[..., Any], **overrides: Any) -> App:
    # Loopback plays "the LAN": without the device token a caller is a stranger.
    values = {"api.device_token": DEVICE_TOKEN, "api.allow_loopback": False, **overrides}
    return await make_app(make_client, **values)


async def say(app: App, text: str, headers: dict[str, str], expect: int = 200) -> Any:
    resp = await app.client.post("/chat/text", json={"text": text}, headers=headers)
    body = await resp.json()
    assert resp.status == expect, body
    return body


def stranger_turns(app: App) -> int:
    return int(
        app.value(
            "SELECT COUNT(*) FROM turns t JOIN sessions s ON s.id = t.session_id"
            " WHERE s.trust = 'public'"
        )
    )


async def test_strangers_share_a_daily_allowance_and_the_owner_is_never_refused(
    make_client: Callable[..., Any], clock: Any
) -> None:
    app = await make(make_client, **{"chat.stranger_bytes_per_day": 2000})
    for _ in range(3):  # ~780 bytes a turn with its reply: the third crosses 2,000
        await say(app, WORDS, {})
    stored = stranger_turns(app)
    assert stored == 6
    refused = await say(app, WORDS, {}, expect=503)
    assert refused["error"]["code"] == "unavailable"
    assert "chat.stranger_bytes_per_day" in refused["error"]["message"]
    assert stranger_turns(app) == stored  # refused before anything was stored
    # Posing as another device changes nothing: the allowance is all strangers' together.
    resp = await app.client.post("/chat/text", json={"text": "hi", "device_id": "porch"})
    assert resp.status == 503
    # The owner is neither counted nor refused.
    for _ in range(4):
        await say(app, WORDS, OWNER)
    clock.advance(DAY_S)  # a new household day: a new allowance
    await say(app, "hello again", {})
    assert stranger_turns(app) == stored + 2


async def test_strangers_leave_the_owners_reserve_of_the_page_budget(
    make_client: Callable[..., Any], make_config: Callable[..., Any]
) -> None:
    config = make_config()
    open_database(config).close_sync()  # migrated: what an empty install holds
    conn = connect(config.storage.db_path)
    used = pages_in_use(conn)
    conn.close()
    # 88 % of the budget in use already: past the strangers' share, within the owner's.
    app = await make(make_client, **{"storage.max_page_count": int(used / 0.88) + 1})
    refused = await say(app, "hello", {}, expect=503)
    assert "owner" in refused["error"]["message"]
    assert stranger_turns(app) == 0
    owner = await say(app, "hello", OWNER)
    assert owner["action"] == "RESPOND"


async def test_a_strangers_turns_are_deleted_after_their_days(
    make_client: Callable[..., Any], clock: Any
) -> None:
    app = await make(make_client, **{"lifecycle.stranger_turn_days": 7})
    old = await say(app, "my number is 555 0199", {})
    await say(app, "I am the owner speaking", OWNER)
    await drain(app.db_path, clock)  # embeddings written: the vectors must go too
    assert app.value("SELECT COUNT(*) FROM turn_vectors") >= 2
    clock.advance(8 * DAY_S)
    recent = await say(app, "a newer stranger turn", {})
    gc = await app.client.app[keys.MEMORY].gc(actor="upkeep")  # what the periodic pass runs
    assert gc["stranger_turns_pruned"] == 2  # the old user turn and its reply
    assert stranger_turns(app) == 2  # the recent exchange stays
    left = {r[0] for r in app.rows("SELECT session_id FROM turns")}
    assert recent["session_id"] in left and old["session_id"] not in left
    assert app.value("SELECT COUNT(*) FROM sessions WHERE id = ?", old["session_id"]) == 0
    assert app.value("SELECT COUNT(*) FROM turns_fts WHERE turns_fts MATCH '0199'") == 0
    assert (
        app.value("SELECT COUNT(*) FROM turn_vectors WHERE turn_id <= ?", old["turn_id"] + 1) == 0
    )
    assert app.value("SELECT COUNT(*) FROM turns WHERE text LIKE '%owner speaking%'") == 2  # kept


async def test_a_public_token_writes_no_delta_marks(make_client: Callable[..., Any]) -> None:
    app = await make(make_client)
    before = app.value("SELECT COUNT(*) FROM revisions")
    for n in range(5):
        body = {"query": "anything", "session_id": f"fresh-{n}"}
        got = await app.as_["public"].post("/v1/query", body)
        assert got["delta"] == []
    assert app.value("SELECT COUNT(*) FROM revisions") == before
    # A caller who may see changes still gets its mark.
    await app.as_["familiar"].post("/v1/query", {"query": "anything", "session_id": "mine"})
    assert app.value("SELECT COUNT(*) FROM revisions") == before + 1
