"""Wyoming in the real daemon process (tests/run_daemon.py: only Whisper is faked), spoken to
with the real `wyoming` client: describe, asr with a spoken WAV, handle through the turn, the
off switch and a port that is already taken."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import speak_wav
from daemon_proc import free_port
from faultkit import DaemonPool, db_rows
from wyoming.ping import Ping, Pong

sys.path.insert(0, str(Path(__file__).parent))

from wyoming_kit import (  # noqa: E402
    AUDIO,
    client,
    describe,
    frame,
    handle,
    port_closed,
    transcribe,
    transcript_text,
    until,
)

pytestmark = pytest.mark.timeout(90)
CANNED = "remind me to water the basil"


def wyoming_env(port: int) -> dict[str, str]:
    return {"LOBUG_WYOMING_URI": f"tcp://127.0.0.1:{port}"}


async def test_describe_asr_and_handle_against_the_daemon(
    daemons: DaemonPool, ollama: Any, tmp_path: Path
) -> None:
    state, _ = ollama
    port = free_port()
    daemon = await daemons.start(env=wyoming_env(port), extra_args=["--stt-text", CANNED])
    wav = speak_wav("remind me to water the basil", tmp_path / "basil.wav", rate=22050)

    async with client(port) as conn:
        info = await describe(conn)
        (asr,) = info.asr
        assert asr.name == "lobug" and asr.installed and asr.models[0].installed
        assert asr.models[0].name == "base.en" and asr.models[0].languages == ["en"]
        (agent,) = info.handle
        assert agent.name == "lobug" and agent.supports_handled_streaming
        assert agent.models[0].name == "llama3.2"

        assert transcript_text(await transcribe(conn, wav)) == CANNED

        first = await handle(conn, "My sister is called Mira")
        second = await handle(conn, "What is my sister called?")

    # The protocol's streaming order, with the whole reply in `handled` for older clients.
    assert first.types[0] == "handled-start" and first.types[-2:] == ["handled", "handled-stop"]
    assert "".join(first.chunks).strip() == first.text == "You said: My sister is called Mira"
    session = first.context["session_id"]
    assert second.context["session_id"] == session  # one session per connection
    rows = db_rows(
        daemon.data_dir, "SELECT role, text, device_id, session_id, degraded FROM turns ORDER BY id"
    )
    assert rows == [
        ("user", "My sister is called Mira", "wyoming", session, 0),
        ("assistant", "You said: My sister is called Mira", "wyoming", session, 0),
        ("user", "What is my sister called?", "wyoming", session, 0),
        ("assistant", "You said: What is my sister called?", "wyoming", session, 0),
    ]
    # The second turn's prompt holds the first exchange: working memory, as for /chat/text.
    last = state.chat_calls()[-1]["body"]["messages"]
    assert any(m["content"] == "My sister is called Mira" for m in last)
    assert any(m["content"] == "You said: My sister is called Mira" for m in last)
    status, health = await daemon.request("GET", "/health")
    assert health["wyoming"]["listening"] is True, health
    assert await daemon.terminate() == 0
    assert await port_closed(port)


async def test_ollama_down_the_listener_hears_the_apology(daemons: DaemonPool, ollama: Any) -> None:
    state, _ = ollama
    port = free_port()
    daemon = await daemons.start(env=wyoming_env(port))
    state.mode = "down"
    async with client(port) as conn:
        reply = await handle(conn, "Remember that the boiler is serviced in May")
    apology = "Sorry, I can't think right now. I'll remember what you said."
    assert reply.text == apology and reply.chunks == [apology]
    assert reply.types == ["handled-start", "handled-chunk", "handled", "handled-stop"]
    # The user's words were committed before the model was called.
    rows = db_rows(daemon.data_dir, "SELECT role, text, device_id FROM turns ORDER BY id")
    assert rows[0] == ("user", "Remember that the boiler is serviced in May", "wyoming")
    # /chat/text answers the same apology in the same state.
    status, body = await daemon.request("POST", "/chat/text", json={"text": "still there?"})
    assert status == 200 and body["response"] == apology and body["degraded"] is True


async def test_the_off_switch_opens_no_port(daemons: DaemonPool) -> None:
    port = free_port()
    env = {**wyoming_env(port), "LOBUG_WYOMING_ENABLED": "false"}
    daemon = await daemons.start(env=env)
    assert await port_closed(port)
    status, health = await daemon.request("GET", "/health")
    assert status == 200 and "wyoming" not in health
    assert await daemon.terminate() == 0


async def test_a_taken_port_does_not_stop_the_daemon(daemons: DaemonPool) -> None:
    squatter = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = squatter.sockets[0].getsockname()[1]
    try:
        daemon = await daemons.start(env=wyoming_env(port))
        status, health = await daemon.request("GET", "/health")
        assert status == 200
        wyoming = health["wyoming"]
        assert wyoming["listening"] is False and "cannot listen" in wyoming["error"], health
        assert wyoming["uri"] == f"tcp://127.0.0.1:{port}"
        status, body = await daemon.request("POST", "/chat/text", json={"text": "hello"})
        assert status == 200 and body["response"] == "You said: hello"
        assert "Wyoming is off" in daemon.log()
        assert await daemon.terminate() == 0
    finally:
        squatter.close()
        await squatter.wait_closed()


async def test_sigterm_with_a_client_connected_ends_promptly(daemons: DaemonPool) -> None:
    port = free_port()
    daemon = await daemons.start(env={**wyoming_env(port), "LOBUG_SERVER_SHUTDOWN_TIMEOUT_S": "30"})
    async with client(port) as conn:
        assert (await describe(conn)).handle  # an idle connection left open, as HA may
        await conn.write_event(Ping(text="still there?").event())
        (pong,) = await until(conn, "pong")
        assert Pong.from_event(pong).text == "still there?"
        started = time.monotonic()
        assert await daemon.terminate(timeout=25) == 0
        assert time.monotonic() - started < 8, daemon.log()
        assert await conn.read_event() is None  # the daemon closed it


def proc_status(pid: int, key: str) -> int:
    """A /proc/<pid>/status figure in KiB (VmRSS; VmHWM is the peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} for pid {pid}")


