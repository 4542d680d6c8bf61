"""GET /v1/sessions/{id}/summary on the real app: a device's session ends (it moves to another),
the daemon's `consolidate_session` job writes seed 002's record with one LLM call, and the route
shows it to callers who may read the conversation; 404 (the contract's error body) before that
or for an unknown session, 403 below full trust."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from api_kit import make_app
from fake_ollama import FakeOllamaState
from memory_kit import Reply, Script, drain

RECORD = {
    "request": "The user asked what to cook with leftover rice.",
    "outcome": "Lo-Bug suggested fried rice with eggs and peas.",
    "decisions": ["The user will make fried rice tonight."],
    "open_items": ["The user has to buy peas."],
}


@dataclass
class Cook(Script):
    """The fake model: device turns echoed, the session record scripted (`session`)."""

    session: Reply = lambda _: json.dumps(RECORD)  # noqa: E731


async def test_an_ended_sessions_summary_through_the_route(
    make_client: Callable[..., Any], ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state, _ = ollama
    state.script = Cook()
    app = await make_app(make_client)
    for text in ("What can I cook with leftover rice?", "Fried rice sounds good, thanks."):
        resp = await app.client.post("/chat/text", json={"text": text, "session_id": "rice-1"})
        assert resp.status == 200
        clock.advance(30)
    await drain(app.db_path, clock)
    missing = await app.local.get("/v1/sessions/rice-1/summary", 404)  # still going
    assert missing["error"]["code"] == "not_found" and "rice-1" in missing["error"]["message"]

    await app.client.post("/chat/text", json={"text": "Set a timer.", "session_id": "rice-2"})
    await drain(app.db_path, clock)
    assert len(state.memory_calls("session")) == 1
    found = await app.local.get("/v1/sessions/rice-1/summary")
    assert {k: found[k] for k in RECORD} == RECORD
    assert (found["session_id"], found["turn_count"]) == ("rice-1", 4)
    assert found["observation_count"] == app.value(
        "SELECT COUNT(*) FROM memories WHERE session_id = 'rice-1' AND status = 'active'"
    )
    assert found == await app.as_["full"].get("/v1/sessions/rice-1/summary")

    for trust in ("inner", "familiar", "public"):  # the conversation is the owner's
        refused = await app.as_[trust].get("/v1/sessions/rice-1/summary", 403)
        assert refused["error"]["code"] == "forbidden"
    await app.local.get("/v1/sessions/rice-2/summary", 404)  # the one still going
    await app.local.get("/v1/sessions/nobody/summary", 404)
    await app.local.get("/v1/sessions/%01bad/summary", 404)  # no session could have this id
    unauthorized = await app.as_["full"].as_token("wrong").get("/v1/sessions/rice-1/summary", 401)
    assert unauthorized["error"]["code"] == "unauthorized"
