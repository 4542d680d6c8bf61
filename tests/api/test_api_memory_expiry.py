"""Seed 002's per-memory `expires_at` through the /v1 doors, on the real app and database: a
memory written with an end date is found until then, hidden from every read (get, list, query,
the prompt) after it, soft-deleted by the GC with a history row, and restorable for good. A time
already past, or both spellings at once, is a 400 that stores and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from api_kit import ids, make_app
from fake_ollama import FakeOllamaState
from memory_kit import drain

PARKED = "The user parked the car on level three of the station garage."
DENTIST = "The user has a dentist appointment on Friday afternoon."
BADGE = "The user's visitor badge number this week is 4471."
HOUR = 3600.0


async def test_a_memory_with_an_end_date_is_hidden_after_it_and_the_gc_retires_it(
    make_client: Callable[..., Any], clock: Any, ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    app = await make_app(make_client)
    ends = clock() + HOUR
    parked = await app.remember(PARKED, expires_at=ends)
    assert parked["expires_at"] == ends and parked["action"] == "added"
    kept = await app.remember(DENTIST)
    assert kept["expires_at"] is None
    badge = await app.remember(BADGE, category="profile", expires_at=ends)  # always in context
    assert app.value("SELECT expires_at FROM memories WHERE id = ?", parked["id"]) == ends
    await drain(app.db_path, clock)  # the embed jobs

    # Until then it is like any memory: read, listed, found, and in the prompt.
    assert (await app.local.get(f"/v1/memories/{parked['id']}"))["expires_at"] == ends
    assert parked["id"] in ids(await app.local.get("/v1/memories"))
    found = await app.local.post("/v1/query", {"query": "where did I park the car"})
    assert parked["id"] in [r["id"] for r in found["results"]]
    await app.client.post("/chat/text", json={"text": "Where did I park the car?"})
    assert PARKED in state.prompt_text() and BADGE in state.prompt_text()
    context = await app.local.get("/v1/context?session_id=desk&q=parking")
    assert [a["id"] for a in context["always"]] == [badge["id"]]

    clock.advance(HOUR)  # expires_at is reached: hidden from every read at once
    await app.local.get(f"/v1/memories/{parked['id']}", 404)
    await app.local.get(f"/v1/memories/{parked['id']}/history", 404)
    await app.local.patch(f"/v1/memories/{parked['id']}", {"importance": 0.9}, 404)
    assert ids(await app.local.get("/v1/memories")) == [kept["id"]]
    assert ids(await app.local.get("/v1/memories?q=garage")) == []
    found = await app.local.post("/v1/query", {"query": "where did I park the car"})
    assert parked["id"] not in [r["id"] for r in found["results"]]
    await app.client.post("/chat/text", json={"text": "Where did I park the car again?"})
    assert PARKED not in state.prompt_text() and BADGE not in state.prompt_text()
    assert (await app.local.get("/v1/context?session_id=desk&q=parking"))["always"] == []
    assert (await app.local.get("/v1/stats"))["memories"]["total"] == 1
    # Still a row: only the GC changes it, with its history event.
    assert app.value("SELECT status FROM memories WHERE id = ?", parked["id"]) == "active"

    gc = await app.local.post("/v1/gc", {})
    assert (gc["expired"], gc["soft_deleted"]) == (2, 2)
    row = app.rows("SELECT status, purge_at FROM memories WHERE id = ?", parked["id"])[0]
    assert row["status"] == "soft_deleted" and row["purge_at"] > clock()
    events = (await app.local.get(f"/v1/memories/{parked['id']}/history"))["events"]
    assert events[0]["event"] == "EXPIRE"
    assert events[0]["meta"]["reason"] == "expired" and events[0]["meta"]["expires_at"] == ends
    listed = await app.local.get("/v1/memories?status=soft_deleted")
    assert sorted(ids(listed)) == [parked["id"], badge["id"]]
    assert (await app.local.post("/v1/gc", {}))["expired"] == 0  # once

    # A restore is the user wanting it back: for good.
    restored = await app.local.post(f"/v1/memories/{parked['id']}/restore", {})
    assert restored["status"] == "active" and restored["expires_at"] is None
    assert parked["id"] in ids(await app.local.get("/v1/memories"))


async def test_expiry_spellings_patch_and_bad_times(
    make_client: Callable[..., Any], clock: Any
) -> None:
    app = await make_app(make_client)
    later = clock() + 2 * HOUR
    by_ms = await app.remember(PARKED, expires_at_ms=int(later * 1000))
    assert by_ms["expires_at"] == later
    iso = datetime.fromtimestamp(clock() + 86400, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    by_iso = await app.remember(DENTIST, expires_at=iso)
    assert by_iso["expires_at"] == clock() + 86400

    before = app.value("SELECT COUNT(*) FROM memories")
    for body, field in (
        ({"expires_at": clock() - 1}, "expires_at"),  # already past
        ({"expires_at": clock()}, "expires_at"),  # now is not in the future
        ({"expires_at": "next tuesday"}, "expires_at"),
        ({"expires_at": later, "expires_at_ms": later * 1000}, "expires_at_ms"),
        ({"expires_at_ms": -5}, "expires_at_ms"),
    ):
        error = await app.remember("The user owns a red bicycle.", 400, **body)
        assert error["error"]["code"] == "invalid_request", error
        assert error["error"]["details"]["field"] == field, error
    assert app.value("SELECT COUNT(*) FROM memories") == before  # nothing stored

    # PATCH sets, moves and clears it; a past time changes nothing.
    path = f"/v1/memories/{by_ms['id']}"
    moved = await app.local.patch(path, {"expires_at": later + HOUR})
    assert moved["expires_at"] == later + HOUR and moved["etag"] != by_ms["etag"]
    error = await app.local.patch(path, {"expires_at": clock() - 60, "importance": 0.9}, 400)
    assert error["error"]["details"]["field"] == "expires_at"
    unchanged = await app.local.get(path)
    assert (unchanged["expires_at"], unchanged["importance"]) == (later + HOUR, 0.5)
    cleared = await app.local.patch(path, {"expires_at_ms": None})
    assert cleared["expires_at"] is None
    events = (await app.local.get(f"{path}/history"))["events"]
    assert events[0]["meta"]["changed"] == {"expires_at": [later + HOUR, None]}
    clock.advance(3 * HOUR)
    assert (await app.local.get(path))["expires_at"] is None  # kept for good now


async def test_remembering_a_known_text_keeps_or_renews_its_expiry(
    make_client: Callable[..., Any], clock: Any
) -> None:
    app = await make_app(make_client)
    forever = await app.remember(DENTIST)
    again = await app.remember(DENTIST, expires_at=clock() + HOUR)
    assert again["id"] == forever["id"] and again["action"] == "merged"
    assert again["expires_at"] is None  # a memory kept for good is not cut short by a repeat
    dated = await app.remember(PARKED, expires_at=clock() + HOUR)
    renewed = await app.remember(PARKED, expires_at=clock() + 5 * HOUR)
    assert renewed["id"] == dated["id"] and renewed["expires_at"] == clock() + 5 * HOUR
