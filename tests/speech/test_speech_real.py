"""POST /chat/audio with real speech: espeak-ng sentences through the daemon's app, the real
Whisper base model and a fake Ollama; the names the memory holds reach the recogniser for the
owner and never for a stranger. (Faults stay with the swapped-in transcriber tests.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from api_kit import make_app
from audio_fixtures import speak_wav
from real_whisper import RecordingWhisper, real_whisper, words

from lobug import keys

pytestmark = pytest.mark.timeout(120)

HOUSEHOLD = (
    "The user adopted a puppy called Biscuit.",
    "The user's sister Rosalind lives in Bristol.",
    "The user's cat is called Pirukas.",
    "The user's brother Oliver is visiting next week.",
)
ROSALIND = "My sister Rosalind lives in Bristol."


@pytest.fixture
def transcriber() -> RecordingWhisper:  # the app under test gets the real model
    return real_whisper()


async def post_audio(client: Any, wav: Path, **headers: str) -> dict[str, Any]:
    resp = await client.post(
        "/chat/audio",
        data=wav.read_bytes(),
        headers={"Content-Type": "audio/wav", **headers},
    )
    assert resp.status == 200, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


async def test_chat_audio_transcribes_speech_and_answers(
    make_client: Callable[..., Any], tmp_path: Path
) -> None:
    client = await make_client()
    wav = speak_wav("Turn off the lights in the kitchen.", tmp_path / "lights.wav")
    body = await post_audio(client, wav)
    assert {"turn", "off", "lights", "kitchen"} <= words(body["transcript"]), body
    assert body["action"] == "RESPOND" and body["response"]
    db = client.app[keys.DB]
    stored = await db.read(
        lambda conn: conn.execute("SELECT text FROM turns WHERE role = 'user'").fetchall()
    )
    assert [row[0] for row in stored] == [body["transcript"]]


async def test_the_names_the_memory_holds_are_heard(
    make_client: Callable[..., Any], transcriber: RecordingWhisper, tmp_path: Path
) -> None:
    app = await make_app(make_client, **{"memory.enabled": True})
    for fact in HOUSEHOLD:
        await app.remember(fact, store="private")
    wav = speak_wav(ROSALIND, tmp_path / "rosalind.wav")
    body = await post_audio(app.client, wav)
    assert {"sister", "rosalind", "lives", "bristol"} <= words(body["transcript"]), body
    hints = transcriber.last_hints
    assert hints is not None and hints.hotwords is not None
    assert {"Biscuit", "Rosalind", "Bristol", "Pirukas", "Oliver"} <= {
        w.strip(".,") for w in hints.hotwords.split()
    }


async def test_a_stranger_is_given_no_names_from_the_owners_memory(
    make_client: Callable[..., Any], transcriber: RecordingWhisper, tmp_path: Path
) -> None:
    # Loopback is a stranger here (no device token): its words are answered from no store.
    app = await make_app(make_client, **{"memory.enabled": True, "api.allow_loopback": False})
    speech = app.client.app[keys.SPEECH]
    for fact in HOUSEHOLD:  # the owner's private facts, through the owner's token
        await app.as_["full"].post("/v1/memories", {"content": fact, "store": "private"}, 201)
    assert "Rosalind" in ((await speech.hints("full")).hotwords or "")
    wav = speak_wav(ROSALIND, tmp_path / "rosalind.wav")
    body = await post_audio(app.client, wav)
    assert transcriber.last_hints is not None and transcriber.last_hints.empty
    assert "bristol" in words(body["transcript"]), body  # transcribed all the same
