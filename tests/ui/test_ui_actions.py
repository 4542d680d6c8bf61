"""What a person does on /ui/: correct (with the revision it read), pin, confirm, forget,
restore, purge after typing the word, decide proposals; each checked in the database and /v1."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from api_kit import App, make_app
from ui_kit import csrf_of, propose

from lobug import keys


async def form_of(app: App, memory_id: int) -> dict[str, str]:
    """The CSRF token and revision the memory's page was rendered with."""
    html = await (await app.client.get(f"/ui/memories/{memory_id}")).text()
    etag = html.split('name="etag" value="', 1)[1].split('"', 1)[0]
    return {"csrf_token": csrf_of(html), "etag": etag}


async def post(app: App, path: str, data: dict[str, str], status: int = 303) -> str:
    resp = await app.client.post(path, data=data, allow_redirects=False)
    text = await resp.text()
    assert resp.status == status, (path, resp.status, text[:400])
    return resp.headers.get("Location", text)


async def test_correct_a_memory(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    memory = await app.remember("The user's dog is called Rex.", category="relationships")
    form = await form_of(app, memory["id"])
    where = await post(app, f"/ui/memories/{memory['id']}/edit", {
        **form, "content": "The user's dog is called Max.", "category": "", "importance": "0.9",
    })  # fmt: skip
    assert where == f"/ui/memories/{memory['id']}?done=saved"
    now = await app.local.get(f"/v1/memories/{memory['id']}")
    assert (now["content"], now["category"], now["importance"]) == (
        "The user's dog is called Max.", None, 0.9,
    )  # fmt: skip
    page = await (await app.client.get(where)).text()
    assert 'role="status">Done: saved.' in page and "UPDATE" in page


async def test_a_stale_revision_is_refused(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    memory = await app.remember("The user's locker code is 1234.")
    form = await form_of(app, memory["id"])
    await app.local.patch(
        f"/v1/memories/{memory['id']}", {"content": "The user's locker code is 9876."}
    )
    text = await post(app, f"/ui/memories/{memory['id']}/edit",
                      {**form, "content": "The user's locker code is 0000."}, 409)  # fmt: skip
    assert "It changed meanwhile" in text
    assert app.value("SELECT content FROM memories WHERE id = ?", memory["id"]) == (
        "The user's locker code is 9876."
    )
    await post(app, f"/ui/memories/{memory['id']}/pin", {**form, "pinned": "true"}, 409)
    no_rev = {"csrf_token": form["csrf_token"], "content": "x"}
    assert "no revision" in await post(app, f"/ui/memories/{memory['id']}/edit", no_rev, 400)


async def test_bad_edits_are_refused_like_v1(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    memory = await app.remember("The user's gym is on Elm Street.")
    form = await form_of(app, memory["id"])
    for data in ({"content": ""}, {"importance": "2"}, {"importance": "lots"}):
        await post(app, f"/ui/memories/{memory['id']}/edit", {**form, **data}, 400)
    assert app.value("SELECT content FROM memories WHERE id = ?", memory["id"]) == (
        "The user's gym is on Elm Street."
    )


async def test_pin_confirm_forget_restore(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    memory = await app.remember("The user's flat is on the third floor.")
    base = f"/ui/memories/{memory['id']}"
    await post(app, f"{base}/pin", {**await form_of(app, memory["id"]), "pinned": "true"})
    assert (await app.local.get(f"/v1/memories/{memory['id']}"))["pinned"] is True
    await post(app, f"{base}/confirm", await form_of(app, memory["id"]))
    confirmed = await app.local.get(f"/v1/memories/{memory['id']}")
    assert confirmed["confidence"] == 1.0 and confirmed["decay_rate"] == 0
    await post(app, f"{base}/forget", await form_of(app, memory["id"]))
    assert (await app.local.get(f"/v1/memories/{memory['id']}"))["status"] == "soft_deleted"
    page = await (await app.client.get(base)).text()
    assert "This memory is forgotten" in page and 'name="etag"' not in page
    csrf = csrf_of(page)
    await post(app, f"{base}/restore", {"csrf_token": csrf})
    assert (await app.local.get(f"/v1/memories/{memory['id']}"))["status"] == "active"
    assert "nothing to restore" in await post(app, f"{base}/restore", {"csrf_token": csrf}, 409)


async def test_purge_needs_the_word(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    memory = await app.remember("The user's old address was 5 Oak Lane.")
    ask = await (await app.client.get(f"/ui/memories/{memory['id']}/purge")).text()
    csrf = csrf_of(ask)
    path = f"/ui/memories/{memory['id']}/purge"
    assert "nothing was removed" in await post(app, path, {"csrf_token": csrf}, 400)
    await post(app, path, {"csrf_token": csrf, "confirm": "yes"}, 400)
    assert app.value("SELECT COUNT(*) FROM memories WHERE id = ?", memory["id"]) == 1
    assert (
        await post(app, path, {"csrf_token": csrf, "confirm": "purge"}) == "/ui/facts?done=purged"
    )
    assert app.value("SELECT COUNT(*) FROM memories WHERE id = ?", memory["id"]) == 0
    await app.local.get(f"/v1/memories/{memory['id']}", expect=404)


async def test_accept_and_reject_proposals(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    config, memory = app.client.app[keys.CONFIG], app.client.app[keys.MEMORY]
    sam, lisbon = await app.client.app[keys.DB].write(
        partial(propose, config=config, now=memory.clock()),
        ["The user's name is Sam.", "The user lives in Lisbon."],
    )
    csrf = csrf_of(await (await app.client.get("/ui/proposals")).text())
    assert await post(app, f"/ui/proposals/{sam}/accept", {"csrf_token": csrf}) == (
        "/ui/proposals?done=accepted"
    )
    await post(app, f"/ui/proposals/{lisbon}/reject", {"csrf_token": csrf})
    every = await app.local.get("/v1/proposals?status=all")
    assert {p["id"]: p["status"] for p in every["proposals"]} == {
        sam: "accepted",
        lisbon: "rejected",
    }
    facts = await app.local.get("/v1/memories?q=Sam")
    assert [m["content"] for m in facts["memories"]] == ["The user's name is Sam."]
    assert "already" in await post(app, f"/ui/proposals/{sam}/accept", {"csrf_token": csrf}, 409)
    await post(app, "/ui/proposals/999/reject", {"csrf_token": csrf}, 404)
