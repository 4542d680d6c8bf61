"""Issue 38, finding 17: a `public` token read /metrics and the activity in /v1/stats (how many
memories, when the owner talks). The household's activity is the owner's: /metrics answers only
full trust, and /v1/stats gives lower trust the counts of what it may see, without the
operations log."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_kit import TOKENS, make_app


async def test_only_full_trust_reads_the_households_activity(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client)
    await app.remember("The user's passport is in the blue drawer.")
    await app.client.post("/chat/text", json={"text": "good morning"})
    owner = await app.local.get("/v1/stats")
    assert owner["memories"]["total"] == 1 and owner["operations"]
    for trust in ("inner", "familiar", "public"):
        seen = await app.as_[trust].get("/v1/stats")
        assert "operations" not in seen, (trust, seen)
        assert seen["memories"]["total"] == 0 and seen["turns"] == 0
    for trust in ("inner", "familiar", "public"):
        headers = {"Authorization": f"Bearer {TOKENS[trust]}"}
        resp = await app.client.get("/metrics", headers=headers)
        body = await resp.json()
        assert resp.status == 403, (trust, body)
        assert body["error"]["code"] == "forbidden" and "full trust" in body["error"]["message"]
    resp = await app.client.get("/metrics", headers={"Authorization": f"Bearer {TOKENS['full']}"})
    assert resp.status == 200 and "lobug_turns_total" in await resp.text()
    assert (await app.client.get("/metrics")).status == 200  # the loopback owner
