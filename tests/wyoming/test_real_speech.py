"""Wyoming with real speech: espeak-ng audio to `asr` and the transcript to `handle`, as Home
Assistant's Assist pipeline does, through the app's Wyoming port and the real Whisper model."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from api_kit import TOKEN_CONFIG
from audio_fixtures import speak_wav
from wyoming_kit import client, handle, transcribe, transcript_text

sys.path.insert(0, str(Path(__file__).parents[1] / "speech"))

from real_whisper import RecordingWhisper, real_whisper, words  # noqa: E402

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def transcriber() -> RecordingWhisper:  # the app under test gets the real model
    return real_whisper()


async def test_asr_then_handle_with_real_speech(
    make_door: Callable[..., Any], ollama: Any, tmp_path: Path
) -> None:
    state, _ = ollama
    door = await make_door()
    wav = speak_wav("Set a timer for ten minutes.", tmp_path / "timer.wav")
    async with client(door.port) as conn:
        text = transcript_text(await transcribe(conn, wav))
        assert {"timer", "minutes"} <= words(text) and words(text) & {"ten", "10"}, text
        reply = await handle(conn, text)
    assert reply.handled is not None and reply.text
    prompt = str(state.chat_calls()[-1]["body"]["messages"])
    assert text in prompt  # the transcript itself was the turn
    assert door.rows("SELECT text FROM turns WHERE role = 'user'") == [(text,)]


async def test_asr_hears_the_households_names_only_for_a_trusted_peer(
    make_door: Callable[..., Any], transcriber: RecordingWhisper, tmp_path: Path
) -> None:
    door = await make_door(**{"memory.enabled": True, "api.tokens": TOKEN_CONFIG})
    owner = {"Authorization": f"Bearer {TOKEN_CONFIG[0]['token']}"}
    for fact in (
        "The user's cat is called Pirukas.",
        "The user's sister Rosalind lives in Bristol.",
    ):
        resp = await door.http.post(
            "/v1/memories", json={"content": fact, "store": "private"}, headers=owner
        )
        assert resp.status == 201, await resp.text()
    wav = speak_wav("My sister Rosalind lives in Bristol.", tmp_path / "rosalind.wav")
    async with client(door.port) as conn:  # loopback with allow_loopback: the owner
        text = transcript_text(await transcribe(conn, wav))
    assert {"sister", "rosalind", "bristol"} <= words(text), text
    assert "Pirukas" in (transcriber.last_hints.hotwords or "")  # type: ignore[union-attr]

    stranger = await make_door(**{"memory.enabled": True, "api.allow_loopback": False})
    async with client(stranger.port) as conn:
        transcript_text(await transcribe(conn, wav))
    assert transcriber.last_hints is not None and transcriber.last_hints.empty
