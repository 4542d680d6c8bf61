"""The Devices page (issue 40) in a real headless browser against a real daemon process: the
owner opens the pairing window, the M5Stack speaks from its own address, the page shows who
was paired with the way to undo it, and a device at a new address is confirmed and forgotten;
each step checked through /v1. Forms without the page's CSRF token, and callers who are not
the owner, change nothing (through the test client)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from api_kit import TOKENS, App, make_app
from daemon_proc import Daemon
from lan_kit import NO_LOOPBACK, lan_client
from ui_kit import chromium, csrf_of

pytestmark = pytest.mark.timeout(120)

OWNER = "owner-app-token-0123456789abcdef"  # full trust, no allowlist: the owner's own
DEVICE = "m5stack-kitchen"
ARTIFACTS = Path(os.environ.get("LOBUG_UI_ARTIFACTS", Path(__file__).parents[1] / "artifacts/ui"))


@pytest.fixture
async def daemon(tmp_path: Path, ollama: tuple[Any, str]) -> Any:
    env = {"LOBUG_API_ALLOW_LOOPBACK": "false", "LOBUG_API_TOKENS": f"{OWNER}:full:owner-app"}
    proc = await Daemon(tmp_path / "data", ollama_url=ollama[1], env=env).start()
    yield proc
    await proc.terminate()


async def devices(daemon: Daemon) -> dict[str, Any]:
    status, body = await daemon.request(
        "GET", "/v1/devices", headers={"Authorization": f"Bearer {OWNER}"}
    )
    assert status == 200, body
    return {d["address"]: d for d in body["devices"]}


async def test_pair_confirm_and_forget_in_a_browser(daemon: Daemon) -> None:
    from playwright.async_api import async_playwright, expect

    executable = chromium()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()
            await page.goto(daemon.url + "/ui/devices")
            await page.get_by_label("API token").fill(OWNER)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("heading", name="Devices", exact=True)).to_be_visible()
            await expect(page.get_by_text("No device has called")).to_be_visible()

            await page.get_by_role("button", name="Open the pairing window").click()
            await expect(page.get_by_text("say something to Lo-Bug now")).to_be_visible()
            await page.screenshot(path=str(ARTIFACTS / "20-devices-window.png"), full_page=True)
            async with lan_client(daemon.url, "127.0.0.5") as m5stack:
                await m5stack.say("hello Lo-Bug", device_id=DEVICE)
            # The open window's page reloads itself: who was paired shows up, with an undo.
            heading = f"Paired: {DEVICE} at 127.0.0.5"
            await expect(page.get_by_role("heading", name=heading)).to_be_visible(timeout=15000)
            await page.screenshot(path=str(ARTIFACTS / "21-devices-paired.png"), full_page=True)
            assert (await devices(daemon))["127.0.0.5"]["trust"] == "full"

            # The device shows up at a new address (DHCP): a stranger until confirmed here.
            async with lan_client(daemon.url, "127.0.0.6") as moved:
                await moved.say("hello again", device_id=DEVICE)
            await page.reload()
            await expect(page.get_by_text("new address: paired at 127.0.0.5")).to_be_visible()
            await page.get_by_role("button", name=f"Confirm {DEVICE} at 127.0.0.6").click()
            await expect(page.get_by_role("status")).to_have_text("Done: trusted.")
            listed = await devices(daemon)
            assert (listed["127.0.0.6"]["trust"], listed["127.0.0.5"]["trust"]) == ("full", None)

            await page.get_by_role("button", name=f"Forget {DEVICE} at 127.0.0.6").first.click()
            await expect(page.get_by_role("status")).to_have_text("Done: forgotten.")
            assert "127.0.0.6" not in await devices(daemon)
            await page.screenshot(path=str(ARTIFACTS / "22-devices-forgotten.png"), full_page=True)
        finally:
            await browser.close()


async def test_the_page_is_the_owners_and_every_form_needs_its_token(
    make_client: Callable[..., Any],
) -> None:
    app: App = await make_app(make_client)  # loopback is the owner here (allow_loopback)
    page = await app.client.get("/ui/devices")
    assert page.status == 200
    csrf = csrf_of(await page.text())
    for path in ("/ui/devices/pair", "/ui/devices/1/trust", "/ui/devices/1/forget"):
        resp = await app.client.post(path, data={}, allow_redirects=False)
        assert resp.status == 403, path
    assert (await app.local.get("/v1/devices"))["pairing_until"] is None
    resp = await app.client.post("/ui/devices/pair", data={"csrf_token": csrf, "seconds": "0"},
                                 allow_redirects=False)  # fmt: skip
    assert resp.status == 400 and (await app.local.get("/v1/devices"))["pairing_until"] is None
    resp = await app.client.post("/ui/devices/pair", data={"csrf_token": csrf, "seconds": "30"},
                                 allow_redirects=False)  # fmt: skip
    assert resp.status == 303 and (await app.local.get("/v1/devices"))["pairing_until"]
    # A token below the owner (an agent's full token with an allowlist, too) sees no page.
    lan = await make_app(make_client, **NO_LOOPBACK)
    for token in (TOKENS["full"], TOKENS["inner"]):
        resp = await lan.client.get("/ui/devices", headers={"Authorization": f"Bearer {token}"})
        assert resp.status == 403
