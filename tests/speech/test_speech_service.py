"""SpeechService: 503 with a fix, silence skipped, work off the event loop, one run at a time."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest
from audio_fixtures import FakeTranscriber, raw_pcm, silence_wav, speak_wav, tone_wav

from lobug.config import SpeechConfig
from lobug.errors import ApiError
from lobug.speech import service as service_module
from lobug.speech.service import SpeechService
from lobug.speech.transcriber import SpeechUnavailable, Transcriber

T = TypeVar("T")


async def loaded(fake: FakeTranscriber, **config: object) -> SpeechService:
    service = SpeechService(fake, SpeechConfig(**config))  # type: ignore[arg-type]
    await service.load()
    return service


async def worst_loop_gap(work: Awaitable[T]) -> tuple[T, float]:
    """Run `work` while a 10 ms ticker on the loop records its longest wait."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)  # let the ticker start before the work does
    try:
        result = await work
    finally:
        stop.set()
        await tick
    return result, max(gaps)


def test_fake_transcriber_satisfies_the_protocol() -> None:
    assert isinstance(FakeTranscriber(), Transcriber)


async def test_speech_is_decoded_and_transcribed(tmp_path: Path) -> None:
    fake = FakeTranscriber("what's the weather like")
    service = await loaded(fake)
    path = speak_wav("what is the weather like", tmp_path / "s.wav", rate=22050)
    transcript = await service.transcribe_body(path.read_bytes(), "audio/wav", None, trust="full")
    assert transcript.text == "what's the weather like"
    assert fake.transcribe_calls == 1
    assert fake.last_audio is not None and fake.last_audio.dtype.name == "float32"
    assert transcript.duration_s == pytest.approx(fake.last_audio.size / 16000)
    assert threading.main_thread().name not in fake.threads  # load and transcribe ran in threads


async def test_digital_silence_is_not_sent_to_the_model(tmp_path: Path) -> None:
    fake = FakeTranscriber("Thank you.")  # what Whisper tends to hallucinate on silence
    service = await loaded(fake, language="en")
    body = silence_wav(tmp_path / "quiet.wav", 2.0).read_bytes()
    transcript = await service.transcribe_body(body, "audio/wav", None, trust="full")
    assert (transcript.text, transcript.language, transcript.duration_s) == ("", "en", 2.0)
    assert fake.transcribe_calls == 0


async def test_raw_pcm_with_sample_rate_header_reaches_the_model() -> None:
    fake = FakeTranscriber()
    service = await loaded(fake)
    body = raw_pcm(1.0, rate=8000)
    await service.transcribe_body(body, "application/octet-stream", "8000", trust="full")
    assert fake.last_audio is not None and fake.last_audio.size == 16000


async def test_failed_load_keeps_running_and_answers_503_with_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeTranscriber(fail_load=True)
    service = SpeechService(fake, SpeechConfig())
    with caplog.at_level(logging.WARNING, logger="lobug.speech.service"):
        await service.load()  # must not raise: the daemon starts without speech
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "put it in /nowhere" in warnings[0].getMessage()
    assert not service.ready
    assert service.error is not None and "put it in /nowhere and restart" in service.error

    body = tone_wav(tmp_path / "t.wav", 0.5).read_bytes()
    with pytest.raises(ApiError) as info:
        await service.transcribe_body(body, "audio/wav", None, trust="full")
    assert (info.value.status, info.value.code) == (503, "unavailable")
    assert "put it in /nowhere and restart" in info.value.message
    assert fake.load_calls == 1  # no reload on every request
    assert fake.transcribe_calls == 0


async def test_the_requests_own_problems_come_before_503(tmp_path: Path) -> None:
    """415, 413 and a bad X-Sample-Rate say what the client must fix; a missing model (503)
    only comes up for a request that is fine, and no model load is tried for a bad one."""
    fake = FakeTranscriber(fail_load=True)
    service = SpeechService(fake, SpeechConfig(max_audio_bytes=50_000, max_audio_seconds=1.0))
    wav = tone_wav(tmp_path / "t.wav", 0.5).read_bytes()
    cases = [
        (wav, "text/plain", None, 415, "unsupported_media_type"),
        (wav, "application/json", None, 415, "unsupported_media_type"),
        (b"\x00" * 60_000, "audio/wav", None, 413, "payload_too_large"),  # bytes
        (raw_pcm(1.5), "application/octet-stream", None, 413, "payload_too_large"),  # seconds
        (raw_pcm(0.1), "application/octet-stream", "abc", 400, "invalid_request"),
        (raw_pcm(0.1) + b"\x00", "application/octet-stream", None, 422, "unprocessable"),
        (b"", "audio/wav", None, 400, "invalid_request"),
        (wav, "audio/wav", None, 503, "unavailable"),
    ]
    for body, content_type, rate, status, code in cases:
        with pytest.raises(ApiError) as info:
            await service.transcribe_body(body, content_type, rate, trust="full")
        assert (info.value.status, info.value.code) == (status, code), (content_type, rate)
    assert fake.load_calls == 1  # only the good request asked for the model


async def test_an_unexpected_load_exception_is_also_contained() -> None:
    class Broken(FakeTranscriber):
        def load(self) -> None:
            raise RuntimeError("libctranslate2.so: cannot open shared object file")

    service = SpeechService(Broken(), SpeechConfig())
    await service.load()
    assert not service.ready
    assert service.error is not None and "libctranslate2.so" in service.error


