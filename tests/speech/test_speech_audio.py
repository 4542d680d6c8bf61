"""decode_audio on real files: espeak speech, odd rates, raw PCM, lies, bombs and garbage."""

from __future__ import annotations

import math
import os
import struct
import subprocess
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from audio_fixtures import (
    raw_pcm,
    require_tools,
    silence_wav,
    sox_duration,
    speak_wav,
    tone,
    tone_wav,
    write_wav,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lobug.errors import ApiError
from lobug.speech.audio import decode_audio, resample, rms_dbfs

SR = 16000


def decode(
    body: bytes,
    content_type: str | None = "audio/wav",
    *,
    header: str | None = None,
    max_seconds: float = 60.0,
) -> np.ndarray:
    return decode_audio(body, content_type, sample_rate_header=header, max_seconds=max_seconds)


def fails(
    status: int, code: str, body: bytes, content_type: str | None = "audio/wav", **kwargs: object
) -> ApiError:
    with pytest.raises(ApiError) as info:
        decode(body, content_type, **kwargs)  # type: ignore[arg-type]
    assert (info.value.status, info.value.code) == (status, code), info.value
    return info.value


def wav_bytes(
    data: bytes,
    *,
    rate: int = SR,
    channels: int = 1,
    bits: int = 16,
    claim: int | None = None,
    fmt_tag: int = 1,
) -> bytes:
    """A hand-made RIFF/WAVE whose data chunk may claim more bytes than it carries."""
    size = len(data) if claim is None else claim
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", fmt_tag, channels, rate, rate * block, block, bits)
    return (
        b"RIFF"
        + struct.pack("<I", min(36 + size, 0xFFFFFFFF))
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", size)
        + data
    )


def dominant_hz(audio: np.ndarray) -> float:
    spectrum = np.abs(np.fft.rfft(audio * np.hanning(audio.size)))
    return float(np.argmax(spectrum) * SR / audio.size)


def assert_valid(audio: np.ndarray) -> None:
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert audio.size == 0 or (float(audio.min()) >= -1.0 and float(audio.max()) <= 1.0)


# --- real speech and sample-rate / channel conversion -------------------------------------


@pytest.mark.parametrize(
    ("rate", "channels", "content_type"),
    [
        (16000, 1, "audio/wav"),
        (8000, 1, "audio/x-wav"),
        (44100, 1, "audio/wave"),
        (44100, 2, "audio/vnd.wave"),
        (48000, 2, "audio/wav; codecs=1"),
    ],
)
def test_espeak_wav_decodes_to_16k_mono_of_the_same_length(
    tmp_path: Path, rate: int, channels: int, content_type: str
) -> None:
    path = speak_wav("what is the weather like today", tmp_path / "s.wav", rate, channels)
    expected = sox_duration(path)
    audio = decode(path.read_bytes(), content_type)
    assert_valid(audio)
    assert audio.size / SR == pytest.approx(expected, abs=0.02)
    assert -35 < rms_dbfs(audio) < -3  # speech, not silence and not clipped noise


def test_resampled_speech_matches_the_native_16k_decode(tmp_path: Path) -> None:
    native = decode(speak_wav("hello lo bug", tmp_path / "a.wav", 16000).read_bytes())
    from_44k = decode(speak_wav("hello lo bug", tmp_path / "b.wav", 44100).read_bytes())
    n = min(native.size, from_44k.size)
    # Same words through two resampling paths: strongly correlated, same level.
    corr = np.corrcoef(native[:n], from_44k[:n])[0, 1]
    assert corr > 0.9
    assert rms_dbfs(from_44k) == pytest.approx(rms_dbfs(native), abs=1.0)


def test_tone_keeps_its_pitch_through_the_container_resampler(tmp_path: Path) -> None:
    audio = decode(tone_wav(tmp_path / "t.wav", 1.0, rate=44100, freq=1000).read_bytes())
    assert dominant_hz(audio) == pytest.approx(1000, abs=5)


def test_stereo_is_downmixed(tmp_path: Path) -> None:
    left, right = tone(0.5, 22050, 300), tone(0.5, 22050, 300)
    path = write_wav(tmp_path / "st.wav", np.stack([left, right], axis=1), 22050, channels=2)
    audio = decode(path.read_bytes())
    assert audio.size / SR == pytest.approx(0.5, abs=0.01)
    assert dominant_hz(audio) == pytest.approx(300, abs=5)


@pytest.mark.parametrize(
    ("fmt", "content_type"), [("flac", "audio/flac"), ("ogg", "audio/ogg"), ("mp3", "audio/mpeg")]
)
def test_other_codecs_pyav_knows(tmp_path: Path, fmt: str, content_type: str) -> None:
    require_tools("ffmpeg")
    src = tone_wav(tmp_path / "t.wav", 2.0, rate=22050, freq=500)
    out = tmp_path / f"t.{fmt}"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", str(src), str(out)], check=True)
    audio = decode(out.read_bytes(), content_type)
    assert audio.size / SR == pytest.approx(2.0, abs=0.1)  # lossy codecs pad a few ms
    assert dominant_hz(audio) == pytest.approx(500, abs=5)


def test_wav_sent_as_octet_stream_is_recognised(tmp_path: Path) -> None:
    body = tone_wav(tmp_path / "t.wav", 1.0, rate=8000).read_bytes()
    audio = decode(body, "application/octet-stream")
    assert audio.size == SR  # the header was parsed, not played as a click


# --- raw PCM ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rate", [8000, 16000, 22050, 44100, 48000])
def test_raw_pcm_uses_x_sample_rate(rate: int) -> None:
    audio = decode(raw_pcm(1.5, rate, freq=700), "application/octet-stream", header=str(rate))
    assert_valid(audio)
    assert audio.size == pytest.approx(1.5 * SR, abs=2)
    assert dominant_hz(audio) == pytest.approx(700, abs=3)
    assert np.sqrt(np.mean(audio[200:-200] ** 2)) == pytest.approx(0.5 / math.sqrt(2), rel=0.02)


def test_raw_pcm_defaults_to_16k_and_is_bit_exact() -> None:
    body = raw_pcm(0.25)
    audio = decode(body, "application/octet-stream")
    expected = np.frombuffer(body, "<i2").astype(np.float32) / 32768
    assert np.array_equal(audio, expected)
    assert np.array_equal(decode(body, None), expected)  # no Content-Type means octet-stream


def test_raw_pcm_downsampling_filters_instead_of_aliasing() -> None:
    # 12 kHz is above the 8 kHz Nyquist limit of the output: it must vanish, not fold to 4 kHz.
    body = raw_pcm(1.0, 48000, freq=12000)
    audio = decode(body, "application/octet-stream", header="48000")
    assert np.sqrt(np.mean(audio**2)) < 0.01


@pytest.mark.parametrize("value", ["abc", "16k", "7999", "192001", "0", "-16000", "16000.5"])
def test_bad_sample_rate_header_is_400_naming_the_header(value: str) -> None:
    error = fails(400, "invalid_request", raw_pcm(0.1), "application/octet-stream", header=value)
    assert "X-Sample-Rate" in error.message


def test_odd_raw_pcm_length_is_422() -> None:
    error = fails(422, "unprocessable", raw_pcm(0.1) + b"\x00", "application/octet-stream")
    assert "odd" in error.message


def test_raw_pcm_over_the_limit_is_413_before_decoding() -> None:
    error = fails(
        413, "payload_too_large", bytes(2 * 8000 * 76), "application/octet-stream", header="8000"
    )
    assert error.message == "audio is 76.0 s; the limit is 60 s"


# --- what is refused ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/json", "video/mp4", "image/png"]
)
def test_unsupported_content_type_is_415_listing_the_accepted(content_type: str) -> None:
    error = fails(415, "unsupported_media_type", raw_pcm(0.1), content_type)
    assert "audio/wav" in error.message and "application/octet-stream" in error.message


