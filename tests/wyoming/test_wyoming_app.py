"""The Wyoming server of the app under test, on a real port, with the real `wyoming` client:
audio formats and limits for `asr`, sessions, trust and faults for `handle`."""

from __future__ import annotations

import json
import sys
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from audio_fixtures import FakeTranscriber, speak_wav, tone
from memory_kit import drain
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error

from lobug import keys

sys.path.insert(0, str(Path(__file__).parent))

from wyoming_kit import (  # noqa: E402
    client,
    describe,
    handle,
    transcribe,
    transcript_text,
    until,
)

pytestmark = pytest.mark.timeout(60)
APOLOGY = "Sorry, I can't think right now. I'll remember what you said."


def pcm_wav(path: Path, samples: np.ndarray, rate: int, width: int, channels: int = 1) -> Path:
    """A WAV of float samples in [-1, 1] at 8-bit unsigned or 16/24/32-bit signed PCM."""
    frames = np.repeat(samples[:, None], channels, axis=1).reshape(-1)
    if width == 1:
        data = np.round(frames * 127 + 128).astype(np.uint8).tobytes()
    else:
        full = np.round(frames * (2 ** (8 * width - 1) - 1)).astype("<i8")
        data = full.view(np.uint8).reshape(-1, 8)[:, :width].tobytes()  # little-endian low bytes
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(data)
    return path


@pytest.mark.parametrize(
    ("rate", "width", "channels"), [(16000, 1, 1), (22050, 3, 2), (48000, 4, 1)]
)
async def test_any_pcm_format_reaches_whisper_as_16k_mono(
    make_door: Callable[..., Any],
    transcriber: FakeTranscriber,
    tmp_path: Path,
    rate: int,
    width: int,
    channels: int,
) -> None:
    door = await make_door()
    wav = pcm_wav(tmp_path / "tone.wav", tone(1.0, rate, 440.0), rate, width, channels)
    async with client(door.port) as conn:
        assert transcript_text(await transcribe(conn, wav)) == "what's the weather like"
    heard = transcriber.last_audio
    assert heard is not None and heard.dtype == np.float32
    assert abs(heard.size - 16000) <= 16  # one second at 16 kHz
    expected = tone(1.0, 16000, 440.0)[: heard.size]
    assert float(np.corrcoef(heard[200:-200], expected[200:-200])[0, 1]) > 0.99


async def test_speech_at_48k_stereo_matches_its_16k_mono_version(
    make_door: Callable[..., Any], transcriber: FakeTranscriber, tmp_path: Path
) -> None:
    door = await make_door()
    stereo = speak_wav("the basil needs water", tmp_path / "stereo.wav", rate=48000, channels=2)
    mono = speak_wav("the basil needs water", tmp_path / "mono.wav", rate=16000)
    async with client(door.port) as conn:
        await transcribe(conn, stereo)
        from_stereo = transcriber.last_audio
        await transcribe(conn, mono)
        from_mono = transcriber.last_audio
    assert from_stereo is not None and from_mono is not None
    n = min(from_stereo.size, from_mono.size)
    assert abs(from_stereo.size - from_mono.size) <= 32
    assert float(np.corrcoef(from_stereo[:n], from_mono[:n])[0, 1]) > 0.95


@pytest.mark.parametrize(
    ("overrides", "seconds"),
    [({"speech.max_audio_seconds": 1.0}, 2.0), ({"speech.max_audio_bytes": 40_000}, 2.0)],
)
async def test_audio_past_the_limits_is_refused_with_an_error(
    make_door: Callable[..., Any],
    transcriber: FakeTranscriber,
    tmp_path: Path,
    overrides: dict[str, Any],
    seconds: float,
) -> None:
    door = await make_door(**overrides)
    wav = pcm_wav(tmp_path / "long.wav", tone(seconds, 16000), 16000, 2)
    async with client(door.port) as conn:
        answer = await transcribe(conn, wav)
        assert Error.is_type(answer.type), answer
        error = Error.from_event(answer)
        assert error.code == "payload_too_large" and "speech.max_audio" in error.text
        # One error per stream, the rest of it dropped; the connection still serves.
        short = pcm_wav(tmp_path / "short.wav", tone(0.5, 16000), 16000, 2)
        assert transcript_text(await transcribe(conn, short)) == "what's the weather like"
    assert transcriber.transcribe_calls == 1