async def test_load_is_retried_later_so_a_copied_model_is_picked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeTranscriber(fail_load=True)
    service = SpeechService(fake, SpeechConfig())
    await service.load()
    fake.fail_load = False  # the operator copied the model into place
    monkeypatch.setattr(service_module, "RELOAD_AFTER_S", 0.0)
    body = tone_wav(tmp_path / "t.wav", 0.5).read_bytes()
    transcript = await service.transcribe_body(body, "audio/wav", None, trust="full")
    assert transcript.text == fake.text
    assert service.ready and service.error is None and fake.load_calls == 2


async def test_lazy_load_happens_once_for_concurrent_first_requests(tmp_path: Path) -> None:
    fake = FakeTranscriber()
    service = SpeechService(fake, SpeechConfig(load_at_start=False))
    assert not service.ready and service.error is not None and "not been loaded" in service.error
    body = tone_wav(tmp_path / "t.wav", 0.3).read_bytes()
    results = await asyncio.gather(
        *(service.transcribe_body(body, "audio/wav", None, trust="full") for _ in range(3))
    )
    assert [r.text for r in results] == [fake.text] * 3
    assert fake.load_calls == 1


async def test_transcription_runs_off_the_event_loop(tmp_path: Path) -> None:
    fake = FakeTranscriber(delay_s=0.5)
    service = await loaded(fake)
    body = tone_wav(tmp_path / "t.wav", 1.0).read_bytes()
    started = time.perf_counter()
    transcript, gap = await worst_loop_gap(
        service.transcribe_body(body, "audio/wav", None, trust="full")
    )
    assert transcript.text == fake.text
    assert time.perf_counter() - started >= 0.5
    assert gap < 0.1, f"the loop stalled for {gap:.3f} s"


async def test_heavy_decoding_runs_off_the_event_loop() -> None:
    # ~25 s of 192 kHz raw PCM (just under 10 MiB): the numpy resampler works for a while.
    fake = FakeTranscriber()
    service = await loaded(fake)
    body = raw_pcm(25.0, rate=192000)
    started = time.perf_counter()
    _, gap = await worst_loop_gap(
        service.transcribe_body(body, "application/octet-stream", "192000", trust="full")
    )
    elapsed = time.perf_counter() - started
    assert fake.last_audio is not None and fake.last_audio.size == 25 * 16000
    assert gap < max(0.1, elapsed / 2), f"the loop stalled for {gap:.3f} s of {elapsed:.3f} s"


async def test_one_transcription_at_a_time(tmp_path: Path) -> None:
    fake = FakeTranscriber(delay_s=0.15)
    service = await loaded(fake)
    body = tone_wav(tmp_path / "t.wav", 0.5).read_bytes()
    started = time.perf_counter()
    await asyncio.gather(
        *(service.transcribe_body(body, "audio/wav", None, trust="full") for _ in range(3))
    )
    assert fake.transcribe_calls == 3 and fake.max_active == 1
    assert time.perf_counter() - started >= 0.45


async def test_a_cancelled_request_keeps_the_slot_until_its_thread_ends(tmp_path: Path) -> None:
    fake = FakeTranscriber(delay_s=0.3)
    service = await loaded(fake)
    body = tone_wav(tmp_path / "t.wav", 0.5).read_bytes()
    first = asyncio.create_task(service.transcribe_body(body, "audio/wav", None, trust="full"))
    while fake.active == 0:  # wait until the model is really running in its thread
        await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await service.transcribe_body(body, "audio/wav", None, trust="full")
    assert fake.transcribe_calls == 2 and fake.max_active == 1


async def test_decode_errors_surface_as_api_errors() -> None:
    service = await loaded(FakeTranscriber())
    cases = [
        (b"not audio at all, just text", "text/plain", None, 415),
        (b"", "audio/wav", None, 400),
        (b"\x00\x01\x02", "application/octet-stream", None, 422),
        (raw_pcm(0.1), "application/octet-stream", "fast", 400),
        (b"RIFF\x00\x00\x00\x00WAVEjunkjunkjunk", "audio/wav", None, 422),
    ]
    for body, content_type, header, status in cases:
        with pytest.raises(ApiError) as info:
            await service.transcribe_body(body, content_type, header, trust="full")
        assert info.value.status == status, (content_type, info.value)


async def test_limits_come_from_the_config(tmp_path: Path) -> None:
    service = await loaded(FakeTranscriber(), max_audio_seconds=1.0, max_audio_bytes=50_000)
    long_body = tone_wav(tmp_path / "t.wav", 1.5, rate=8000).read_bytes()
    with pytest.raises(ApiError) as info:
        await service.transcribe_body(long_body, "audio/wav", None, trust="full")
    assert info.value.status == 413 and "limit is 1 s" in info.value.message
    with pytest.raises(ApiError) as info:
        await service.transcribe_body(bytes(50_002), "application/octet-stream", None, trust="full")
    assert info.value.status == 413 and "MiB" in info.value.message


async def test_transcriber_unavailable_mid_run_is_503(tmp_path: Path) -> None:
    class Vanishing(FakeTranscriber):
        def transcribe(self, audio, hints):  # type: ignore[no-untyped-def]
            raise SpeechUnavailable("the model files were removed; copy them back")

    service = await loaded(Vanishing())
    body = tone_wav(tmp_path / "t.wav", 0.5).read_bytes()
    with pytest.raises(ApiError) as info:
        await service.transcribe_body(body, "audio/wav", None, trust="full")
    assert info.value.status == 503 and "copy them back" in info.value.message
