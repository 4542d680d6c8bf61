"""/health reports what stops writes (issue 25, item 18): a full disk or page budget makes it
`degraded` with a problem saying so, within the frozen device schema."""

from __future__ import annotations

import shutil
from collections import namedtuple
from typing import Any

import pytest
from contract import assert_error, assert_valid

BIG = "remember this long story " * 140  # ~3.5 KB: needs new pages


async def get_health(client: Any) -> dict[str, Any]:
    resp = await client.get("/health")
    assert resp.status == 200
    body: dict[str, Any] = await resp.json()
    assert_valid("health.response", body)
    return body


async def test_a_full_page_budget_is_a_problem_on_health(make_client: Any) -> None:
    client = await make_client(**{"storage.max_page_count": 120})  # an empty DB uses ~80
    assert (await get_health(client))["status"] == "ok"
    for i in range(60):
        resp = await client.post("/chat/text", json={"text": f"{i} {BIG}", "device_id": "desk"})
        if resp.status != 200:
            break
    assert resp.status == 503, "the page budget never filled up"
    assert_error(await resp.json(), "storage_full")
    body = await get_health(client)
    assert body["status"] == "degraded" and body["db"] is True  # readable, not writable
    assert any("storage_full" in p and "max_page_count" in p for p in body["problems"])


async def test_a_full_disk_is_a_problem_on_health(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = namedtuple("usage", "total used free")
    real = shutil.disk_usage
    assert (await get_health(client))["status"] == "ok"
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(8 << 30, 8 << 30, 3 << 20))
    body = await get_health(client)
    assert body["status"] == "degraded"
    (problem,) = [p for p in body["problems"] if "disk" in p]
    assert "3 MiB free" in problem and "storage_full" in problem
    monkeypatch.setattr(shutil, "disk_usage", real)
    assert (await get_health(client))["status"] == "ok"  # space freed: healthy again


async def test_health_says_which_parts_are_embedded_external_or_missing(make_client: Any) -> None:
    client = await make_client()
    body = await get_health(client)
    parts = body["parts"]
    assert (parts["llm"]["where"], parts["llm"]["ok"]) == ("external", True), parts
    assert parts["llm"]["what"].startswith("ollama at http://127.0.0.1:")
    assert (parts["embedder"]["where"], parts["embedder"]["ok"]) == ("embedded", True), parts
    assert parts["embedder"]["what"].startswith("hashing ")
    assert parts["stt"]["where"] == "embedded" and parts["stt"]["ok"] is body["stt"], parts


async def test_a_missing_chat_server_is_a_missing_part(make_client: Any, ollama: Any) -> None:
    state, _ = ollama
    state.mode = "down"
    client = await make_client()
    parts = (await get_health(client))["parts"]
    assert (parts["llm"]["where"], parts["llm"]["ok"]) == ("external", False), parts
