"""Issue 16: JSON a hostile or careless client can send gets the contract's 400, never a 500."""

from __future__ import annotations

from typing import Any

import pytest
from api_contract import V1
from contract import assert_error
from dbutil import query

from lobug import keys

HUGE_INT = "1" * 5000  # past Python's 4,300-digit int-string limit
LONE = "\\ud800"  # a JSON escape of an unpaired surrogate: valid JSON, not valid Unicode
JSON = {"Content-Type": "application/json"}


async def post_raw(client: Any, path: str, raw: str) -> tuple[int, Any]:
    if path.startswith("/v1/"):
        status, body, _ = await V1(client).call("POST", path, data=raw.encode(), headers=JSON)
    else:
        resp = await client.post(path, data=raw.encode(), headers=JSON)
        status, body = resp.status, await resp.json()
    return status, body


def turns(client: Any) -> int:
    return int(query(client.app[keys.CONFIG].storage.db_path, "SELECT COUNT(*) FROM turns")[0][0])


@pytest.mark.parametrize(
    "path, raw",
    [
        ("/chat/text", '{"text": "hello", "n": ' + HUGE_INT + "}"),
        ("/chat/text", '{"text": "hello", "deep": {"list": [-' + HUGE_INT + "]}}"),
        ("/v1/memories", '{"content": "The user likes tea.", "importance": ' + HUGE_INT + "}"),
        ("/context/sensors", '{"battery": ' + HUGE_INT + "}"),
    ],
)
async def test_an_integer_of_more_than_4300_digits_is_400(client: Any, path: str, raw: str) -> None:
    status, body = await post_raw(client, path, raw)
    assert status == 400, body
    assert_error(body, "invalid_json")
    assert "out of range" in body["error"]["message"]
    assert turns(client) == 0


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
async def test_non_finite_numbers_are_400(client: Any, literal: str) -> None:
    status, body = await post_raw(client, "/context/sensors", '{"temperature_c": ' + literal + "}")
    assert status == 400, body
    assert_error(body, "invalid_json")


@pytest.mark.parametrize(
    "path, raw, field",
    [
        ("/chat/text", '{"text": "hi ' + LONE + ' there"}', "text"),
        ("/chat/text", '{"text": "hi", "session_id": "' + LONE + '"}', "session_id"),
        ("/v1/turns", '{"session_id": "c-1", "role": "user", "text": "a' + LONE + '"}', "text"),
        ("/v1/memories", '{"content": "The user likes tea' + LONE + '."}', "content"),
        ("/v1/memories", '{"content": "The user likes tea.", "tags": ["ok", "' + LONE + '"]}',
         "tags[1]"),
        ("/context/sensors", '{"orientation": "' + LONE + '"}', "orientation"),
        ("/context/sensors", '{"custom": {"label": "\\udfff"}}', "custom.label"),
        ("/context/sensors", '{"' + LONE + '": 1}', "\\ud800"),
    ],
)  # fmt: skip
async def test_a_lone_surrogate_is_400_naming_the_field(
    client: Any, path: str, raw: str, field: str
) -> None:
    status, body = await post_raw(client, path, raw)
    assert status == 400, body
    assert_error(body, "invalid_request")
    assert body["error"]["details"]["field"] == field
    assert "surrogate" in body["error"]["message"]
    assert turns(client) == 0
    rows = query(client.app[keys.CONFIG].storage.db_path, "SELECT COUNT(*) FROM sensor_state")
    assert rows[0][0] == 0


async def test_a_surrogate_pair_is_fine(client: Any) -> None:
    status, body = await post_raw(client, "/chat/text", '{"text": "smile \\ud83d\\ude00"}')
    assert status == 200, body
    stored = query(client.app[keys.CONFIG].storage.db_path, "SELECT text FROM turns")
    assert stored[0][0] == "smile \U0001f600"
