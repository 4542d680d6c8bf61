"""/chat/text end to end through the real app, a real SQLite file and the fake Ollama."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from contract import assert_error, assert_valid
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import Script, drain

from lobug import keys
from lobug.llm.replies import REPLY_SCHEMA


def rows(client: Any, sql: str, *params: Any) -> list[Any]:
    return query(client.app[keys.CONFIG].storage.db_path, sql, *params)


async def post_text(client: Any, payload: Any, status: int = 200) -> dict[str, Any]:
    resp = await client.post("/chat/text", json=payload)
    body = await resp.json()
    assert resp.status == status, body
    return body


async def test_respond_turn_is_stored_and_schema_valid(client: Any, ollama: Any) -> None:
    state, _ = ollama
    body = await post_text(client, {"text": "  My name is Alex and I work at NASA  "})
    assert_valid("chat_text.response", body)
    assert body["action"] == "RESPOND"
    assert body["response"] == "You said: My name is Alex and I work at NASA"
    assert body["session_id"].startswith("s-")
    stored = rows(client, "SELECT role, text, action, session_id FROM turns ORDER BY id")
    assert [(r["role"], r["text"], r["action"]) for r in stored] == [
        ("user", "My name is Alex and I work at NASA", "RESPOND"),
        ("assistant", "You said: My name is Alex and I work at NASA", "RESPOND"),
    ]
    assert body["turn_id"] == rows(client, "SELECT id FROM turns WHERE role='user'")[0]["id"]
    call = state.chat_calls()[-1]["body"]
    assert call["format"] == REPLY_SCHEMA.schema and call["stream"] is False
    assert call["messages"][0]["role"] == "system"
    assert "Lo-Bug" in call["messages"][0]["content"]
    assert call["messages"][-1] == {
        "role": "user",
        "content": "My name is Alex and I work at NASA",
    }


async def test_plain_text_model_reply_is_respond(client: Any, ollama: Any) -> None:
    state, _ = ollama
    state.reply = "Sure thing, Alex."
    body = await post_text(client, {"text": "hello"})
    assert body == {**body, "action": "RESPOND", "response": "Sure thing, Alex."}


async def test_ignore_reply_is_logged_but_leaves_working_memory(client: Any, ollama: Any) -> None:
    state, _ = ollama
    state.reply = json.dumps({"action": "IGNORE", "response": ""})
    body = await post_text(client, {"text": "*clatter of dishes*"})
    assert_valid("chat_text.response", body)
    assert body["action"] == "IGNORE" and body["response"] == ""
    assert [r["action"] for r in rows(client, "SELECT action FROM turns")] == ["IGNORE", "IGNORE"]
    state.reply = None
    await post_text(client, {"text": "what time is it", "session_id": body["session_id"]})
    history = state.chat_calls()[-1]["body"]["messages"][1:]
    assert [m["content"] for m in history] == ["what time is it"]


async def test_working_memory_carries_the_conversation(client: Any, ollama: Any) -> None:
    state, _ = ollama
    first = await post_text(client, {"text": "one", "device_id": "desk"})
    await post_text(client, {"text": "two", "device_id": "desk"})
    history = state.chat_calls()[-1]["body"]["messages"][1:]
    assert [m["content"] for m in history] == ["one", "You said: one", "two"]
    third = await post_text(client, {"text": "three", "device_id": "desk"})
    assert third["session_id"] == first["session_id"]


async def test_working_memory_is_bounded(make_client: Any, ollama: Any) -> None:
    state, _ = ollama
    client = await make_client(**{"chat.working_memory_size": 4})
    for i in range(5):
        await post_text(client, {"text": f"m{i}", "session_id": "s-fixed"})
    # The window slides in blocks: full at 4 messages, it drops to 2 and grows again; the
    # kept half opens on the user's words, never on a reply whose question slid out.
    windows = [[m["content"] for m in c["body"]["messages"][1:]] for c in state.chat_calls()]
    assert windows == [
        ["m0"],
        ["m0", "You said: m0", "m1"],
        ["m2"],
        ["m2", "You said: m2", "m3"],
        ["m4"],
    ]


async def test_the_slid_window_opens_on_the_users_words(make_client: Any, ollama: Any) -> None:
    state, _ = ollama
    client = await make_client(**{"chat.working_memory_size": 8})
    for i in range(5):
        await post_text(client, {"text": f"m{i}", "session_id": "s-fixed"})
    # Full at 8 messages, the window slides to fewer than 4: the reply to m2 would open it,
    # its question gone, so the last whole exchange and the new words are what is kept.
    history = state.chat_calls()[-1]["body"]["messages"][1:]
    assert [m["content"] for m in history] == ["m3", "You said: m3", "m4"]
    assert history[0]["role"] == "user"


async def test_idle_gap_starts_a_new_session(client: Any, clock: Any) -> None:
    first = await post_text(client, {"text": "hi", "device_id": "desk"})
    clock.advance(29 * 60)
    same = await post_text(client, {"text": "still here", "device_id": "desk"})
    clock.advance(31 * 60)
    later = await post_text(client, {"text": "back again", "device_id": "desk"})
    other = await post_text(client, {"text": "hello", "device_id": "kitchen"})
    assert same["session_id"] == first["session_id"]
    assert later["session_id"] != first["session_id"]
    assert other["session_id"] not in (first["session_id"], later["session_id"])


async def test_llm_down_answers_degraded_and_keeps_the_turn(client: Any, ollama: Any) -> None:
    state, _ = ollama
    state.mode = "down"
    body = await post_text(client, {"text": "remember that I like tea"})
    assert_valid("chat_text.response", body)
    assert body["degraded"] is True and body["action"] == "RESPOND" and body["response"]
    stored = rows(client, "SELECT role, text, degraded FROM turns ORDER BY id")
    assert stored[0]["text"] == "remember that I like tea"
    assert stored[1]["degraded"] == 1


async def test_llm_timeout_and_missing_model_are_degraded(make_client: Any, ollama: Any) -> None:
    state, _ = ollama
    client = await make_client(**{"ollama.timeout_s": 0.2})
    state.delay_s = 1.0
    body = await post_text(client, {"text": "slow"})
    assert body["degraded"] is True
    state.delay_s = 0.0
    client2 = await make_client(**{"ollama.chat_model": "no-such-model"})
    body = await post_text(client2, {"text": "missing model"})
    assert body["degraded"] is True
    assert rows(client2, "SELECT COUNT(*) AS n FROM turns WHERE text='missing model'")[0]["n"] == 1


async def test_malformed_and_reset_replies_are_degraded(client: Any, ollama: Any) -> None:
    state, _ = ollama
    for mode in ("malformed", "reset"):
        state.mode = mode
        body = await post_text(client, {"text": f"try {mode}"})
        assert body["degraded"] is True, mode
    assert len(rows(client, "SELECT id FROM turns WHERE role='user'")) == 2


async def test_bad_input_gets_clear_errors(client: Any) -> None:
    cases: list[tuple[Any, int, str]] = [
        ({}, 400, "invalid_request"),
        ({"text": ""}, 400, "invalid_request"),
        ({"text": "   "}, 400, "invalid_request"),
        ({"text": 42}, 400, "invalid_request"),
        ({"text": "x" * 4001}, 413, "payload_too_large"),
        ({"text": "hi", "session_id": 7}, 400, "invalid_request"),
        ({"text": "hi", "device_id": "d" * 200}, 400, "invalid_request"),
        (["text"], 400, "invalid_request"),
    ]
    for payload, status, code in cases:
        resp = await client.post("/chat/text", json=payload)
        body = await resp.json()
        assert resp.status == status, (payload, body)
        assert_error(body, code)
    raw_cases: list[tuple[bytes, str, int, str]] = [
        (b"{not json", "application/json", 400, "invalid_json"),
        (b"", "application/json", 400, "invalid_json"),
        (b'{"text": "\xff\xfe"}', "application/json", 400, "invalid_json"),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", 413, "payload_too_large"),
        (b"[" * 5000 + b"]" * 5000, "application/json", 400, "invalid_json"),
        (b"text=hi", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
    ]
    for data, ctype, status, code in raw_cases:
        resp = await client.post("/chat/text", data=data, headers={"Content-Type": ctype})
        body = await resp.json()
        assert resp.status == status, (data[:20], body)
        assert_error(body, code)
    assert rows(client, "SELECT COUNT(*) AS n FROM turns")[0]["n"] == 0


async def test_unknown_fields_are_ignored(client: Any) -> None:
    body = await post_text(client, {"text": "hi", "firmware": "1.2.3", "extra": {"a": 1}})
    assert_valid("chat_text.response", body)


async def test_unknown_route_and_method(client: Any) -> None:
    resp = await client.get("/chat/text")
    assert resp.status == 405
    assert_error(await resp.json(), "invalid_request")
    resp = await client.get("/nope")
    assert resp.status == 404
    assert_error(await resp.json(), "not_found")


async def test_unexpected_error_is_a_generic_500_with_traceback_logged(
    client: Any, monkeypatch: Any, caplog: Any
) -> None:
    async def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(client.app[keys.CHAT], "turn", boom)
    resp = await client.post("/chat/text", json={"text": "hi"})
    body = await resp.json()
    assert resp.status == 500
    assert_error(body, "internal")
    assert "secret" not in body["error"]["message"]
    assert any("secret internal detail" in (r.exc_text or "") for r in caplog.records)


async def test_a_reply_is_linked_to_the_turn_it_answers_when_two_devices_talk_at_once(
    make_client: Any, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    """Two devices at once interleave the turns' ids: the kitchen's reply is not the id after
    its question (issue 39). The link is stored with the reply, so the search still reads it
    as the answer to that question (its reply key, `vectors.replies`)."""
    state, _ = ollama
    state.script = Script(
        reply=lambda said: json.dumps(
            {"action": "RESPOND", "response": "Tuesdays, before eight." if "recycling" in said
             else "Done."}
        )
    )  # fmt: skip
    state.delay_s = 0.3
    client = await make_client()
    asked = {"text": "Which day does the recycling go out?", "device_id": "kitchen"}
    told = {"text": "Turn the hall lights off.", "device_id": "hall"}
    first = client.post("/chat/text", json=asked)
    await asyncio.sleep(0.1)  # the kitchen's turn first, then the hall's, then both replies
    resps = await asyncio.gather(first, client.post("/chat/text", json=told))
    assert [r.status for r in resps] == [200, 200]
    path = client.app[keys.CONFIG].storage.db_path
    rows = {r["text"]: r for r in query(path, "SELECT id, text, reply_to FROM turns")}
    question, reply = rows[asked["text"]], rows["Tuesdays, before eight."]
    assert reply["id"] != question["id"] + 1  # interleaved
    assert reply["reply_to"] == question["id"]
    assert rows["Done."]["reply_to"] == rows[told["text"]]["id"]
    await drain(path, clock)
    keyed = [r[0] for r in query(path, "SELECT turn_id FROM turn_reply_keys")]
    assert keyed == [reply["id"]]
