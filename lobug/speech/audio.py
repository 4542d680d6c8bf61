"""Audio decoding for /chat/audio: any body the contract accepts → float32 mono 16 kHz samples."""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING

import numpy as np

from lobug.errors import (
    ApiError,
    invalid_request,
    payload_too_large,
    unprocessable,
    unsupported_media_type,
)

if TYPE_CHECKING:
    import av

SAMPLE_RATE = 16000  # what Whisper expects
RAW_TYPE = "application/octet-stream"
ACCEPTED = (
    "audio/wav (also audio/x-wav, audio/wave, audio/vnd.wave), any other audio/* format "
    "FFmpeg decodes (flac, ogg, opus, mpeg, webm…), or application/octet-stream with raw "
    "little-endian 16-bit mono PCM and the rate in X-Sample-Rate"
)
SAMPLE_RATE_HEADER = "X-Sample-Rate"
MIN_RAW_RATE, MAX_RAW_RATE = 8000, 192000
# Resamplers add or drop a few samples at the edges; don't call a 60.0 s clip "60.01 s, too long".
_LIMIT_SLACK_SAMPLES = SAMPLE_RATE // 100
# Rates a real file uses. A forged header claiming 2 GHz makes libswresample grind for seconds
# on a few bytes, and 1 Hz would turn each frame into millions of output samples.
MIN_FILE_RATE, MAX_FILE_RATE = 1000, 768000
_MAX_BAD_PACKETS = 20  # give up on a body that is nothing but undecodable packets
# Resampler (numpy polyphase windowed sinc) parameters.
_ZERO_CROSSINGS = 8  # filter half-length in output periods: good stop-band, still cheap
_ROLLOFF = 0.94  # cutoff a little under Nyquist so the transition band doesn't alias
_MAX_PHASES = 512  # coprime rates (e.g. 44099 Hz) would otherwise need 16000 phases
_CHUNK = 16384  # output samples per step: bounds the working set


def media_type(content_type: str | None) -> str:
    """The accepted media type of a Content-Type (none means raw PCM), or 415."""
    media = (content_type or RAW_TYPE).split(";", 1)[0].strip().lower()
    if media != RAW_TYPE and not media.startswith("audio/"):
        raise unsupported_media_type(f"Content-Type {media!r} is not accepted; send {ACCEPTED}")
    return media


def check_request(
    body: bytes, content_type: str | None, *, sample_rate_header: str | None, max_seconds: float
) -> int | None:
    """What the request itself gets wrong, found without a model or a decoder: the media type
    (415), no body (400), and for raw PCM the X-Sample-Rate header (400), an odd byte count
    (422) and its length in seconds (413). The raw PCM rate, or None for a container."""
    media = media_type(content_type)
    if not body:
        raise invalid_request("audio body is empty")
    # Devices and curl often label a WAV file application/octet-stream; raw PCM never starts with
    # a RIFF/WAVE header, so trusting the header here is safe and saves a confusing 'noise' reply.
    if media != RAW_TYPE or _looks_like_wav(body):
        return None
    rate = parse_sample_rate(sample_rate_header)
    if len(body) % 2:
        raise unprocessable(
            f"raw PCM body has an odd number of bytes ({len(body)}); "
            "16-bit samples take 2 bytes each"
        )
    seconds = len(body) / 2 / rate
    if seconds > max_seconds:  # checked before any conversion: the length alone decides
        raise payload_too_large(f"audio is {seconds:.1f} s; the limit is {max_seconds:g} s")
    return rate


def decode_audio(
    body: bytes, content_type: str | None, *, sample_rate_header: str | None, max_seconds: float
) -> np.ndarray:
    """Decode a request body to float32 mono 16 kHz in [-1, 1], or raise the matching ApiError."""
    rate = check_request(
        body, content_type, sample_rate_header=sample_rate_header, max_seconds=max_seconds
    )
    if rate is not None:
        return resample(_to_float(np.frombuffer(body, dtype="<i2")), rate, SAMPLE_RATE)
    return _decode_container(body, max_seconds)