async def stream_audio(port: int, size: int) -> asyncio.StreamWriter:
    """A connection that sends `size` bytes of audio in 64 KiB chunks and never stops: or as
    much as the daemon takes before it refuses and closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    chunk = bytes(64 * 1024)
    head = frame({"type": "audio-chunk", "data": AUDIO, "payload_length": len(chunk)})
    with contextlib.suppress(ConnectionError):
        writer.write(frame({"type": "audio-start", "data": AUDIO}))
        for _ in range(size // len(chunk)):
            writer.write(head + chunk)
            await asyncio.wait_for(writer.drain(), 5)
    return writer


async def test_abuse_leaves_the_daemon_bounded_and_serving(daemons: DaemonPool) -> None:
    """Issue 25: one event declaring 400 MB took 400 MB of RSS; 150 streams each within
    speech.max_audio_bytes took ~290 MB together; 600 idle connections used up the fds."""
    port = free_port()
    daemon = await daemons.start(env=wyoming_env(port))
    assert daemon.proc is not None
    pid = daemon.proc.pid
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    # What the abuse may add to the daemon's own size (its parts grow from issue to issue):
    # before the caps, one event took 400 MB and the streams ~290 MB together.
    before_mib = proc_status(pid, "VmRSS") / 1024

    huge = await stream_audio(port, 0)
    huge.write(frame({"type": "audio-chunk", "data": AUDIO, "payload_length": 400_000_000}))
    with contextlib.suppress(ConnectionError, TimeoutError):
        for _ in range(64):  # 64 MiB of it, as far as the daemon reads
            huge.write(bytes(2**20))
            await asyncio.wait_for(huge.drain(), 2)
    streams = await asyncio.gather(*(stream_audio(port, 2 * 2**20) for _ in range(150)))
    idle = [(await asyncio.open_connection("127.0.0.1", port))[1] for _ in range(300)]

    peak_mib = proc_status(pid, "VmHWM") / 1024
    assert peak_mib - before_mib < 100, f"peak RSS {peak_mib:.0f} MiB from {before_mib:.0f}"
    deadline = time.monotonic() + 5  # those past wyoming.max_connections (32) are closed
    while len(os.listdir(f"/proc/{pid}/fd")) > fds + 40 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert len(os.listdir(f"/proc/{pid}/fd")) <= fds + 40
    status, health = await daemon.request("GET", "/health")
    assert status == 200 and health["wyoming"]["connections"] <= 32, health
    status, body = await daemon.request("POST", "/chat/text", json={"text": "still there?"})
    assert status == 200, body
    for writer in [huge, *streams, *idle]:
        writer.close()
    assert "Traceback" not in daemon.log()
    assert await daemon.terminate() == 0
