"""Who wrote a memory, below full trust (issue 25, item 17): a lower-trust writer writes as
itself; naming another agent, or the owner as the actor, is 403 on /v1 and MCP alike."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from api_kit import TOKENS, make_app
from contract import assert_error

sys.path.insert(0, str(Path(__file__).parents[1] / "mcp"))

from mcp_kit import call, http_session, refused  # noqa: E402

FACT = "The user walks the dog at seven in the morning."


async def test_a_lower_trust_writer_cannot_claim_the_owners_identity(
    make_client: Any,
) -> None:
    app = await make_app(make_client)
    familiar = app.as_["familiar"]  # agent "supervisor", trust familiar
    for claim in ({"agent_id": "local"}, {"agent_id": "owner"}, {"agent_id": "planner"},
                  {"actor_id": "owner"}, {"actor_id": "Local"}):  # fmt: skip
        status, body, _ = await familiar.call(
            "POST", "/v1/memories", json={"content": FACT, **claim}
        )
        assert status == 403, (claim, body)
        assert_error(body, "forbidden")
        assert body["error"]["details"]["field"] == next(iter(claim))
    assert app.value("SELECT COUNT(*) FROM memories") == 0
    # Its own name, a run and a person are fine; so is anything for a full-trust caller.
    mine = await familiar.post(
        "/v1/memories",
        {"content": FACT, "agent_id": "supervisor", "run_id": "r-1", "actor_id": "alex"},
        201,
    )
    assert (mine["agent_id"], mine["actor_id"]) == ("supervisor", "alex")
    owner = await app.as_["full"].post(
        "/v1/memories", {"content": "The user owns a red canoe.", "actor_id": "owner"}, 201
    )
    assert owner["actor_id"] == "owner"
    rows = app.rows("SELECT agent_id, actor_id FROM memories ORDER BY id")
    assert [tuple(r) for r in rows] == [("supervisor", "alex"), ("supervisor", "owner")]


async def test_mcp_remember_refuses_the_same_claims(make_client: Any) -> None:
    app = await make_app(make_client)
    url = str(app.client.make_url("/mcp"))
    async with http_session(url, TOKENS["inner"]) as mcp:
        error = await refused(mcp, "remember", content=FACT, agent_id="local")
        assert error["code"] == "forbidden" and "agent_id" in error["message"]
        error = await refused(mcp, "remember", content=FACT, actor_id="owner")
        assert error["code"] == "forbidden" and "actor_id" in error["message"]
        made = await call(mcp, "remember", content=FACT)
        assert made["agent_id"] == "supervisor"
    assert app.value("SELECT COUNT(*) FROM memories") == 1
