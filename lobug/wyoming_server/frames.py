"""Reading Wyoming events with Lo-Bug's own bounds, before anything is allocated.

An event is a JSON header line, then `data_length` bytes of JSON merged into its `data`, then
`payload_length` bytes of payload (audio). The wyoming library reads whatever lengths the peer
declares (one event of 400 MB was 400 MB of RSS; issue 25): here the header line is bounded by
the stream's limit, both lengths are checked before a byte of them is read, and the payload is
`reserve`d (the shared audio budget) first. Anything malformed is an ApiError for the caller to
answer with one `error` event before it closes the connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wyoming.event import Event

from lobug.config import Config
from lobug.errors import invalid_request, payload_too_large

LINE_BYTES = 64 * 1024  # a header line; the library writes `data` after it, not in it
DATA_BYTES_PER_CHAR = 6  # a transcript's text as JSON: "\u00e9" is six bytes for one character


@dataclass(frozen=True)
class FrameLimits:
    data_bytes: int  # a transcript of chat.max_text_chars, its context and the rest
    payload_bytes: int  # one audio chunk: at most what a whole stream may be

    @classmethod
    def of(cls, config: Config) -> FrameLimits:
        return cls(
            data_bytes=LINE_BYTES + DATA_BYTES_PER_CHAR * config.chat.max_text_chars,
            payload_bytes=config.speech.max_audio_bytes,
        )


async def read_event(
    reader: asyncio.StreamReader, limits: FrameLimits, reserve: Callable[[int], None]
) -> Event | None:
    """The next event; None when the peer has gone (also mid-event). `reader` must have been
    made with `limit=LINE_BYTES`; `reserve(n)` raises an ApiError when n bytes of payload may
    not be held now."""
    try:
        line = await reader.readline()
    except ValueError:  # asyncio's LimitOverrunError, after dropping what it buffered
        raise payload_too_large(f"an event header is over {LINE_BYTES // 1024} KiB") from None
    if not line.endswith(b"\n"):
        return None
    header = _json_object(line, "event header")
    kind = header.get("type")
    if not isinstance(kind, str) or not kind:
        raise invalid_request("an event header needs a 'type' string")
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise invalid_request("an event's 'data' must be an object")
    data_length = _length(header, "data_length", limits.data_bytes)
    payload_length = _length(header, "payload_length", limits.payload_bytes)
    try:
        if data_length:
            data.update(_json_object(await reader.readexactly(data_length), "event data"))
        payload = None
        if payload_length:
            reserve(payload_length)
            payload = await reader.readexactly(payload_length)
    except asyncio.IncompleteReadError:
        return None
    return Event(type=kind, data=data, payload=payload)


def _length(header: dict[str, Any], key: str, limit: int) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise invalid_request(f"'{key}' must be a whole number of bytes")
    if value > limit:
        raise payload_too_large(f"'{key}' is {value} bytes; the limit is {limit}")
    return value


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    """A JSON object of UTF-8 text whose strings are all valid text: no lone surrogates
    ("\\ud800"), which could not be written back or stored."""
    try:
        value = json.loads(raw.decode("utf-8"))
        if isinstance(value, dict):
            json.dumps(value, ensure_ascii=False).encode("utf-8")
            return value
    except (ValueError, RecursionError):  # UnicodeError and JSONDecodeError are ValueErrors
        raise invalid_request(f"the {what} is not a JSON object of UTF-8 text") from None
    raise invalid_request(f"the {what} is not a JSON object")
