"""Wyoming `asr` audio: audio-start, audio-chunk…, audio-stop gathered within speech's limits and
the daemon-wide audio budget, and turned into what /chat/audio takes as raw PCM (16-bit mono at
the stream's own rate)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from wyoming.audio import AudioChunk, AudioStart
from wyoming.event import Event

from lobug.config import SpeechConfig
from lobug.errors import ApiError, invalid_request, payload_too_large, unavailable
from lobug.speech.audio import MAX_RAW_RATE, MIN_RAW_RATE

WIDTHS = (1, 2, 3, 4)  # bytes per sample: 8-bit unsigned, 16/24/32-bit signed little-endian
MAX_CHANNELS = 8
FORMAT = ("rate", "width", "channels")


def audio_start(event: Event) -> AudioStart:
    """An audio-start (or the format an audio-chunk names), its fields checked: whole numbers."""
    values: list[int] = []
    for key in FORMAT:
        value = event.data.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise invalid_request(f"an {event.type} event's '{key}' must be a whole number")
        values.append(value)
    rate, width, channels = values
    return AudioStart(rate=rate, width=width, channels=channels)


def audio_chunk(event: Event) -> AudioChunk:
    start = audio_start(event)
    return AudioChunk(start.rate, start.width, start.channels, audio=event.payload or b"")


class AudioBudget:
    """Bytes of asr audio held at once by every connection together
    (wyoming.max_audio_bytes_total): a chunk's payload is taken before it is read and given
    back when its stream ends or is refused."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0

    def take(self, size: int) -> None:
        if self.used + size > self.total:
            raise unavailable(
                "Lo-Bug is holding as much Wyoming audio as it may"
                " (wyoming.max_audio_bytes_total); try again shortly"
            )
        self.used += size

    def give(self, size: int) -> None:
        self.used -= size


@dataclass
class AudioStream:
    """One utterance on its way in. `add` raises 413 once it passes a limit; the handler then
    drops the rest of the stream (`refused`) until its audio-stop."""

    rate: int
    width: int
    channels: int
    max_bytes: int
    max_seconds: float
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    refused: bool = False

    @classmethod
    def begin(cls, start: AudioStart, config: SpeechConfig) -> AudioStream:
        if not MIN_RAW_RATE <= start.rate <= MAX_RAW_RATE:
            raise invalid_request(
                f"audio rate must be {MIN_RAW_RATE} to {MAX_RAW_RATE} Hz, got {start.rate}"
            )
        if start.width not in WIDTHS:
            raise invalid_request(f"audio width must be 1 to 4 bytes, got {start.width}")
        if not 1 <= start.channels <= MAX_CHANNELS:
            raise invalid_request(
                f"audio channels must be 1 to {MAX_CHANNELS}, got {start.channels}"
            )
        return cls(
            start.rate,
            start.width,
            start.channels,
            max_bytes=config.max_audio_bytes,
            max_seconds=config.max_audio_seconds,
        )

    @property
    def seconds(self) -> float:
        return self.size / (self.rate * self.width * self.channels)

    @property
    def held(self) -> int:
        """Bytes of audio this stream keeps (a refused one keeps none)."""
        return 0 if self.refused else self.size

    def _refuse(self, error: ApiError) -> ApiError:
        self.refused = True
        self.chunks.clear()
        return error

    def add(self, chunk: AudioChunk) -> None:
        if (chunk.rate, chunk.width, chunk.channels) != (self.rate, self.width, self.channels):
            raise self._refuse(
                invalid_request(
                    f"an audio chunk is {chunk.rate} Hz/{chunk.width} B/{chunk.channels} ch; its "
                    f"audio-start said {self.rate} Hz/{self.width} B/{self.channels} ch"
                )
            )
        self.size += len(chunk.audio)
        if self.size > self.max_bytes:
            raise self._refuse(
                payload_too_large(
                    f"audio is over {self.max_bytes / 2**20:g} MiB (speech.max_audio_bytes)"
                )
            )
        if self.seconds > self.max_seconds:
            raise self._refuse(
                payload_too_large(
                    f"audio is over {self.max_seconds:g} s (speech.max_audio_seconds)"
                )
            )
        self.chunks.append(chunk.audio)

    def pcm16_mono(self) -> bytes:
        """Little-endian 16-bit mono (blocking: run it in a thread). Channels are averaged;
        wider samples keep their top 16 bits; a trailing partial frame is dropped."""
        frame = self.width * self.channels
        raw = b"".join(self.chunks)
        raw = raw[: len(raw) - len(raw) % frame]
        if (self.width, self.channels) == (2, 1):  # Home Assistant's usual: already the answer
            return raw
        if self.width == 1:  # 8-bit WAV-style PCM is unsigned, centred on 128
            samples = (np.frombuffer(raw, np.uint8).astype(np.int32) - 128) * 256
        else:  # little-endian: the last two bytes of a sample are its top 16 bits
            top = np.frombuffer(raw, np.uint8).reshape(-1, self.width)[:, -2:]
            samples = np.ascontiguousarray(top).view("<i2").reshape(-1).astype(np.int32)
        if self.channels > 1:
            samples = np.round(samples.reshape(-1, self.channels).mean(axis=1)).astype(np.int32)
        return np.clip(samples, -32768, 32767).astype("<i2").tobytes()