def parse_sample_rate(value: str | None) -> int:
    """X-Sample-Rate: an integer number of Hz (default 16000); anything else is the client's bug."""
    if value is None or not value.strip():
        return SAMPLE_RATE
    try:
        rate = int(value.strip())
    except ValueError:
        rate = 0
    if not MIN_RAW_RATE <= rate <= MAX_RAW_RATE:
        raise invalid_request(
            f"{SAMPLE_RATE_HEADER} must be an integer between {MIN_RAW_RATE} and {MAX_RAW_RATE}, "
            f"got {value!r}",
            header=SAMPLE_RATE_HEADER,
        )
    return rate


def rms_dbfs(audio: np.ndarray) -> float:
    """Loudness in dB relative to full scale; -inf for empty or all-zero (digital) silence."""
    if audio.size == 0:
        return -math.inf
    # float64 accumulation: a minute of float32 squares loses precision in a float32 sum.
    rms = math.sqrt(float(np.mean(np.square(audio, dtype=np.float64))))
    return 20.0 * math.log10(rms) if rms > 0.0 else -math.inf


def _looks_like_wav(body: bytes) -> bool:
    return len(body) >= 12 and body[:4] in (b"RIFF", b"RIFX", b"RF64") and body[8:12] == b"WAVE"


def _decode_container(body: bytes, max_seconds: float) -> np.ndarray:
    """Decode with PyAV packet by packet, stopping as soon as the output passes max_seconds.

    Headers can lie (a WAV claiming a 4 GB data chunk) and codecs compress well (ten minutes of
    FLAC silence is a few KB), so only the samples actually decoded count, and decoding stops
    at the limit: memory stays bounded by max_seconds, not by what the file claims.
    """
    import av  # here, not at the top: without PyAV the daemon must still start (and answer 503)

    sink = _Sink(max_seconds)
    errors: list[str] = []
    try:
        with av.open(io.BytesIO(body), mode="r", metadata_errors="ignore") as container:
            if not container.streams.audio:
                raise unprocessable("the body holds no audio stream")
            stream = container.streams.audio[0]
            if stream.codec_context is None:
                raise unprocessable("the audio codec is unknown or not supported")
            _check_rate(stream.codec_context.sample_rate)
            sink.claimed = _claimed_seconds(container, stream)
            resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
            for packet in container.demux(stream):
                try:
                    frames = packet.decode()  # the final empty packet flushes the decoder
                except (av.FFmpegError, ValueError) as exc:
                    errors.append(_describe(exc))  # a damaged packet: skip it, as players do
                    if len(errors) > _MAX_BAD_PACKETS and not sink.chunks:
                        break
                    continue
                for frame in frames:
                    _check_rate(frame.sample_rate)  # some codecs may switch rate mid-stream
                    sink.add(resampler.resample(frame))
            sink.add(resampler.resample(None))
    except ApiError:
        raise
    except (av.FFmpegError, ValueError, OSError, EOFError) as exc:
        if not sink.chunks:
            raise unprocessable(f"the audio could not be decoded: {_describe(exc)}") from None
        # The stream broke after some good audio (e.g. a cut upload): keep what was decoded.
    if not sink.chunks:
        reason = f" ({errors[0]})" if errors else ""
        raise unprocessable(f"the body contains no decodable audio samples{reason}")
    return _to_float(np.concatenate(sink.chunks))


class _Sink:
    """Collects resampled s16 chunks and raises 413 the moment they pass the limit."""

    def __init__(self, max_seconds: float) -> None:
        self.max_seconds = max_seconds
        self.limit = math.ceil(max_seconds * SAMPLE_RATE) + _LIMIT_SLACK_SAMPLES
        self.claimed: float | None = None
        self.chunks: list[np.ndarray] = []
        self.total = 0

    def add(self, frames: list[av.AudioFrame]) -> None:
        for frame in frames:
            chunk = frame.to_ndarray().reshape(-1)
            self.total += chunk.size
            if self.total > self.limit:
                raise self._too_long()
            self.chunks.append(chunk)

    def _too_long(self) -> ApiError:
        # We stopped early, so the real length is only known if the file states it truthfully.
        if self.claimed is not None and self.claimed > self.max_seconds:
            return payload_too_large(
                f"audio is {self.claimed:.1f} s; the limit is {self.max_seconds:g} s"
            )
        return payload_too_large(f"audio is longer than the {self.max_seconds:g} s limit")


