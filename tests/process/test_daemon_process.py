"""The real daemon process: start, serve the contract, SIGTERM cleanly, survive kill -9."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from contract import assert_valid
from daemon_proc import Daemon
from dbutil import query
from fake_ollama import FakeOllamaState


def turn_texts(data_dir: Path) -> list[str]:
    return [r[0] for r in query(data_dir / "lobug.db", "SELECT text FROM turns ORDER BY id")]


async def test_serve_sigterm_restart_keeps_turns_and_working_memory(
    daemons: Callable[..., Daemon], ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    state, _ = ollama
    daemon = await daemons(fake_stt=False).start()
    status, health = await daemon.request("GET", "/health")
    assert status == 200
    assert_valid("health.response", health)
    assert health["db"] is True and health["ollama"] is True
    # No Whisper weights on a test machine: stt is false and the status says degraded.
    assert health["stt"] is False and health["status"] == "degraded"
    status, body = await daemon.request(
        "POST", "/chat/text", json={"text": "my cat is Tom", "session_id": "s-keep"}
    )
    assert status == 200
    assert_valid("chat_text.response", body)
    status, body = await daemon.request(
        "POST", "/context/sensors", json={"orientation": "face_up", "battery": 80}
    )
    assert (status, body) == (200, {"status": "ok"})
    status, body = await daemon.request(
        "POST", "/chat/audio", data=b"RIFF", headers={"Content-Type": "audio/wav"}
    )
    assert status == 503 and body["error"]["code"] == "unavailable"
    assert await daemon.terminate() == 0
    assert "lobug stopped" in daemon.log()
    assert turn_texts(tmp_path / "data") == ["my cat is Tom", "You said: my cat is Tom"]

    again = await daemons(fake_stt=False).start()
    status, body = await again.request(
        "POST", "/chat/text", json={"text": "what is my cat called", "session_id": "s-keep"}
    )
    assert status == 200
    assert state.conversation() == [
        "my cat is Tom",
        "You said: my cat is Tom",
        "what is my cat called",
    ]
    assert "[Current physical state: Device orientation: face_up, battery 80%]" in (
        state.prompt_text()
    )
    assert await again.terminate() == 0


async def test_kill9_loses_no_committed_turn(
    daemons: Callable[..., Daemon], tmp_path: Path
) -> None:
    daemon = await daemons().start()
    for i in range(20):
        status, _ = await daemon.request("POST", "/chat/text", json={"text": f"note {i}"})
        assert status == 200
    daemon.kill9()
    texts = turn_texts(tmp_path / "data")
    assert [t for t in texts if t.startswith("note")] == [f"note {i}" for i in range(20)]
    again = await daemons().start()
    status, _ = await again.request("POST", "/chat/text", json={"text": "after the crash"})
    assert status == 200
    assert "after the crash" in turn_texts(tmp_path / "data")
    assert await again.terminate() == 0


async def test_fake_stt_launcher_serves_audio(
    daemons: Callable[..., Daemon], tmp_path: Path
) -> None:
    from audio_fixtures import tone_wav

    daemon = await daemons().start()
    wav = tone_wav(tmp_path / "t.wav", 1.0).read_bytes()
    status, body = await daemon.request(
        "POST", "/chat/audio?device_id=desk", data=wav, headers={"Content-Type": "audio/wav"}
    )
    assert status == 200, body
    assert_valid("chat_audio.response", body)
    assert body["transcript"] == "what's the weather like"
    assert await daemon.terminate() == 0
