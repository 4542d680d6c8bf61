"""Streamable HTTP at /mcp: the real app on a real port, the MCP SDK's own client, /v1's tokens.

Each trust level reaches the same service layer as /v1 with its own principal: a `familiar`
token cannot read the private store nor a category outside its agent's allowlist.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import aiohttp
import mcp_types as types
import pytest
from api_kit import TOKENS, make_app
from dbutil import connect
from mcp.shared.exceptions import MCPError

from lobug.access import STORES

sys.path.insert(0, str(Path(__file__).parent))

from mcp_kit import TOOL_NAMES, call, http_session, refused  # noqa: E402

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    },
}


def mcp_url(app: Any) -> str:
    return str(app.client.make_url("/mcp"))


async def test_every_tool_with_a_full_token(make_client: Any) -> None:
    app = await make_app(make_client)
    async with http_session(mcp_url(app), TOKENS["full"]) as mcp:
        assert {t.name for t in (await mcp.list_tools()).tools} == TOOL_NAMES
        made = await call(mcp, "remember", content="The user's dentist is Dr Okafor on Elm St.",
                          category="personal")  # fmt: skip
        mid = made["id"]
        assert made["store"] == "private" and made["agent_id"] == "supervisor"
        assert (await call(mcp, "get", id=mid))["category"] == "personal"
        assert (await call(mcp, "update", id=mid, tags=["health"]))["tags"] == ["health"]
        assert [m["id"] for m in (await call(mcp, "list", q="dentist"))["memories"]] == [mid]
        found = await call(mcp, "query", **{"query": "who is the dentist", "return": "full"})
        assert mid in [r["id"] for r in found["results"]]
        assert (await call(mcp, "confirm", id=mid))["confidence"] == 1.0
        assert (await call(mcp, "forget", id=mid))["status"] == "soft_deleted"
        assert app.value("SELECT status FROM memories WHERE id = ?", mid) == "soft_deleted"
        assert (await call(mcp, "restore", id=mid))["status"] == "active"
        history = await call(mcp, "history", id=mid)
        assert history["events"][0]["event"] == "RESTORE"
        context = await call(mcp, "context", session_id="s-1", q="dentist")
        assert mid in [m["id"] for m in context["memories"]]
    assert app.value("SELECT tags FROM memories WHERE id = ?", mid) == '["health"]'
    assert app.value("SELECT decay_rate FROM memories WHERE id = ?", mid) == 0.0


async def test_familiar_token_sees_only_its_store_and_categories(make_client: Any) -> None:
    app = await make_app(make_client)
    private = await app.remember("The user's bank PIN is hidden in the piano.")
    async with http_session(mcp_url(app), TOKENS["familiar"]) as mcp:
        assert (await refused(mcp, "get", id=private["id"]))["code"] == "not_found"
        error = await refused(mcp, "query", query="plans", categories=["projects"])
        assert error["code"] == "forbidden" and "projects" in error["message"]
        assert (await refused(mcp, "list", category="procedural"))["code"] == "forbidden"
        written = await refused(mcp, "remember", content="x is y", store="private")
        assert written["code"] == "forbidden"
        found = await call(mcp, "query", query="bank PIN piano")
        assert private["id"] not in [r["id"] for r in found["results"]]
        uris = {str(r.uri) for r in (await mcp.list_resources()).resources}
        assert "lobug://memory/base" not in uris and "lobug://entities" in uris
        with pytest.raises(MCPError, match="forbidden"):
            await mcp.read_resource("lobug://memory/base")
    assert app.value("SELECT COUNT(*) FROM memories") == 1  # the refused write wrote nothing


async def test_people_timeline_and_several_ids_within_the_callers_stores(
    make_client: Any, clock: Any
) -> None:
    """Seed 002's people, timeline and several-ids tools, post-filtered by the caller's stores."""
    app = await make_app(make_client)
    private = await app.remember("The user's brother Oliver lives in Bristol.")
    clock.advance(60)
    social = await app.remember("The user's friend Priya plays chess in the park.", store="social")
    async with http_session(mcp_url(app), TOKENS["full"]) as mcp:
        people = await call(mcp, "entities", type="person")
        assert {e["canonical_name"] for e in people["entities"]} == {"Oliver", "Priya"}
        (oliver,) = [e for e in people["entities"] if e["canonical_name"] == "Oliver"]
        assert [m["id"] for m in (await call(mcp, "entity", id=oliver["id"]))["memories"]] == [
            private["id"]
        ]
        window = await call(mcp, "timeline", anchor=social["id"], before=1, after=0)
        assert [m["id"] for m in window["items"]] == [private["id"], social["id"]]
        both = await call(mcp, "get", ids=[social["id"], private["id"], 99999])
        assert [m["id"] for m in both["memories"]] == [social["id"], private["id"]]
        assert both["missing"] == [99999]
        assert (await refused(mcp, "get", id=private["id"], ids=[1]))["code"] == "invalid_request"
        assert (await refused(mcp, "get", ids=[]))["code"] == "invalid_request"
    async with http_session(mcp_url(app), TOKENS["familiar"]) as mcp:
        people = await call(mcp, "entities", type="person")
        assert [e["canonical_name"] for e in people["entities"]] == ["Priya"]
        assert (await refused(mcp, "entity", id=oliver["id"]))["code"] == "not_found"
        both = await call(mcp, "get", ids=[social["id"], private["id"]])
        assert [m["id"] for m in both["memories"]] == [social["id"]]
        assert both["missing"] == [private["id"]]
        assert (await refused(mcp, "timeline", anchor=private["id"]))["code"] == "not_found"


async def test_resources_over_http(make_client: Any) -> None:
    app = await make_app(make_client)
    conn = connect(app.db_path)
    with conn:
        conn.execute("INSERT INTO base_memory (user_id, content, updated_at)"
                     " VALUES ('default', '# Alex\n- likes green tea', 0)")  # fmt: skip
        entity = conn.execute(
            "INSERT INTO entities (user_id, canonical_name, type, store, created_at,"
            " last_mentioned) VALUES ('default', 'Mia', 'person', 'social', 0, 0)"
        ).lastrowid
        memory = conn.execute(  # a name is in the index while a live memory names it
            "INSERT INTO memories (content, store, created_at, updated_at)"
            " VALUES ('Mia is the user''s niece.', 'social', 0, 0)"
        ).lastrowid
        conn.execute(
            "INSERT INTO memory_entities (memory_id, entity_id) VALUES (?, ?)", (memory, entity)
        )
    conn.close()
    async with http_session(mcp_url(app)) as mcp:  # loopback: the owner, every category
        base = (await mcp.read_resource("lobug://memory/base")).contents[0]
        assert isinstance(base, types.TextResourceContents) and "green tea" in base.text
        index = (await mcp.read_resource("lobug://entities")).contents[0]
        assert isinstance(index, types.TextResourceContents)
        (mia,) = json.loads(index.text)["entities"]
        one = (await mcp.read_resource(f"lobug://entities/{mia['id']}")).contents[0]
        assert isinstance(one, types.TextResourceContents)
        assert json.loads(one.text)["canonical_name"] == "Mia"
    async with http_session(mcp_url(app), TOKENS["full"]) as mcp:  # an allowlisted agent
        with pytest.raises(MCPError, match="forbidden"):
            await mcp.read_resource("lobug://memory/base")


async def test_missing_or_wrong_token_is_refused(make_client: Any) -> None:
    app = await make_app(make_client, **{"api.allow_loopback": False})
    async with aiohttp.ClientSession() as http:
        async with http.post(mcp_url(app), json=INITIALIZE, headers=ACCEPT) as resp:
            assert resp.status == 401
            assert resp.headers["WWW-Authenticate"] == 'Bearer realm="lobug"'
            assert (await resp.json())["error"]["code"] == "unauthorized"
        wrong = {**ACCEPT, "Authorization": "Bearer not-a-token"}
        async with http.post(mcp_url(app), json=INITIALIZE, headers=wrong) as resp:
            assert resp.status == 401
            assert 'error="invalid_token"' in resp.headers["WWW-Authenticate"]
    with pytest.raises(ExceptionGroup) as caught:  # the SDK client cannot even initialize
        async with http_session(mcp_url(app), "not-a-token") as mcp:
            await mcp.list_tools()
    assert caught.group_contains(MCPError, match="error response")
    async with http_session(mcp_url(app), TOKENS["inner"]) as mcp:  # a good token still works
        assert (await call(mcp, "list"))["count"] == 0


async def test_wrong_token_is_refused_even_from_loopback(make_client: Any) -> None:
    app = await make_app(make_client)  # loopback allowed: no token means the local owner
    async with aiohttp.ClientSession() as http:
        wrong = {**ACCEPT, "Authorization": "Bearer revoked-token"}
        async with http.post(mcp_url(app), json=INITIALIZE, headers=wrong) as resp:
            assert resp.status == 401
    async with http_session(mcp_url(app)) as mcp:  # no token, loopback: the owner
        assert (await call(mcp, "remember", content="The user is left-handed."))["store"] == (
            "private"
        )


async def test_only_the_daemons_own_origin_and_names_reach_mcp(make_client: Any) -> None:
    """Issue 25 (7, 16): a page from another origin, another port of this machine included
    (not every http://localhost:<port> is us), or on a rebound name is 403, token or not."""
    app = await make_app(make_client)
    own = str(app.client.make_url("")).rstrip("/")  # http://127.0.0.1:<port>
    port = app.client.port
    full = {"Authorization": f"Bearer {TOKENS['full']}"}
    async with aiohttp.ClientSession() as http:
        for headers in (
            {"Origin": "http://rebound.example"},
            {"Origin": "http://localhost:1"},  # another service on this machine
            {"Origin": f"http://localhost:{port + 1}"},
            {"Origin": "null"},
            {"Origin": "http://rebound.example", **full},
            {"Origin": "http://localhost:1", **full},
            {"Host": f"rebound.example:{port}"},  # DNS rebinding: the page's own name
            {"Host": f"rebound.example:{port}", "Origin": f"http://rebound.example:{port}"},
        ):
            async with http.post(mcp_url(app), json=INITIALIZE,
                                 headers={**ACCEPT, **headers}) as resp:  # fmt: skip
                assert resp.status == 403, headers
                assert (await resp.json())["error"]["code"] == "forbidden"
                assert "Mcp-Session-Id" not in resp.headers
        for headers in ({"Origin": own}, {"Origin": own, **full}, {"Host": f"localhost:{port}"}):
            async with http.post(mcp_url(app), json=INITIALIZE,
                                 headers={**ACCEPT, **headers}) as resp:  # fmt: skip
                assert resp.status == 200 and resp.headers["Mcp-Session-Id"], headers


async def test_a_session_answers_only_the_credential_that_opened_it(make_client: Any) -> None:
    app = await make_app(make_client)
    full = {**ACCEPT, "Authorization": f"Bearer {TOKENS['full']}"}
    async with aiohttp.ClientSession() as http:
        async with http.post(mcp_url(app), json=INITIALIZE, headers=full) as resp:
            assert resp.status == 200
            session = resp.headers["Mcp-Session-Id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        other = {**ACCEPT, "Authorization": f"Bearer {TOKENS['familiar']}",
                 "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"}  # fmt: skip
        async with http.post(mcp_url(app), json=listing, headers=other) as resp:
            assert resp.status == 404
        same = {**other, "Authorization": full["Authorization"]}
        async with http.post(mcp_url(app), json=listing, headers=same) as resp:
            assert resp.status in (200, 202)


async def test_query_tool_takes_stores_and_the_history_switch(make_client: Any) -> None:
    """The MCP `query` tool's schema is /v1/query's: `stores` within the token's trust (403
    `forbidden` beyond it), replaced facts only with `include_superseded`."""
    app = await make_app(make_client)
    social = await app.remember("The user plays chess in the park.", store="social")
    shared = await app.remember("The user plays chess with the family.", store="shared")
    old = await app.remember("The user lives in Portland.", store="social")
    new = await app.remember("The user lives in Seattle.", store="social")
    assert new["supersedes"] == old["id"]
    async with http_session(mcp_url(app), TOKENS["familiar"]) as mcp:
        tool = next(t for t in (await mcp.list_tools()).tools if t.name == "query")
        assert tool.input_schema["properties"]["stores"]["items"]["enum"] == list(STORES)
        assert tool.input_schema["properties"]["include_superseded"]["type"] == "boolean"
        error = await refused(mcp, "query", query="chess", stores=["shared"])
        assert error["code"] == "forbidden" and error["details"] == {
            "store": "shared",
            "trust": "familiar",
        }
        found = await call(mcp, "query", query="plays chess", stores=["social"], top_k=10)
        assert [r["id"] for r in found["results"]][0] == social["id"]
        lives = [
            r["id"] for r in (await call(mcp, "query", query="user lives", top_k=10))["results"]
        ]
        assert new["id"] in lives and old["id"] not in lives
        history = await call(mcp, "query", query="user lives", top_k=10, include_superseded=True)
        ranked = [r["id"] for r in history["results"]]
        assert ranked.index(new["id"]) < ranked.index(old["id"])
    async with http_session(mcp_url(app), TOKENS["inner"]) as mcp:
        found = await call(mcp, "query", query="plays chess", stores=["shared"], top_k=10)
        assert [r["id"] for r in found["results"]] == [shared["id"]]  # the only one there