@pytest.mark.parametrize("content_type", ["audio/wav", "application/octet-stream"])
def test_empty_body_is_400(content_type: str) -> None:
    error = fails(400, "invalid_request", b"", content_type)
    assert error.message == "audio body is empty"


def test_random_bytes_are_422() -> None:
    error = fails(422, "unprocessable", os.urandom(4096), "audio/wav")
    assert "could not be decoded" in error.message or "no decodable" in error.message


def test_wav_cut_inside_its_header_is_422(tmp_path: Path) -> None:
    body = tone_wav(tmp_path / "t.wav", 1.0).read_bytes()
    for cut in (4, 12, 30):
        fails(422, "unprocessable", body[:cut])


def test_wav_with_an_unknown_codec_tag_is_422() -> None:
    fails(422, "unprocessable", wav_bytes(raw_pcm(0.5), fmt_tag=0x7777))


def test_wav_with_zero_channels_is_422() -> None:
    fails(422, "unprocessable", wav_bytes(raw_pcm(0.5), channels=0))


@pytest.mark.parametrize("rate", [1, 500, 1_979_727_488])
def test_wav_with_a_forged_sample_rate_is_422_at_once(rate: int) -> None:
    started = time.perf_counter()
    error = fails(422, "unprocessable", wav_bytes(raw_pcm(0.2), rate=rate))
    assert f"{rate} Hz" in error.message
    assert time.perf_counter() - started < 0.5  # libswresample would grind for seconds