def _to_float(pcm: np.ndarray) -> np.ndarray:
    out = pcm.astype(np.float32)
    out *= 1.0 / 32768.0  # in place: a minute of audio is 3.8 MB per float32 copy
    return out


def _check_rate(rate: int | None) -> None:
    if rate and not MIN_FILE_RATE <= rate <= MAX_FILE_RATE:  # 0: not known until decoded
        raise unprocessable(
            f"the audio claims a sample rate of {rate} Hz; "
            f"expected {MIN_FILE_RATE} to {MAX_FILE_RATE} Hz"
        )


def _claimed_seconds(
    container: av.container.InputContainer, stream: av.AudioStream
) -> float | None:
    """The length the file says it has; only used to word the 413 message."""
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return container.duration / 1_000_000  # AV_TIME_BASE
    return None


def _describe(exc: Exception) -> str:
    # PyAV's str() is "[Errno 1094995529] Invalid data found when processing input: '<none>'"
    # while strerror is the readable part.
    strerror = getattr(exc, "strerror", None)
    return str(strerror) if strerror else str(exc) or type(exc).__name__


def resample(samples: np.ndarray, src_rate: int, dst_rate: int) -> np.ndarray:
    """Band-limited resampling (polyphase windowed sinc) with numpy alone.

    Linear interpolation would fold everything above 8 kHz of a 48 kHz recording back into the
    speech band; a low-pass at the lower Nyquist rate, evaluated only at the output instants,
    avoids that at a cost numpy handles in a fraction of a second per minute of audio.
    """
    samples = np.asarray(samples, dtype=np.float32)
    if src_rate == dst_rate or samples.size == 0:
        return samples
    g = math.gcd(src_rate, dst_rate)
    up, down = dst_rate // g, src_rate // g  # output n sits at input time n * down / up
    scale = min(1.0, dst_rate / src_rate)  # widen the kernel when downsampling
    half = math.ceil(_ZERO_CROSSINGS / scale)  # taps either side of the output instant
    phases = min(up, _MAX_PHASES)
    table = _kernel_table(phases, half, scale * _ROLLOFF)
    n_out = samples.size * up // down
    padded = np.concatenate([np.zeros(half, np.float32), samples, np.zeros(half + 1, np.float32)])
    taps = np.arange(-half + 1, half + 1)
    out = np.empty(n_out, dtype=np.float32)
    for start in range(0, n_out, _CHUNK):  # chunked so a 192 kHz minute stays a few MB at a time
        n = np.arange(start, min(start + _CHUNK, n_out), dtype=np.int64)
        base, rem = np.divmod(n * down, up)
        phase = (rem * phases) // up
        window = padded[(base + half)[:, None] + taps[None, :]]
        out[start : start + n.size] = np.einsum("ij,ij->i", window, table[phase])
    return np.clip(out, -1.0, 1.0)


def _kernel_table(phases: int, half: int, cutoff: float) -> np.ndarray:
    """Row p: Hann-windowed sinc weights for taps -half+1..half at fractional offset p/phases."""
    frac = np.arange(phases)[:, None] / phases
    dist = np.arange(-half + 1, half + 1)[None, :] - frac  # tap position minus output instant
    window = 0.5 + 0.5 * np.cos(np.pi * np.clip(dist / half, -1.0, 1.0))
    kernel = cutoff * np.sinc(cutoff * dist) * window
    kernel /= kernel.sum(axis=1, keepdims=True)  # unity gain at DC for every phase
    return kernel.astype(np.float32)
