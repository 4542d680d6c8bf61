"""Bad inputs over real HTTP to the real daemon: each gets a clear 4xx contract error body, nothing
is stored for it, memory stays bounded, and the daemon keeps serving afterwards."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
from audio_fixtures import raw_pcm, require_tools, tone_wav
from contract import assert_error, assert_valid
from daemon_proc import Daemon
from faultkit import DaemonPool, db_rows, db_value, raw_http, request_head, vm_rss_kib, wav_header

MIB = 1024 * 1024


async def post(
    daemon: Daemon,
    path: str,
    body: bytes,
    content_type: str | None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    all_headers = dict(headers or {})
    if content_type is not None:
        all_headers["Content-Type"] = content_type
    async with aiohttp.ClientSession() as session:
        async with session.post(daemon.url + path, data=body, headers=all_headers) as resp:
            return resp.status, await resp.json(content_type=None)


async def still_serving(daemon: Daemon, data_dir: Path, text: str) -> None:
    status, body = await daemon.request("POST", "/chat/text", json={"text": text})
    assert status == 200, body
    assert db_value(data_dir, "SELECT COUNT(*) FROM turns WHERE text = ?", text) == 1
    log = daemon.log()
    assert "unhandled error" not in log and "Traceback" not in log, log[-3000:]


async def test_bad_json_bodies(daemons: DaemonPool, tmp_path: Path) -> None:
    daemon = await daemons.start()
    deep_array = b"[" * 20000 + b"]" * 20000  # 40 KB: under the size limit, over any sane depth
    deep_object = b'{"a":' * 9000 + b"1" + b"}" * 9000
    cases = [
        ("/chat/text", b"", "application/json", 400, "invalid_json"),
        ("/chat/text", b"   \n", "application/json", 400, "invalid_json"),
        ("/chat/text", b'{"text": "caf\xe9"}', "application/json", 400, "invalid_json"),
        ("/chat/text", b'\xff\xfe{\x00"\x00', "application/json", 400, "invalid_json"),
        ("/chat/text", b'{"text": "cut off', "application/json", 400, "invalid_json"),
        ("/chat/text", deep_array, "application/json", 400, "invalid_json"),
        ("/chat/text", deep_object, "application/json", 400, "invalid_json"),
        ("/chat/text", b'["a list"]', "application/json", 400, "invalid_request"),
        ("/chat/text", b'{"text": 42}', "application/json", 400, "invalid_request"),
        ("/chat/text", b'{"text": "   "}', "application/json", 400, "invalid_request"),
        ("/chat/text", b'{"text": "hi"}', "text/plain", 415, "unsupported_media_type"),
        ("/chat/text", b'{"text": "hi"}', None, 415, "unsupported_media_type"),
        (
            "/chat/text",
            json.dumps({"text": "x" * 5000}).encode(),
            "application/json",
            413,
            "payload_too_large",
        ),
        ("/context/sensors", b"", "application/json", 400, "invalid_json"),
        ("/context/sensors", b'{"battery": "\xc3\x28"}', "application/json", 400, "invalid_json"),
        ("/context/sensors", b"[" * 2000 + b"]" * 2000, "application/json", 400, "invalid_json"),
        ("/context/sensors", b'{"battery": 400}', "application/json", 400, "invalid_request"),
    ]
    for path, body, content_type, status, code in cases:
        got, payload = await post(daemon, path, body, content_type)
        where = f"{path} {body[:40]!r} ({content_type})"
        assert got == status, (where, payload)
        assert_error(payload, code)
        assert payload["error"]["message"], where
    data_dir = tmp_path / "data"
    assert db_value(data_dir, "SELECT COUNT(*) FROM turns") == 0
    assert db_value(data_dir, "SELECT COUNT(*) FROM sensor_state") == 0
    await still_serving(daemon, data_dir, "still here after bad JSON")
    assert await daemon.terminate() == 0


async def test_bad_and_odd_audio(daemons: DaemonPool, tmp_path: Path) -> None:
    daemon = await daemons.start(env={"LOBUG_SPEECH_MAX_AUDIO_SECONDS": "5"})
    data_dir = tmp_path / "data"
    assert daemon.proc is not None
    rss_before = vm_rss_kib(daemon.proc.pid)
    pcm = raw_pcm(1.0)
    wav = wav_header(data_bytes=len(pcm)) + pcm
    refused = [
        ("empty body", b"", "audio/wav", {}, 400, "invalid_request"),
        ("empty raw body", b"", "application/octet-stream", {}, 400, "invalid_request"),
        (
            "corrupt WAV",
            b"RIFF\x00\x00\x00\x00WAVE" + bytes(range(256)) * 8,
            "audio/wav",
            {},
            422,
            "unprocessable",
        ),
        ("not audio at all", b"hello, this is text" * 50, "audio/wav", {}, 422, "unprocessable"),
        ("WAV cut inside the header", wav[:20], "audio/wav", {}, 422, "unprocessable"),
        ("WAV header without samples", wav[:44], "audio/wav", {}, 422, "unprocessable"),
        (
            "WAV at an absurd rate",
            wav_header(rate=2_000_000_000, data_bytes=len(pcm)) + pcm,
            "audio/wav",
            {},
            422,
            "unprocessable",
        ),
        (
            "WAV longer than the limit",
            wav_header(data_bytes=len(pcm) * 6) + pcm * 6,
            "audio/wav",
            {},
            413,
            "payload_too_large",
        ),
        ("raw PCM, odd length", pcm[:-1], "application/octet-stream", {}, 422, "unprocessable"),
        (
            "raw PCM, rate not a number",
            pcm,
            "application/octet-stream",
            {"X-Sample-Rate": "fast"},
            400,
            "invalid_request",
        ),
        (
            "raw PCM, rate 0",
            pcm,
            "application/octet-stream",
            {"X-Sample-Rate": "0"},
            400,
            "invalid_request",
        ),
        (
            "raw PCM, negative rate",
            pcm,
            "application/octet-stream",
            {"X-Sample-Rate": "-16000"},
            400,
            "invalid_request",
        ),
        (
            "raw PCM, absurd rate",
            pcm,
            "application/octet-stream",
            {"X-Sample-Rate": "99999999"},
            400,
            "invalid_request",
        ),
        (
            "raw PCM, fractional rate",
            pcm,
            "application/octet-stream",
            {"X-Sample-Rate": "16000.5"},
            400,
            "invalid_request",
        ),
        (
            "raw PCM, over the duration limit",
            raw_pcm(6.0),
            "application/octet-stream",
            {},
            413,
            "payload_too_large",
        ),
        ("text/plain", pcm, "text/plain", {}, 415, "unsupported_media_type"),
    ]
    for name, body, content_type, headers, status, code in refused:
        got, payload = await post(daemon, "/chat/audio", body, content_type, headers)
        assert got == status, (name, payload)
        assert_error(payload, code)
    assert db_value(data_dir, "SELECT COUNT(*) FROM turns") == 0, "a refused body left a turn"

    # Accepted, though odd: each is resampled or cut to what decodes, and answered.
    accepted = [
        ("8 kHz WAV", tone_wav(tmp_path / "8k.wav", 1.0, rate=8000).read_bytes(), "audio/wav", {}),
        (
            "44.1 kHz WAV",
            tone_wav(tmp_path / "44k.wav", 1.0, rate=44100).read_bytes(),
            "audio/wav",
            {},
        ),
        (
            "raw PCM at 8 kHz",
            raw_pcm(1.0, 8000),
            "application/octet-stream",
            {"X-Sample-Rate": "8000"},
        ),
        ("a WAV labelled octet-stream", wav, "application/octet-stream", {}),
        ("a WAV cut short mid-data (a dropped upload)", wav[:1044], "audio/wav", {}),
        # A header claiming ~4 GB of samples with half a second behind it: only what is really
        # there is decoded, memory follows the body, not the claim.
        ("WAV claiming 4 GB", wav_header(data_bytes=0xFFFFFFF0) + raw_pcm(0.5), "audio/wav", {}),
    ]
    for name, body, content_type, headers in accepted:
        got, payload = await post(daemon, "/chat/audio", body, content_type, headers)
        assert got == 200, (name, payload)
        assert_valid("chat_audio.response", payload)
        assert payload["transcript"] == "what's the weather like", name
    assert db_value(data_dir, "SELECT COUNT(*) FROM turns WHERE role = 'user'") == len(accepted)
    rss_after = vm_rss_kib(daemon.proc.pid)
    assert rss_after - rss_before < 150 * 1024, f"RSS grew {rss_before} -> {rss_after} KiB"
    await still_serving(daemon, data_dir, "still here after bad audio")
    assert await daemon.terminate() == 0


async def test_compressed_audio_bomb_is_stopped_at_the_duration_limit(
    daemons: DaemonPool, tmp_path: Path
) -> None:
    require_tools("sox")
    bomb = tmp_path / "ten-minutes.flac"  # 10 min of silence: ~1.6 MB in, 19 MB if decoded
    subprocess.run(
        ["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", str(bomb), "trim", "0", "600"],
        check=True,
    )
    daemon = await daemons.start()
    assert daemon.proc is not None
    rss_before = vm_rss_kib(daemon.proc.pid)
    status, payload = await post(daemon, "/chat/audio", bomb.read_bytes(), "audio/flac")
    assert status == 413, payload
    assert_error(payload, "payload_too_large")
    assert "600.0 s" in payload["error"]["message"]
    assert vm_rss_kib(daemon.proc.pid) - rss_before < 100 * 1024
    await still_serving(daemon, tmp_path / "data", "after the bomb")
    assert await daemon.terminate() == 0


async def test_oversized_bodies_are_refused_before_they_are_read(
    daemons: DaemonPool, tmp_path: Path
) -> None:
    daemon = await daemons.start()
    data_dir = tmp_path / "data"
    # Content-Length far over the limit, and only a sliver of the body ever sent: the answer
    # must come from the header alone, without waiting for (or buffering) the rest.
    for path, content_type, declared in [
        ("/chat/audio", "audio/wav", 11 * MIB),
        ("/chat/audio", "application/octet-stream", 2 * 1024 * MIB),
        ("/chat/text", "application/json", 10 * MIB),
        ("/context/sensors", "application/json", 1 * MIB),
    ]:
        head = request_head(
            "POST", path, {"Content-Type": content_type, "Content-Length": str(declared)}
        )
        started = time.monotonic()
        status, _, payload = await raw_http(daemon.port, head, b"RIFF" + b"\0" * 1020, timeout=3)
        assert time.monotonic() - started < 2.0, path
        assert status == 413, (path, payload)
        body = json.loads(payload)
        assert_error(body, "payload_too_large")
        assert "limit" in body["error"]["message"]

    # Chunked uploads have no Content-Length: they are cut off as soon as they pass the limit.
    async def endless() -> AsyncIterator[bytes]:
        for _ in range(40):  # 40 x 512 KiB = 20 MiB, twice the audio limit
            yield b"\0" * (512 * 1024)
            await asyncio.sleep(0)

    async with aiohttp.ClientSession() as session:
        async with session.post(
            daemon.url + "/chat/audio",
            data=endless(),
            headers={"Content-Type": "application/octet-stream"},
        ) as resp:
            assert resp.status == 413
            assert_error(await resp.json(), "payload_too_large")
    assert db_value(data_dir, "SELECT COUNT(*) FROM turns") == 0
    await still_serving(daemon, data_dir, "still here after oversized bodies")
    rows = db_rows(data_dir, "SELECT role FROM turns ORDER BY id")
    assert rows == [("user",), ("assistant",)]
    assert await daemon.terminate() == 0
