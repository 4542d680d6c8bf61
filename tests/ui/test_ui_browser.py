"""The memory browser in a real headless browser against a real daemon process on a real port.

Debian's `chromium` driven by Playwright (no browser is downloaded: `executable_path` points at
the system one; set LOBUG_CHROMIUM to use another). Signs in with a token, finds a fact,
corrects it, forgets it, accepts a proposal, checking each change through /v1, and saves a
screenshot of every page under tests/artifacts/ui/ (ignored by git; LOBUG_UI_ARTIFACTS moves
it). Without chromium the test is skipped on a workstation and FAILS under CI (CI=true).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from daemon_proc import Daemon
from ui_kit import chromium, daemon_with_a_proposal

TOKEN = "owner-token-0123456789abcdef"
FACT = "The user's sister Ana lives in Lisbon."
FIXED = "The user's sister Ana lives in Porto."
ARTIFACTS = Path(os.environ.get("LOBUG_UI_ARTIFACTS", Path(__file__).parents[1] / "artifacts/ui"))
PHONE = {"width": 375, "height": 740}


@pytest.fixture
async def daemon(tmp_path: Path, ollama: tuple[Any, str]) -> Any:
    """A daemon that trusts no one without a token (a browser on the LAN), one proposal
    already heard by voice."""
    env = {"LOBUG_API_ALLOW_LOOPBACK": "false", "LOBUG_API_TOKENS": f"{TOKEN}:full:supervisor"}
    proc = await daemon_with_a_proposal(tmp_path / "data", ollama[1], env)
    yield proc
    await proc.terminate()


async def v1(daemon: Daemon, method: str, path: str, **kw: Any) -> Any:
    status, body = await daemon.request(
        method, path, headers={"Authorization": f"Bearer {TOKEN}"}, **kw
    )
    assert status < 300, (method, path, status, body)
    return body


async def test_find_correct_forget_and_accept_in_a_browser(daemon: Daemon) -> None:
    from playwright.async_api import async_playwright, expect

    executable = chromium()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    fact = await v1(daemon, "POST", "/v1/memories",
                    json={"content": FACT, "category": "relationships"})  # fmt: skip
    await v1(daemon, "POST", "/v1/memories", json={"content": "The user likes green tea.",
                                                   "category": "preferences"})  # fmt: skip
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()

            async def shot(name: str) -> None:
                await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

            # Signed out: the login form, whatever page was asked for.
            await page.goto(daemon.url + "/ui/facts")
            await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
            await shot("01-login")
            await page.get_by_label("API token").fill(TOKEN)
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.get_by_role("heading", name="Facts by category")).to_be_visible()
            await shot("02-facts")

            # The keyboard reaches the page: the first Tab lands on the skip link.
            await page.keyboard.press("Tab")
            assert await page.evaluate("document.activeElement.textContent") == "Skip to content"

            await page.get_by_role("link", name="Home").click()
            await expect(page.get_by_role("heading", name="Health and queue")).to_be_visible()
            await shot("03-home")

            # Find the fact by searching, and see why it ranked.
            await page.get_by_role("link", name="Search").click()
            await page.get_by_label("Looking for").fill("where does Ana live")
            await page.get_by_role("button", name="Search").click()
            await page.locator("details summary").first.click()
            await expect(
                page.get_by_role("table", name="How the score was made").first
            ).to_be_visible()
            await shot("04-search")
            await page.get_by_role("link", name=FACT).click()
            await expect(page.get_by_role("heading", name=f"Memory {fact['id']}")).to_be_visible()
            await shot("05-memory")

            # Correct it.
            await page.get_by_label("Text").fill(FIXED)
            await page.get_by_role("button", name="Save").click()
            await expect(page.get_by_role("status")).to_have_text("Done: saved.")
            assert (await v1(daemon, "GET", f"/v1/memories/{fact['id']}"))["content"] == FIXED
            await shot("06-corrected")

            # Forget it.
            await page.get_by_role("button", name="Forget").click()
            await expect(page.get_by_role("status")).to_have_text("Done: forgotten.")
            forgotten = await v1(daemon, "GET", f"/v1/memories/{fact['id']}")
            assert forgotten["status"] == "soft_deleted"
            await shot("07-forgotten")

            # Accept what it heard.
            await page.get_by_role("link", name="Proposals").click()
            await shot("08-proposals")
            await page.get_by_role("button", name="Accept: The user's name is Sam.").click()
            await expect(page.get_by_role("status")).to_have_text("Done: accepted.")
            decided = await v1(daemon, "GET", "/v1/proposals?status=all")
            assert [p["status"] for p in decided["proposals"]] == ["accepted"]
            sam = await v1(daemon, "GET", "/v1/memories?q=Sam")
            assert [m["content"] for m in sam["memories"]] == ["The user's name is Sam."]

            for name, heading in (("conversations", "Conversations"),
                                  ("entities", "People, places and things")):  # fmt: skip
                await page.goto(f"{daemon.url}/ui/{name}")
                await expect(page.get_by_role("heading", name=heading)).to_be_visible()
                await shot(f"09-{name}")

            # A phone screen: nothing wider than the viewport.
            await page.set_viewport_size(PHONE)
            await page.goto(daemon.url + "/ui/facts?status=all")
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], width
            await shot("10-facts-phone")
        finally:
            await browser.close()
