"""`lobug mcp` over stdio: the real console script on a temp data dir, driven by the MCP SDK's
own client (`stdio_client` + `ClientSession`), as Claude Desktop would."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from cli_kit import config_file, lobug
from dbutil import connect, query
from mcp.shared.exceptions import MCPError

sys.path.insert(0, str(Path(__file__).parent))

from mcp_kit import TOOL_NAMES, call, refused, stdio_session  # noqa: E402

FAMILIAR = "familiar-token-0123456789abcdef"
TOKENS = (
    f'[[api.tokens]]\ntoken = "{FAMILIAR}"\ntrust = "familiar"\nagent = "supervisor"\n'
    'name = "familiar"\n'
)


@pytest.fixture
def config(tmp_path: Path, ollama: tuple[Any, str]) -> Path:
    return config_file(tmp_path, ollama[1], api=TOKENS)


def db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "lobug.db"


async def test_every_tool_over_stdio(config: Path, tmp_path: Path) -> None:
    async with stdio_session(config, errlog=tmp_path / "mcp.err") as mcp:
        listed = (await mcp.list_tools()).tools
        assert {t.name for t in listed} == TOOL_NAMES
        schemas = {t.name: t.input_schema for t in listed}
        # The /v1 shapes' own schemas, written out in place (no $ref left for the host).
        assert schemas["remember"]["required"] == ["content"]
        assert schemas["update"]["required"] == ["id"]
        assert "$ref" not in json.dumps(schemas)
        assert schemas["query"]["properties"]["top_k"]["maximum"] == 100

        made = await call(mcp, "remember", content="The user's sister Mia lives in Lisbon.",
                          category="relationships", tags=["family"])  # fmt: skip
        mid = made["id"]
        assert made["action"] == "added" and made["agent_id"] == "mcp"
        assert (await call(mcp, "get", id=mid))["content"] == made["content"]

        changed = await call(mcp, "update", id=mid, importance=0.9, pinned=True,
                             if_match=made["etag"])  # fmt: skip
        assert changed["importance"] == 0.9 and changed["pinned"] is True
        stale = await refused(mcp, "update", id=mid, importance=0.1, if_match=made["etag"])
        assert stale["code"] == "conflict"

        listing = await call(mcp, "list", q="Lisbon")
        assert [m["id"] for m in listing["memories"]] == [mid]
        found = await call(mcp, "query", query="where does Mia live", top_k=3)
        assert mid in [r["id"] for r in found["results"]]

        await call(mcp, "confirm", id=mid)
        forgotten = await call(mcp, "forget", id=mid)
        assert forgotten["status"] == "soft_deleted" and forgotten["purge_at"]
        assert query(db(tmp_path), "SELECT status FROM memories WHERE id = ?", mid)[0][0] == (
            "soft_deleted"
        )
        assert (await call(mcp, "restore", id=mid))["status"] == "active"
        events = [e["event"] for e in (await call(mcp, "history", id=mid, limit=20))["events"]]
        assert {"ADD", "UPDATE", "SOFT_DELETE", "RESTORE"} <= set(events), events

        context = await call(mcp, "context", session_id="desk-1", q="Mia")
        assert mid in [m["id"] for m in context["memories"]]

    row = query(db(tmp_path), "SELECT importance, pinned, confidence, decay_rate, status "
                "FROM memories WHERE id = ?", mid)[0]  # fmt: skip
    assert tuple(row) == (0.9, 1, 1.0, 0.0, "active")
    # after_write made the vector in-process: no daemon runs here.
    embeds = query(db(tmp_path), "SELECT state FROM jobs WHERE kind = 'embed_memory'")
    assert embeds and {state for (state,) in embeds} == {"done"}


async def test_bad_arguments_come_back_as_our_error_body(config: Path, tmp_path: Path) -> None:
    async with stdio_session(config, errlog=tmp_path / "mcp.err") as mcp:
        error = await refused(mcp, "remember", content="x" * 5000)
        assert error["code"] == "invalid_request" and "'content'" in error["message"]
        error = await refused(mcp, "query", query="tea", filters={"colour": "red"})
        assert error["code"] == "invalid_request" and "colour" in error["message"]
        assert (await refused(mcp, "get"))["details"] == {"field": "id"}
        assert (await refused(mcp, "get", id=999_999))["code"] == "not_found"
        with pytest.raises(MCPError, match="unknown tool"):
            await mcp.call_tool("teleport", {})


async def test_resources_base_memory_and_entities(config: Path, tmp_path: Path) -> None:
    async with stdio_session(config, errlog=tmp_path / "mcp.err") as mcp:
        await call(mcp, "remember", content="The user likes green tea.")  # creates the DB
    conn = connect(db(tmp_path))
    with conn:
        conn.execute(
            "INSERT INTO base_memory (user_id, content, updated_at) VALUES ('default', ?, 0)",
            ("# Alex\n- works at NASA",),
        )
        entity = conn.execute(
            "INSERT INTO entities (user_id, canonical_name, type, created_at, last_mentioned)"
            " VALUES ('default', 'Mia', 'person', 0, 0)"
        ).lastrowid
        memory = conn.execute(  # a name is in the index while a live memory names it
            "INSERT INTO memories (content, created_at, updated_at)"
            " VALUES ('Mia is the user''s niece.', 0, 0)"
        ).lastrowid
        conn.execute(
            "INSERT INTO memory_entities (memory_id, entity_id) VALUES (?, ?)", (memory, entity)
        )
    conn.close()
    async with stdio_session(config, errlog=tmp_path / "mcp.err") as mcp:
        uris = {str(r.uri) for r in (await mcp.list_resources()).resources}
        assert {"lobug://memory/base", "lobug://entities"} <= uris
        templates = (await mcp.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["lobug://entities/{id}"]
        base = (await mcp.read_resource("lobug://memory/base")).contents[0]
        assert isinstance(base, types.TextResourceContents) and "NASA" in base.text
        index = (await mcp.read_resource("lobug://entities")).contents[0]
        assert isinstance(index, types.TextResourceContents)
        (mia,) = json.loads(index.text)["entities"]
        assert f"lobug://entities/{mia['id']}" in uris
        one = (await mcp.read_resource(f"lobug://entities/{mia['id']}")).contents[0]
        assert isinstance(one, types.TextResourceContents)
        assert json.loads(one.text)["canonical_name"] == "Mia"
        with pytest.raises(MCPError, match="not_found"):
            await mcp.read_resource("lobug://entities/424242")


async def test_token_makes_the_agent_that_principal(config: Path, tmp_path: Path) -> None:
    async with stdio_session(config, errlog=tmp_path / "mcp.err") as owner:
        private = await call(owner, "remember", content="The user's PIN is kept in the safe.")
    async with stdio_session(config, "--token", FAMILIAR, errlog=tmp_path / "mcp.err") as mcp:
        # familiar trust: only the social store; the supervisor's allowlist: no `projects`.
        assert (await refused(mcp, "get", id=private["id"]))["code"] == "not_found"
        error = await refused(mcp, "query", query="plans", categories=["projects"])
        assert error["code"] == "forbidden" and "projects" in error["message"]
        assert (await refused(mcp, "list", category="projects"))["code"] == "forbidden"
        social = await call(mcp, "remember", content="The user plays chess in the park.",
                            category="activity")  # fmt: skip
        assert social["store"] == "social" and social["agent_id"] == "supervisor"
        uris = {str(r.uri) for r in (await mcp.list_resources()).resources}
        assert "lobug://memory/base" not in uris  # the base memory is the owner's
        with pytest.raises(MCPError, match="forbidden"):
            await mcp.read_resource("lobug://memory/base")


async def test_agent_narrows_to_its_allowlist(config: Path, tmp_path: Path) -> None:
    async with stdio_session(config, "--agent", "planner", errlog=tmp_path / "mcp.err") as mcp:
        assert (await refused(mcp, "list", category="personal"))["code"] == "forbidden"
        made = await call(mcp, "remember", content="Ship the garden shed plan.", category="tasks")
        assert made["agent_id"] == "planner" and made["store"] == "private"


async def test_unknown_token_is_refused_before_serving(config: Path) -> None:
    code, out, err = await lobug(config, "mcp", "--token", "not-a-token")
    assert code == 2 and out == "" and "api.tokens" in err
