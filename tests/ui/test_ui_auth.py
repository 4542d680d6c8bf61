"""Signing in to /ui/ with the /v1 tokens, and CSRF on every form: missing, wrong and forged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_kit import TOKENS, App, make_app
from ui_kit import csrf_of

from lobug.ui.auth import COOKIE, SESSION_COOKIE

NO_LOOPBACK = {"api.allow_loopback": False}


async def closed_app(make_client: Callable[..., Any]) -> App:
    """Loopback is not trusted: like a browser on the LAN, the test client needs a token."""
    return await make_app(make_client, **NO_LOOPBACK)


async def test_missing_token_gets_the_login_form(make_client: Callable[..., Any]) -> None:
    app = await closed_app(make_client)
    for path in ("/ui/", "/ui/facts", "/ui/proposals", "/ui/memories/1"):
        resp = await app.client.get(path)
        html = await resp.text()
        assert resp.status == 401 and 'action="/ui/login"' in html, path
        assert "Sign in with an API token" in html and "Facts by category" not in html
    resp = await app.client.get("/ui/static/ui.css")  # the login page needs its stylesheet
    assert resp.status == 200


async def test_wrong_token_is_refused_and_the_cookie_cleared(
    make_client: Callable[..., Any],
) -> None:
    app = await closed_app(make_client)
    resp = await app.client.get("/ui/", cookies={COOKIE: "not-a-token"})
    assert resp.status == 401 and "That token is not valid" in await resp.text()
    assert COOKIE in resp.cookies and resp.cookies[COOKIE].value == ""
    resp = await app.client.get("/ui/", headers={"Authorization": "Bearer nope"})
    assert resp.status == 401
    # Even from loopback with loopback trusted, a wrong token is not quietly upgraded (as /v1).
    open_app = await make_app(make_client)
    resp = await open_app.client.get("/ui/", headers={"Authorization": "Bearer nope"})
    assert resp.status == 401


async def test_login_sets_a_strict_httponly_cookie(make_client: Callable[..., Any]) -> None:
    app = await closed_app(make_client)
    form = await (await app.client.get("/ui/login?next=/ui/facts")).text()
    csrf = csrf_of(form)
    bad = await app.client.post("/ui/login", data={"csrf_token": csrf, "token": "guess",
                                                    "next": "/ui/facts"})  # fmt: skip
    assert bad.status == 401 and "That token is not valid" in await bad.text()
    assert COOKIE not in app.client.session.cookie_jar.filter_cookies(app.client.make_url("/ui/"))
    resp = await app.client.post(
        "/ui/login",
        data={"csrf_token": csrf, "token": TOKENS["full"], "next": "/ui/facts"},
        allow_redirects=False,
    )
    assert resp.status == 303 and resp.headers["Location"] == "/ui/facts"
    cookie = resp.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui/" in cookie
    facts = await app.client.get("/ui/facts")
    assert facts.status == 200 and "Facts by category" in await facts.text()
    home = await (await app.client.get("/ui/")).text()
    assert "supervisor (full)" in home
    out = await app.client.post("/ui/logout", data={"csrf_token": csrf_of(home)},
                                allow_redirects=False)  # fmt: skip
    assert out.status == 303
    assert (await app.client.get("/ui/")).status == 401


async def test_login_never_redirects_off_site(make_client: Callable[..., Any]) -> None:
    app = await closed_app(make_client)
    csrf = csrf_of(await (await app.client.get("/ui/login")).text())
    for target in ("https://evil.example/", "//evil.example/ui/", "/v1/export", "/ui\\..\\x"):
        resp = await app.client.post(
            "/ui/login",
            data={"csrf_token": csrf, "token": TOKENS["full"], "next": target},
            allow_redirects=False,
        )
        assert resp.headers["Location"] == "/ui/", target


async def test_forms_without_the_csrf_token_are_refused(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    memory = await app.remember("The user's car is a blue Fiat.")
    path = f"/ui/memories/{memory['id']}"
    html = await (await app.client.get(path)).text()
    good = csrf_of(html)
    forged = [
        {},  # no token at all
        {"csrf_token": ""},
        {"csrf_token": "0" * 64},  # a made-up one
    ]
    for data in forged:
        for action in ("edit", "forget", "confirm", "pin"):
            body = {**data, "content": "forged", "etag": memory["etag"], "pinned": "true"}
            resp = await app.client.post(f"{path}/{action}", data=body)
            assert resp.status == 403, (action, data)
            assert "security token" in await resp.text()
    # The right token from another site's page is refused too.
    resp = await app.client.post(f"{path}/forget", data={"csrf_token": good},
                                 headers={"Origin": "http://evil.example"})  # fmt: skip
    assert resp.status == 403
    row = app.rows("SELECT content, status, pinned FROM memories WHERE id = ?", memory["id"])[0]
    assert tuple(row) == ("The user's car is a blue Fiat.", "active", 0)


async def test_a_token_for_another_identity_is_refused(make_client: Callable[..., Any]) -> None:
    """A CSRF token is bound to who is signed in: one from a loopback page fails for a token."""
    app = await make_app(make_client)
    memory = await app.remember("The user's bike is red.")
    loopback_csrf = csrf_of(await (await app.client.get("/ui/")).text())
    resp = await app.client.post(
        f"/ui/memories/{memory['id']}/forget",
        data={"csrf_token": loopback_csrf},
        headers={"Authorization": f"Bearer {TOKENS['full']}"},
    )
    assert resp.status == 403
    assert app.value("SELECT status FROM memories WHERE id = ?", memory["id"]) == "active"


async def test_the_login_forms_token_is_no_good_to_the_signed_in_owner(
    make_client: Callable[..., Any],
) -> None:
    """Issue 25 (15): the anonymous login page's token was the loopback owner's too; a token is
    bound to who is signed in and to this browser's session (cookie)."""
    app = await make_app(make_client)
    memory = await app.remember("The user's boat is called Wren.")
    forget = f"/ui/memories/{memory['id']}/forget"
    anonymous = csrf_of(await (await app.client.get("/ui/login")).text())
    owner = csrf_of(await (await app.client.get("/ui/")).text())
    assert anonymous != owner
    resp = await app.client.post(forget, data={"csrf_token": anonymous})
    assert resp.status == 403 and "security token" in await resp.text()
    # The owner's own token from another browser session is refused too.
    app.client.session.cookie_jar.clear()
    other = csrf_of(await (await app.client.get("/ui/")).text())
    assert other != owner
    resp = await app.client.post(forget, data={"csrf_token": owner})
    assert resp.status == 403
    assert app.value("SELECT status FROM memories WHERE id = ?", memory["id"]) == "active"
    cookie = (await app.client.get("/ui/login")).headers.getall("Set-Cookie", [])
    assert not cookie  # the session cookie is set once, then kept
    resp = await app.client.post(forget, data={"csrf_token": other}, allow_redirects=False)
    assert resp.status == 303
    assert app.value("SELECT status FROM memories WHERE id = ?", memory["id"]) == "soft_deleted"


async def test_session_cookie_is_strict_and_httponly(make_client: Callable[..., Any]) -> None:
    app = await make_app(make_client)
    resp = await app.client.get("/ui/login")
    cookie = resp.headers["Set-Cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui/" in cookie


async def test_a_ui_page_on_a_rebound_name_is_refused(make_client: Callable[..., Any]) -> None:
    """Issue 25 (7): a page on a rebound name read a UI page for its CSRF token, then posted."""
    app = await make_app(make_client)
    memory = await app.remember("The user's locker code is 3141.")
    rebound = {"Host": f"evil.example:{app.client.port}"}
    for path in ("/ui/", f"/ui/memories/{memory['id']}", "/ui/login", "/ui/static/ui.css"):
        resp = await app.client.get(path, headers=rebound)
        assert resp.status == 403, path
        assert (await resp.json())["error"]["code"] == "forbidden"
    good = csrf_of(await (await app.client.get(f"/ui/memories/{memory['id']}")).text())
    resp = await app.client.post(f"/ui/memories/{memory['id']}/forget",
                                 data={"csrf_token": good}, headers=rebound)  # fmt: skip
    assert resp.status == 403
    assert app.value("SELECT status FROM memories WHERE id = ?", memory["id"]) == "active"