async def test_a_bad_format_or_no_audio_is_an_error(make_door: Callable[..., Any]) -> None:
    door = await make_door()
    async with client(door.port) as conn:
        await conn.write_event(AudioStart(rate=4000, width=2, channels=1).event())
        (error,) = await until(conn, "transcript")
        assert Error.from_event(error).code == "invalid_request"
        assert "4000" in Error.from_event(error).text
        await conn.write_event(AudioStop().event())
        (error,) = await until(conn, "transcript")
        assert Error.from_event(error).text == "audio-stop without any audio"
        chunk = AudioChunk(rate=16000, width=2, channels=1, audio=b"\x00\x01" * 800)
        await conn.write_event(AudioStart(rate=16000, width=2, channels=1).event())
        await conn.write_event(AudioChunk(rate=8000, width=2, channels=1, audio=b"").event())
        (error,) = await until(conn, "transcript")
        assert "audio-start said 16000 Hz" in Error.from_event(error).text
        await conn.write_event(chunk.event())
        await conn.write_event(AudioStop().event())
        assert (await describe(conn)).asr  # nothing else was answered for that stream


async def test_speech_unavailable_is_an_error(
    make_door: Callable[..., Any], transcriber: FakeTranscriber, tmp_path: Path
) -> None:
    transcriber.fail_load = True
    door = await make_door()
    async with client(door.port) as conn:
        info = await describe(conn)
        assert info.asr[0].models[0].installed is False
        answer = await transcribe(conn, pcm_wav(tmp_path / "t.wav", tone(0.5, 16000), 16000, 2))
    assert Error.from_event(answer).code == "unavailable"
    assert "fake model is missing" in Error.from_event(answer).text


async def test_a_multilingual_model_announces_whispers_languages(
    make_door: Callable[..., Any],
) -> None:
    from faster_whisper.tokenizer import _LANGUAGE_CODES

    door = await make_door(**{"speech.model": "small"})
    async with client(door.port) as conn:
        info = await describe(conn)
    assert info.asr[0].models[0].languages == list(_LANGUAGE_CODES)
    assert info.handle[0].models[0].languages == []  # any: the chat model decides


async def test_a_conversation_id_is_one_session_across_connections(
    make_door: Callable[..., Any], ollama: Any
) -> None:
    """Home Assistant opens a connection per turn and names the conversation in `context`."""
    state, _ = ollama
    door = await make_door()
    context = {"conversation_id": "01JABCDEF0123456789XYZ", "device_id": "kitchen-satellite"}
    async with client(door.port) as conn:
        first = await handle(conn, "The spare key is under the blue pot", context)
    async with client(door.port) as conn:
        second = await handle(conn, "Where is the spare key?", context)
        other = await handle(conn, "Hello", {"conversation_id": "another"})
    session = "wyoming-01JABCDEF0123456789XYZ"
    assert first.context["session_id"] == second.context["session_id"] == session
    assert second.context["conversation_id"] == context["conversation_id"]
    assert other.context["session_id"] == "wyoming-another"
    prompt = json.dumps(state.chat_calls()[1]["body"]["messages"])
    assert "The spare key is under the blue pot" in prompt
    sessions = door.rows("SELECT DISTINCT session_id FROM turns ORDER BY id")
    assert sessions == [(session,), ("wyoming-another",)]


