"""Issue 25 (6, 7) in a real browser: Debian's chromium against a real daemon that trusts this
machine (`api.allow_loopback`, the default), as the owner's own browser would be.

- A page from another origin on loopback (a second server on another port) posts to /v1 with
  `fetch(…, {mode: "no-cors"})` and an auto-submitted form: what any web page can send without
  a CORS preflight. Each is refused and nothing changes.
- DNS rebinding: chromium resolves `evil.example` to 127.0.0.1 (`--host-resolver-rules`, as a
  rebound name would), so the page's requests are same-origin and carry `Host: evil.example`:
  the UI and /v1/export are refused; the same browser on 127.0.0.1 and localhost is served.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from daemon_proc import Daemon
from ui_kit import chromium, daemon_with_a_proposal

FACT = "The user's garage door code is 8642."
ATTACK = """<!doctype html><title>cute cats</title>
<form id="f" method="post" action="{daemon}/v1/memories/{memory}/confirm"></form>
<script>
(async () => {{
  const send = (path, init) =>
    fetch("{daemon}" + path, {{method: "POST", mode: "no-cors", ...init}}).then(
      () => "sent", (e) => "failed: " + e);
  const results = [
    await send("/v1/gc", {{}}),
    await send("/v1/proposals/{proposal}/accept", {{body: "{{}}",
                                                   headers: {{"Content-Type": "text/plain"}}}}),
    await send("/v1/memories/{memory}/restore", {{body: new URLSearchParams({{a: "1"}})}}),
  ];
  document.title = results.join(",");
  document.getElementById("f").submit();
}})();
</script>"""


@pytest.fixture
async def daemon(tmp_path: Path, ollama: tuple[Any, str]) -> Any:
    proc = await daemon_with_a_proposal(tmp_path / "data", ollama[1])  # loopback: owner
    yield proc
    await proc.terminate()


async def v1(daemon: Daemon, method: str, path: str, **kw: Any) -> Any:
    status, body = await daemon.request(method, path, **kw)
    assert status < 300, (method, path, status, body)
    return body


async def test_a_page_from_another_origin_changes_nothing(
    daemon: Daemon, aiohttp_server: Any
) -> None:
    from playwright.async_api import async_playwright

    executable = chromium()
    memory = await v1(daemon, "POST", "/v1/memories", json={"content": FACT})
    await v1(daemon, "DELETE", f"/v1/memories/{memory['id']}")
    (proposal,) = (await v1(daemon, "GET", "/v1/proposals"))["proposals"]
    page_html = ATTACK.format(daemon=daemon.url, memory=memory["id"], proposal=proposal["id"])

    async def attack(request: web.Request) -> web.Response:
        return web.Response(text=page_html, content_type="text/html")

    site = web.Application()
    site.router.add_get("/", attack)
    server = await aiohttp_server(site)  # 127.0.0.1, another port: another origin
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()
            async with page.expect_navigation(url=f"{daemon.url}/v1/**"):
                await page.goto(str(server.make_url("/")))
            assert "forbidden" in await page.content()  # the form's answer
        finally:
            await browser.close()
    log = daemon.log()
    for path in ("/v1/gc", f"/v1/proposals/{proposal['id']}/accept",
                 f"/v1/memories/{memory['id']}/restore",
                 f"/v1/memories/{memory['id']}/confirm"):  # fmt: skip
        assert f"refused POST {path} from 127.0.0.1: a page from another origin" in log, path
    after = await v1(daemon, "GET", f"/v1/memories/{memory['id']}")
    assert after["status"] == "soft_deleted" and after["decay_rate"] > 0
    assert [p["status"] for p in (await v1(daemon, "GET", "/v1/proposals"))["proposals"]] == [
        "pending"
    ]


async def test_a_rebound_name_is_refused_in_a_real_browser(daemon: Daemon) -> None:
    from playwright.async_api import async_playwright

    executable = chromium()
    await v1(daemon, "POST", "/v1/memories", json={"content": FACT})
    rebound = f"http://evil.example:{daemon.port}"
    export = "fetch('/v1/export').then(async r => [r.status, await r.text()])"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=executable,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--host-resolver-rules=MAP evil.example 127.0.0.1",
            ],  # fmt: skip
        )
        try:
            page = await browser.new_page()
            for path in ("/ui/", "/ui/facts", "/ui/login"):
                response = await page.goto(rebound + path)
                assert response is not None and response.status == 403, path
                assert "8642" not in await page.content()
            status, text = await page.evaluate(export)  # same-origin for the page
            assert status == 403 and "8642" not in text
            # The owner's browser on the daemon's own names is served.
            for own in (daemon.url, f"http://localhost:{daemon.port}"):
                response = await page.goto(own + "/ui/facts")
                assert response is not None and response.status == 200, own
                status, text = await page.evaluate(export)
                assert status == 200 and "8642" in text, own
        finally:
            await browser.close()
