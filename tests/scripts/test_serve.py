"""scripts/serve on a machine without Ollama: its set-up (scripts/_bootstrap.sh ensure_parts)
gives Whisper base, the local embedder and Gemma 3 270M on llama-server, and the daemon it
starts answers by voice and text and finds a fact by meaning, all with the real parts.

Under CI=true this runs whatever it takes (scripts/test builds llama-server before the suite
when its cache is absent); elsewhere it skips while llama-server is not built yet."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from audio_fixtures import speak_wav
from daemon_proc import free_port

ROOT = Path(__file__).resolve().parents[2]
BOOTSTRAP = ROOT / "scripts" / "_bootstrap.sh"
CI = os.environ.get("CI") == "true"
# The first run assembles the models and, in CI on a fresh machine, builds llama-server.
SETUP_S = 3600.0 if CI else 600.0

FACTS = [
    "The user's sister Maria lives in Lisbon.",
    "The user is allergic to peanuts.",
    "The user drives a red Tesla Model 3.",
    "The user works as a nurse at the city hospital.",
]
# Shares no word with the fact it must find (the sister's).
PARAPHRASE = "Where does my sibling reside?"


def bash(script: str) -> list[str]:
    """The argv of bash running `script` after sourcing _bootstrap.sh with this venv."""
    prelude = f'source "{BOOTSTRAP}"; VENV="{sys.prefix}"; '
    return ["bash", "-c", prelude + script]


def llama_server_built() -> bool:
    out = subprocess.run(
        bash("llama_server_dir"), capture_output=True, text=True, check=True
    ).stdout.strip()
    return (Path(out) / "llama-server").is_file()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    if not CI and not llama_server_built():
        pytest.skip("llama-server is not built yet: scripts/test (or scripts/serve) builds it")
    port = free_port()
    env = {
        **os.environ,
        "LOBUG_DATA_DIR": str(tmp_path / "data"),
        "LOBUG_OLLAMA_HOST": f"http://127.0.0.1:{free_port()}",  # no Ollama answers there
        "LOBUG_LLAMA_PORT": str(free_port()),
        "LOBUG_LOG_LEVEL": "INFO",
        "HF_HUB_OFFLINE": "1",
    }
    for name in ("LOBUG_EMBEDDER", "LOBUG_SPEECH_MODEL", "LOBUG_LLM_BACKEND"):
        env.pop(name, None)  # what the set-up decides, not the caller
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            bash(f"ensure_parts && serve_daemon --host 127.0.0.1 --port {port}"),
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: the teardown reaches llama-server too
        )
    url = f"http://127.0.0.1:{port}"
    try:
        await until_ready(url, proc, log)
        yield url, log
    finally:
        proc.send_signal(signal.SIGTERM)  # serve_daemon stops the daemon, then llama-server
        try:
            proc.wait(60)
        finally:
            with_group = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True)
            if with_group.stdout.strip():
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, log.read_text(errors="replace")[-3000:]


async def until_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until /health says the chat model answers and Whisper is loaded."""
    deadline = time.monotonic() + SETUP_S
    health: dict[str, Any] = {}
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"serve exited {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                async with session.get(url + "/health") as resp:
                    health = await resp.json()
                    if health["llm"]["ok"] and health["stt"]:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(1.0)
    raise AssertionError(f"not ready: {health}\n{log.read_text(errors='replace')[-3000:]}")


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


@pytest.mark.timeout(SETUP_S + 600)
async def test_serve_without_ollama_answers_hears_and_finds_by_meaning(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    url, log = served
    async with aiohttp.ClientSession() as session:
        async with session.get(url + "/health") as resp:
            health = await resp.json()
        assert health["llm"]["backend"] == "openai", health
        assert (health["embedding"]["backend"], health["embedding"]["dim"]) == ("local", 384)
        assert health["parts"]["llm"]["where"] == "external", health["parts"]
        assert health["parts"]["embedder"]["where"] == "embedded", health["parts"]

        # A real answer from Gemma on llama-server, not the degraded apology. A 270M model
        # sometimes runs into the server's answer cap inside its JSON (docs/benchmarks.md,
        # issue 26), and sometimes judges a greeting to need no answer (an empty IGNORE, seen
        # once in four CI runs): one of three turns must come back whole and spoken.
        replies = []
        for attempt in range(3):
            body = {"text": "Hello! Please say something friendly.", "session_id": f"s-{attempt}"}
            async with session.post(url + "/chat/text", json=body) as resp:
                assert resp.status == 200
                said = await resp.json()
            replies.append(said)
            if not said.get("degraded") and said["action"] == "RESPOND":
                break
        assert not said.get("degraded"), replies
        assert said["action"] == "RESPOND" and said["response"].strip(), replies

        # A transcript from the real Whisper base for espeak-ng speech.
        wav = speak_wav("Turn off the lights in the kitchen.", tmp_path / "lights.wav")
        headers = {"Content-Type": "audio/wav"}
        async with session.post(url + "/chat/audio", data=wav.read_bytes(), headers=headers) as r:
            assert r.status == 200, await r.text()
            heard = await r.json()
        assert {"turn", "off", "lights", "kitchen"} <= words(heard["transcript"]), heard

        # Facts stored, the right one found by a question sharing no word with it.
        for fact in FACTS:
            async with session.post(url + "/v1/memories", json={"content": fact}) as resp:
                assert resp.status in (200, 201), await resp.text()
        assert not words(PARAPHRASE) & words(FACTS[0])
        query = {"query": PARAPHRASE, "kinds": ["fact"], "top_k": 3}
        found: dict[str, Any] = {}
        # The facts' embedding jobs run in the background, behind the turns' memory jobs (which wait
        # for the household to be quiet, then for the model): a bound against a hang only.
        for _ in range(300):
            async with session.post(url + "/v1/query", json=query) as resp:
                assert resp.status == 200, await resp.text()
                found = await resp.json()
            if found["results"] and FACTS[0] in found["results"][0]["text"]:
                break
            await asyncio.sleep(1.0)
        assert found["results"], found
        assert FACTS[0] in found["results"][0]["text"], found  # "[category] " before it
    assert "Gemma 3 270M on llama-server" in log.read_text(errors="replace")
