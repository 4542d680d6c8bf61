"""Seed 001 §10 through the real device turns: a name heard on /chat/audio becomes a pending
proposal (not a fact), the next prompt asks the user to confirm it (once), and a spoken "yes,
remember that" writes it; typed on /chat/text it is written as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from audio_fixtures import FakeTranscriber, tone_wav
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import drain

from lobug import keys
from lobug.conversation import VOICE_REF

SAM = "The user's name is Sam."
CONFIRM = f"Ask the user to confirm before you remember: {SAM}"


@pytest.fixture
async def client(make_client: Any) -> Any:
    # The heuristic extractor finds the name (category `profile`); the fake model finds none.
    return await make_client()


def rows(client: Any, sql: str, *params: Any) -> list[Any]:
    return query(client.app[keys.CONFIG].storage.db_path, sql, *params)


async def speak(client: Any, transcriber: FakeTranscriber, words: str, wav: bytes) -> Any:
    transcriber.text = words
    resp = await client.post(
        "/chat/audio?device_id=desk&session_id=s-voice",
        data=wav,
        headers={"Content-Type": "audio/wav"},
    )
    body = await resp.json()
    assert resp.status == 200 and body["transcript"] == words, body
    await drain(client.app[keys.CONFIG].storage.db_path, client.app[keys.MEMORY].clock)
    return body


def system_prompt(state: FakeOllamaState) -> str:
    return state.prompt_text()


async def test_a_spoken_name_needs_a_yes(
    client: Any, transcriber: FakeTranscriber, ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    state, _ = ollama
    wav = tone_wav(tmp_path / "utterance.wav", 1.0).read_bytes()
    first = await speak(client, transcriber, "My name is Sam.", wav)
    assert rows(client, "SELECT ref FROM turns WHERE id = ?", first["turn_id"])[0][0] == VOICE_REF
    (prop,) = rows(client, "SELECT * FROM proposals")
    assert (prop["field"], prop["value"], prop["status"]) == ("preferred_name", "Sam", "pending")
    assert rows(client, "SELECT COUNT(*) FROM memories WHERE content = ?", SAM)[0][0] == 0

    await speak(client, transcriber, "What's the weather like?", wav)
    assert CONFIRM in system_prompt(state)  # the assistant is asked to ask
    await speak(client, transcriber, "What time is it?", wav)
    assert CONFIRM not in system_prompt(state)  # once per proposal and session

    await speak(client, transcriber, "Yes, remember that.", wav)
    (prop,) = rows(client, "SELECT * FROM proposals")
    (fact,) = rows(client, "SELECT id, status, valid_until FROM memories WHERE content = ?", SAM)
    assert (prop["status"], prop["decided_by"], prop["memory_id"]) == ("accepted", "chat", fact[0])
    assert (fact["status"], fact["valid_until"]) == ("active", None)
    events = rows(
        client, "SELECT event, memory_id FROM history WHERE event IN ('PROPOSE', 'ACCEPT')"
    )
    assert [tuple(e) for e in events] == [("PROPOSE", None), ("ACCEPT", fact[0])]
    await speak(client, transcriber, "Who am I?", wav)
    assert SAM in system_prompt(state)  # `profile` has context `all`: always in the prompt


async def test_a_typed_name_is_written_as_before(client: Any) -> None:
    resp = await client.post("/chat/text", json={"text": "My name is Sam.", "session_id": "s-t"})
    assert resp.status == 200
    await drain(client.app[keys.CONFIG].storage.db_path, client.app[keys.MEMORY].clock)
    assert rows(client, "SELECT COUNT(*) FROM proposals")[0][0] == 0
    assert rows(client, "SELECT status FROM memories WHERE content = ?", SAM)[0][0] == "active"