def test_wav_cut_inside_its_data_keeps_the_audio_that_arrived(tmp_path: Path) -> None:
    # An upload cut mid-stream, or a streaming writer's placeholder size: transcribe what's there.
    body = tone_wav(tmp_path / "t.wav", 2.0).read_bytes()
    audio = decode(body[: 44 + SR * 2])  # one second of the two
    assert audio.size == SR


def test_header_claiming_4_gb_only_counts_the_real_samples() -> None:
    body = wav_bytes(raw_pcm(0.5), claim=0xFFFFFFF0)
    tracemalloc.start()
    try:
        audio = decode(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert audio.size == SR // 2
    assert peak < 5_000_000


def test_header_claiming_4_gb_with_no_samples_is_422() -> None:
    error = fails(422, "unprocessable", wav_bytes(b"", claim=0xFFFFFFF0))
    assert "no decodable audio" in error.message


def test_long_wav_is_413_with_its_length(tmp_path: Path) -> None:
    body = silence_wav(tmp_path / "long.wav", 75.2, rate=8000).read_bytes()
    error = fails(413, "payload_too_large", body)
    assert error.message == "audio is 75.2 s; the limit is 60 s"


def test_exactly_the_limit_is_accepted_after_resampling(tmp_path: Path) -> None:
    body = silence_wav(tmp_path / "ok.wav", 5.0, rate=44100).read_bytes()
    assert decode(body, max_seconds=5).size == pytest.approx(5 * SR, abs=2)


@pytest.mark.parametrize(("fmt", "content_type"), [("flac", "audio/flac"), ("ogg", "audio/ogg")])
def test_compressed_ten_minutes_is_413_without_decoding_it_all(
    tmp_path: Path, fmt: str, content_type: str
) -> None:
    require_tools("sox")
    path = tmp_path / f"bomb.{fmt}"
    subprocess.run(
        ["sox", "-D", "-n", "-r", "16000", "-c", "1", str(path), "trim", "0", "600"],
        check=True,
        capture_output=True,
    )
    body = path.read_bytes()
    assert len(body) < 2_000_000  # tiny on the wire…
    tracemalloc.start()
    started = time.perf_counter()
    try:
        error = fails(413, "payload_too_large", body, content_type, max_seconds=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # …and decoding stopped at the 10 s limit: the full 600 s would need 19 MB of s16 alone.
    assert peak < 4_000_000
    assert time.perf_counter() - started < 5
    assert error.message == "audio is 600.0 s; the limit is 10 s"


# --- loudness -------------------------------------------------------------------------------


def test_rms_dbfs() -> None:
    assert rms_dbfs(np.zeros(1000, np.float32)) == -math.inf
    assert rms_dbfs(np.zeros(0, np.float32)) == -math.inf
    assert rms_dbfs(np.ones(100, np.float32)) == pytest.approx(0.0)
    assert rms_dbfs(tone(1.0, amplitude=1.0)) == pytest.approx(-3.01, abs=0.01)
    one_lsb = np.full(16000, 1 / 32768, np.float32)
    assert rms_dbfs(one_lsb) == pytest.approx(-90.3, abs=0.1)


def test_resample_is_identity_at_16k_and_keeps_length_ratio() -> None:
    x = tone(0.3)
    assert np.array_equal(resample(x, SR, SR), x)
    assert resample(tone(1.0, 44100), 44100, SR).size == SR
    odd = resample(tone(1.0, 44099, freq=1000), 44099, SR)  # coprime rates: quantised phases
    assert odd.size == SR
    assert dominant_hz(odd) == pytest.approx(1000, abs=2)


# --- robustness: whatever arrives, the answer is samples or an ApiError ---------------------


def _mutations() -> st.SearchStrategy[bytes]:
    base = wav_bytes(raw_pcm(0.2))
    edits = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 255)), min_size=1, max_size=6)
    return edits.map(lambda es: bytes(_apply(base, es)))


def _apply(base: bytes, edits: list[tuple[int, int]]) -> bytearray:
    out = bytearray(base)
    for index, value in edits:
        out[index] = value
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(st.binary(min_size=1, max_size=2048), _mutations()))
def test_any_body_gives_samples_or_an_api_error(body: bytes) -> None:
    for content_type in ("audio/wav", "application/octet-stream"):
        started = time.perf_counter()
        try:
            audio = decode(body, content_type, max_seconds=5)
        except ApiError as error:
            assert error.status in (400, 413, 422)
        else:
            assert_valid(audio)
            assert audio.size <= 5 * SR + SR // 100
        # A few KB must never cost seconds of CPU (a forged rate once cost 20 s).
        assert time.perf_counter() - started < 1.0