@pytest.mark.parametrize(
    ("overrides", "sees_private"),
    [
        ({}, True),  # loopback, api.allow_loopback on: the owner's machine
        ({"api.allow_loopback": False}, False),  # a stranger: api.unknown_device_trust
        ({"api.allow_loopback": False, "wyoming.trusted_hosts": "127.0.0.0/8"}, True),
        ({"api.allow_loopback": False, "api.unknown_device_trust": "full"}, True),
    ],
)
async def test_trust_follows_the_peer_address(
    make_door: Callable[..., Any], ollama: Any, overrides: dict[str, Any], sees_private: bool
) -> None:
    state, _ = ollama
    door = await make_door(**overrides)
    memory = door.http.app[keys.MEMORY]
    await memory.remember(content="The user's bank PIN is 4417.", actor="test")
    await drain(door.http.app[keys.CONFIG].storage.db_path, memory.clock)
    async with client(door.port) as conn:
        reply = await handle(conn, "what is my bank PIN?")
    assert reply.text.endswith("what is my bank PIN?")  # the fake model echoes the prompt
    prompt = json.dumps(state.chat_calls()[-1]["body"]["messages"])
    assert ("4417" in prompt) is sees_private


async def test_refusals_are_not_handled_and_store_nothing(
    make_door: Callable[..., Any], ollama: Any
) -> None:
    state, _ = ollama
    door = await make_door(**{"api.device_allowlist": "desk"})
    async with client(door.port) as conn:
        refused = await handle(conn, "hello")
    assert refused.not_handled is not None and "api.device_allowlist" in refused.not_handled.text
    door = await make_door(**{"chat.max_text_chars": 10})
    async with client(door.port) as conn:
        empty = await handle(conn, "   ")
        long = await handle(conn, "far too long for the limit")
    assert empty.not_handled is not None and "empty" in (empty.not_handled.text or "")
    assert long.not_handled is not None and "limit is 10" in (long.not_handled.text or "")
    assert door.rows("SELECT COUNT(*) FROM turns") == [(0,)] and state.chat_calls() == []


async def test_a_reply_cut_mid_stream_ends_with_the_apology(
    make_door: Callable[..., Any], ollama: Any
) -> None:
    state, _ = ollama
    door = await make_door()
    state.reply = "The boiler was serviced in May last year"
    state.stream_cut_after, state.stream_cut = 3, "error"
    async with client(door.port) as conn:
        reply = await handle(conn, "When was the boiler serviced?")
        assert reply.chunks == ["The ", "boiler ", "was ", APOLOGY]
        assert reply.text == f"The boiler was {APOLOGY}"
        assert reply.types[-2:] == ["handled", "handled-stop"]
        state.stream_cut_after = None
        again = await handle(conn, "Thanks")
    assert again.text == "The boiler was serviced in May last year"
    rows = door.rows("SELECT role, text, degraded FROM turns ORDER BY id")
    assert rows[:2] == [
        ("user", "When was the boiler serviced?", 0),
        ("assistant", "The boiler was", 1),
    ]


async def test_a_spoken_name_waits_for_consent_as_on_chat_audio(
    make_door: Callable[..., Any], ollama: Any
) -> None:
    """A Wyoming transcript was spoken (Home Assistant's speech-to-text): the name it gives is a
    pending proposal, as from /chat/audio, not a fact written at once (seed 001 §10)."""
    door = await make_door()
    async with client(door.port) as conn:
        assert (await handle(conn, "My name is Sam.")).types[-1] == "handled-stop"
    await drain(door.http.app[keys.CONFIG].storage.db_path, door.http.app[keys.MEMORY].clock)
    assert door.rows("SELECT ref FROM turns WHERE role = 'user'") == [("voice",)]
    proposals = door.rows("SELECT field, value, status FROM proposals")
    assert proposals == [("preferred_name", "Sam", "pending")]
    sam = "The user's name is Sam."
    assert door.rows("SELECT COUNT(*) FROM memories WHERE content = ?", sam) == [(0,)]


async def test_describe_names_the_chat_model_of_either_backend(
    make_door: Callable[..., Any],
) -> None:
    door = await make_door()
    async with client(door.port) as conn:
        info = await describe(conn)
    assert (info.handle[0].models[0].name, info.handle[0].models[0].attribution.name) == (
        door.http.app[keys.CONFIG].ollama.chat_model, "Ollama",
    )  # fmt: skip
    door = await make_door(**{"llm.backend": "openai", "llm.chat_model": "gemma-3-270m"})
    async with client(door.port) as conn:
        info = await describe(conn)
    model = info.handle[0].models[0]
    assert (model.name, model.attribution.name) == ("gemma-3-270m", "OpenAI-compatible server")
