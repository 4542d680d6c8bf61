"""What a Wyoming peer (no authentication) can make the daemon hold, and what malformed input
gets (issue 25, findings 3, 5 and 13): declared lengths are checked before they are read, the
connections are capped, an idle one is closed, the audio of every connection shares one budget,
and a malformed frame is one `error` event and a close, never a traceback."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from audio_fixtures import tone
from faultkit import vm_rss_kib
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event

sys.path.insert(0, str(Path(__file__).parent))

from wyoming_kit import (  # noqa: E402
    AUDIO,
    answer,
    client,
    describe,
    frame,
    handle,
    raw,
    refused_and_closed,
    transcript_text,
    until,
)

pytestmark = pytest.mark.timeout(60)
SPOKEN = "what's the weather like"  # the fake transcriber's words


def pcm(seconds: float) -> bytes:
    return (np.asarray(tone(seconds, 16000)) * 32767).astype("<i2").tobytes()


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    gc.collect()  # an unawaited task's exception is logged when it is collected
    for record in caplog.records:
        assert record.exc_info is None, record.getMessage()
        assert "never retrieved" not in record.getMessage()
        assert "Unhandled exception" not in record.getMessage()


@pytest.mark.parametrize(
    ("kind", "key"), [("audio-chunk", "payload_length"), ("ping", "data_length")]
)
async def test_a_huge_declared_length_is_refused_before_it_is_read(
    make_door: Callable[..., Any], kind: str, key: str
) -> None:
    door = await make_door()
    before = vm_rss_kib(os.getpid())
    reader, writer = await raw(door.port)
    writer.write(frame({"type": kind, "data": AUDIO, key: 400_000_000}, b"\0" * 4096))
    error = await refused_and_closed(reader, "payload_too_large")
    assert f"'{key}' is 400000000 bytes" in error.text
    writer.close()
    assert vm_rss_kib(os.getpid()) - before < 32 * 1024


async def test_audio_past_the_total_budget_is_refused(make_door: Callable[..., Any]) -> None:
    """Each stream is well within speech.max_audio_bytes; together they are not."""
    door = await make_door(**{"wyoming.max_audio_bytes_total": 200 * 1024})
    held, more = pcm(5.0), pcm(3.0)  # 160,000 + 96,000 bytes > 200 KiB
    async with client(door.port) as first, client(door.port) as second:
        await first.write_event(AudioStart(**AUDIO).event())
        await first.write_event(AudioChunk(**AUDIO, audio=held).event())
        assert (await describe(first)).asr  # the chunk was taken
        await second.write_event(AudioStart(**AUDIO).event())
        await second.write_event(AudioChunk(**AUDIO, audio=more).event())
        (refusal,) = await until(second, "transcript")
        error = Error.from_event(refusal)
        assert error.code == "unavailable" and "wyoming.max_audio_bytes_total" in error.text
        assert await second.read_event() is None
        await first.write_event(AudioStop().event())
        assert transcript_text((await until(first, "transcript"))[-1]) == SPOKEN
    async with client(door.port) as third:  # the first stream's share was given back
        for event in (AudioStart(**AUDIO), AudioChunk(**AUDIO, audio=more), AudioStop()):
            await third.write_event(event.event())
        assert transcript_text((await until(third, "transcript"))[-1]) == SPOKEN


async def test_connections_past_the_cap_are_refused(make_door: Callable[..., Any]) -> None:
    door = await make_door(**{"wyoming.max_connections": 2})
    async with client(door.port) as one, client(door.port) as two:
        assert (await describe(one)).asr and (await describe(two)).asr
        reader, writer = await raw(door.port)
        error = await refused_and_closed(reader, "unavailable")
        assert "wyoming.max_connections" in error.text
        writer.close()
    deadline = time.monotonic() + 5  # the two have closed: a new one is served
    while True:
        reader, writer = await raw(door.port)
        writer.write(frame({"type": "ping", "data": {"text": "hi"}}))
        reply = await answer(reader)
        writer.close()
        if reply is not None and reply.type == "pong" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert reply is not None and reply.type == "pong", reply


async def test_an_idle_connection_is_closed(make_door: Callable[..., Any]) -> None:
    door = await make_door(**{"wyoming.idle_timeout_s": 0.5})
    async with client(door.port) as conn:
        assert (await describe(conn)).asr
        started = time.monotonic()
        assert await conn.read_event() is None
        assert 0.4 < time.monotonic() - started < 3
    reader, writer = await raw(door.port)  # a header that never ends (slowloris)
    writer.write(b'{"type": "describe", "da')
    assert await answer(reader) is None
    writer.close()


MALFORMED = {
    "not JSON": frame(b"hello"),
    "a JSON list": frame(b'["describe"]'),
    "no type": frame({"data": {}}),
    "a type that is a number": frame({"type": 5}),
    "data that is a list": frame({"type": "ping", "data": [1]}),
    "separate data that is a list": frame({"type": "ping", "data_length": 3}, b"[1]"),
    "separate data that is not JSON": frame({"type": "ping", "data_length": 3}, b"{x}"),
    "a lone surrogate": frame(b'{"type": "ping", "data": {"text": "\\ud800"}}'),
    "a lone surrogate in data": frame({"type": "ping", "data_length": 18}, b'{"text": "\\ud800"}'),
    "raw surrogate bytes": frame(b'{"type": "ping", "data": {"text": "\xed\xa0\x80"}}'),
    "not UTF-8": frame(b'{"type": "\xff"}'),
    "a negative length": frame({"type": "ping", "payload_length": -1}),
    "a length that is a string": frame({"type": "ping", "data_length": "12"}),
    "a length that is true": frame({"type": "ping", "payload_length": True}),
    "deep nesting": frame(b"[" * 60_000),
    "a header line over 64 KiB": frame(b"{" + b" " * 70_000 + b"}"),
}


@pytest.mark.parametrize("sent", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_frame_is_an_error_and_a_close_without_a_traceback(
    make_door: Callable[..., Any], caplog: pytest.LogCaptureFixture, sent: bytes
) -> None:
    door = await make_door()
    caplog.set_level(logging.INFO)
    reader, writer = await raw(door.port)
    writer.write(sent)
    error = await refused_and_closed(reader, error_code(sent))
    assert error.text and "internal" not in error.text
    writer.close()
    warnings = [r for r in caplog.records if r.name.startswith("lobug.wyoming")]
    assert [r.levelname for r in warnings] == ["WARNING"], warnings
    no_tracebacks(caplog)


def error_code(sent: bytes) -> str:
    return "payload_too_large" if len(sent) > 64 * 1024 else "invalid_request"


async def test_bad_fields_are_refused_and_the_connection_serves_on(
    make_door: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    door = await make_door()
    async with client(door.port) as conn:
        for event in (
            Event("audio-start", {"rate": "fast", "width": 2, "channels": 1}),
            Event("audio-start", {"rate": 16000, "width": 2}),
            Event("audio-chunk", {"rate": 16000, "width": True, "channels": 1}, b"\0\0"),
        ):
            await conn.write_event(event)
            (refusal,) = await until(conn, "transcript")
            assert Error.from_event(refusal).code == "invalid_request", refusal
        for data in ({}, {"text": 5}, {"text": ["hello"]}):
            await conn.write_event(Event("transcript", data))
            (refusal,) = await until(conn, "not-handled")
            assert "'text' must be a string" in refusal.data["text"], refusal
        assert (await describe(conn)).asr
        odd = await handle(conn, "hello", context="not an object")  # type: ignore[arg-type]
        assert odd.types[-1] == "handled-stop"
    no_tracebacks(caplog)
