"""Talking to Lo-Bug's Wyoming server with the real `wyoming` client, as Home Assistant does."""

from __future__ import annotations

import asyncio
import json
import wave
from pathlib import Path
from typing import Any

from wyoming.asr import Transcribe, Transcript
from wyoming.audio import wav_to_chunks
from wyoming.client import AsyncTcpClient
from wyoming.error import Error
from wyoming.event import Event, async_read_event
from wyoming.handle import Handled, HandledChunk, HandledStart, HandledStop, NotHandled
from wyoming.info import Describe, Info

READ_TIMEOUT_S = 15.0
AUDIO = {"rate": 16000, "width": 2, "channels": 1}


def client(port: int, address: str | None = None) -> AsyncTcpClient:
    """The real client; `address`: connect from that local address (a peer of its own)."""
    if address is None:
        return AsyncTcpClient("127.0.0.1", port, connect_timeout=5, read_timeout=READ_TIMEOUT_S)
    return _FromAddress(address, port)


class _FromAddress(AsyncTcpClient):
    def __init__(self, address: str, port: int) -> None:
        super().__init__("127.0.0.1", port, connect_timeout=5, read_timeout=READ_TIMEOUT_S)
        self.address = address

    async def connect(self) -> None:
        connect = asyncio.open_connection(self.host, self.port, local_addr=(self.address, 0))
        self._reader, self._writer = await asyncio.wait_for(connect, 5)


async def until(conn: AsyncTcpClient, *types: str) -> list[Event]:
    """Events up to and including the first of `types` (or an error)."""
    events = []
    while True:
        event = await conn.read_event()
        assert event is not None, f"connection closed after {[e.type for e in events]}"
        events.append(event)
        if event.type in types or Error.is_type(event.type):
            return events


async def describe(conn: AsyncTcpClient) -> Info:
    await conn.write_event(Describe().event())
    (event,) = await until(conn, "info")
    return Info.from_event(event)


async def send_wav(conn: AsyncTcpClient, path: Path, samples_per_chunk: int = 1024) -> None:
    """transcribe, audio-start, audio-chunk…, audio-stop: what Home Assistant's STT sends."""
    await conn.write_event(Transcribe(language="en").event())
    with wave.open(str(path), "rb") as wav:
        for event in wav_to_chunks(wav, samples_per_chunk, start_event=True, stop_event=True):
            await conn.write_event(event.event())


async def transcribe(conn: AsyncTcpClient, path: Path) -> Event:
    """The answer to a WAV: a transcript or an error event."""
    await send_wav(conn, path)
    return (await until(conn, "transcript"))[-1]


def transcript_text(event: Event) -> str:
    assert Transcript.is_type(event.type), event
    return Transcript.from_event(event).text


class Reply:
    """What a handle request got back: the stream's pieces, the whole `handled` and its context."""

    def __init__(self, events: list[Event]) -> None:
        self.types = [e.type for e in events]
        self.chunks = [HandledChunk.from_event(e).text for e in events if e.type == "handled-chunk"]
        handled = [Handled.from_event(e) for e in events if Handled.is_type(e.type)]
        refused = [NotHandled.from_event(e) for e in events if NotHandled.is_type(e.type)]
        self.handled = handled[0] if handled else None
        self.not_handled = refused[0] if refused else None
        starts = [HandledStart.from_event(e) for e in events if HandledStart.is_type(e.type)]
        self.start_context = starts[0].context if starts else None

    @property
    def text(self) -> str:
        assert self.handled is not None, self.types
        return self.handled.text or ""

    @property
    def context(self) -> dict[str, Any]:
        assert self.handled is not None, self.types
        return self.handled.context or {}


async def handle(conn: AsyncTcpClient, text: str, context: dict[str, Any] | None = None) -> Reply:
    """Text for the `handle` service, as Home Assistant's Wyoming conversation agent sends it."""
    await conn.write_event(Transcript(text=text, context=context, language="en").event())
    events = await until(conn, HandledStop().event().type, "not-handled")
    return Reply(events)


async def port_closed(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return True
    writer.close()
    return False


def frame(header: dict[str, Any] | bytes, data: bytes = b"", payload: bytes = b"") -> bytes:
    """An event as bytes, lengths and all as given: what a client that is not the library sends."""
    line = header if isinstance(header, bytes) else json.dumps(header).encode()
    return line + b"\n" + data + payload


async def raw(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def answer(reader: asyncio.StreamReader, timeout: float = 5.0) -> Event | None:
    """The server's next event (None: it closed the connection)."""
    try:
        return await asyncio.wait_for(async_read_event(reader), timeout)
    except ConnectionError:
        return None


async def refused_and_closed(reader: asyncio.StreamReader, code: str) -> Error:
    """One `error` event with `code`, then the connection closed."""
    event = await answer(reader)
    assert event is not None and Error.is_type(event.type), event
    error = Error.from_event(event)
    assert error.code == code, error
    assert await answer(reader) is None
    return error
