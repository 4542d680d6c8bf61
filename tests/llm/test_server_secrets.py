"""The model server's credentials never leave the daemon (issue 38, finding 9): not the
user:password or query of `llm.base_url`/`ollama.host`, not the key, and not the server's own
error text that may quote it, on /health (no authentication), the OpenAI door, `lobug config
show` and `lobug doctor`. The owner still learns what the server said, masked, in the log and
in doctor."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import FakeTranscriber
from cli_kit import config_file, lobug
from fake_openai_llm import FakeOpenAIState

from lobug.config import Config
from lobug.ops import doctor

KEY = "sk-proj-owner-0a1b2c3d4e5f"  # the owner's key, which the server refuses and quotes
PASSWORD = "proxy-pass-9f8e7d"
QUERY = "qkey-77aa66bb"


def with_credentials(root: str) -> str:
    """The fake server's API root behind a proxy's user:password and a query key."""
    return root.replace("http://", f"http://lobug:{PASSWORD}@") + f"?token={QUERY}"


def leaks(text: str) -> list[str]:
    basic = base64.b64encode(f"lobug:{PASSWORD}".encode()).decode()
    return [s for s in (KEY, PASSWORD, QUERY, basic, "0a1b2c3d") if s in text]


async def test_health_and_the_openai_door_show_no_key_and_no_server_words(
    make_client: Callable[..., Any],
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    state, _ = openai_llm
    state.api_key = "the-key-the-server-wants"  # ours is refused: 401 quoting it
    token = "full-token-0123456789abcdef"
    client = await make_client(
        openai_config(
            **{
                "llm.api_key": KEY,
                "api.tokens": [{"token": token, "trust": "public", "agent": "guest"}],
            }
        )
    )
    caplog.set_level(logging.WARNING)
    health_text = await (await client.get("/health")).text()
    health = json.loads(health_text)
    assert health["status"] == "degraded" and health["llm"]["ok"] is False
    assert any("answered 401" in p for p in health["problems"]), health
    assert leaks(health_text) == [] and "Incorrect API key" not in health_text
    # A caller of the OpenAI door (a stranger's token) hears that the model failed, not why.
    resp = await client.post(
        "/v1/chat/completions",
        json={"model": "lobug", "messages": [{"role": "user", "content": "hi"}]},
        headers={"Authorization": f"Bearer {token}"},
    )
    door = await resp.text()
    assert resp.status == 503, door
    assert leaks(door) == [] and "Incorrect API key" not in door
    # The owner reads what the server said in the log, the key masked.
    said = [r.getMessage() for r in caplog.records if "Incorrect API key" in r.getMessage()]
    assert said and all(leaks(line) == [] for line in said), said
    assert "Incorrect API key provided: ***" in said[0]
    assert leaks(caplog.text) == []


async def test_credentials_in_the_url_are_masked_on_health(
    make_client: Callable[..., Any],
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
) -> None:
    state, root = openai_llm
    state.api_key = "the-key-the-server-wants"  # the proxy's Basic credentials are quoted back
    url = root.replace("http://", f"http://lobug:{PASSWORD}@")
    client = await make_client(openai_config(**{"llm.api_key": None, "llm.base_url": url}))
    text = await (await client.get("/health")).text()
    assert json.loads(text)["llm"]["ok"] is False
    assert leaks(text) == [], text
    assert "http://***@127.0.0.1" in text


async def test_config_show_and_doctor_mask_the_url_and_the_servers_words(
    tmp_path: Path, openai_llm: tuple[FakeOpenAIState, str], openai_config: Callable[..., Config]
) -> None:
    state, root = openai_llm
    state.api_key = "the-key-the-server-wants"
    path = config_file(tmp_path, "http://127.0.0.1:9")
    base = path.read_text()
    llm = f'[llm]\nbackend = "openai"\nbase_url = "{with_credentials(root)}"\napi_key = "{KEY}"\n'
    path.write_text(base + llm, encoding="utf-8")
    code, out, err = await lobug(path, "config", "show")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["llm"]["base_url"] == root.replace("http://", "http://***@") + "?token=***"
    assert leaks(out + err) == []
    # A proxy's user:password in the URL (sent as Basic credentials, which the server quotes).
    url = root.replace("http://", f"http://lobug:{PASSWORD}@")
    path.write_text(base + f'[llm]\nbackend = "openai"\nbase_url = "{url}"\n', encoding="utf-8")
    code, out, err = await lobug(path, "doctor")
    assert code == 1, out + err
    assert leaks(out + err) == [], out + err
    assert "openai server at http://***@127.0.0.1" in out and "answered 401" in out
    assert "it said: Incorrect API key provided: Basic ***" in out
    # The key the server quotes: masked in doctor's detail.
    config = openai_config(**{"llm.api_key": KEY})
    checks = {c.name: c for c in await doctor.run_checks(config, transcriber=FakeTranscriber())}
    detail = checks["openai"].detail
    assert checks["openai"].status == "FAIL" and "answered 401" in detail
    assert "it said: Incorrect API key provided: ***" in detail and leaks(detail) == []
