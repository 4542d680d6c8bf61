"""WhisperTranscriber: offline model lookup, how-to-fix errors, and real faster-whisper runs."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from audio_fixtures import speak_wav, tiny_whisper_model

from lobug.config import SpeechConfig
from lobug.errors import ApiError
from lobug.speech.audio import decode_audio
from lobug.speech.service import SpeechService
from lobug.speech.transcriber import SpeechUnavailable, Transcriber
from lobug.speech.whisper import WhisperTranscriber


@pytest.fixture(autouse=True)
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Refuse and record every attempt to reach the Hugging Face Hub (or anything else).

    Recorded rather than only raised: the transcriber turns load errors into messages, so an
    exception alone could be swallowed; the teardown check cannot.
    """
    attempts: list[str] = []

    def refuse(name: str) -> Any:
        def blocked(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{name}{args!r}")
            raise OSError(f"network access is blocked in tests ({name})")

        return blocked

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    yield attempts
    assert attempts == [], "code under test tried to use the network"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_whisper_model(tmp_path_factory.mktemp("whisper") / "tiny")


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    path = speak_wav("turn on the kitchen light", tmp_path_factory.mktemp("wav") / "s.wav")
    return decode_audio(path.read_bytes(), "audio/wav", sample_rate_header=None, max_seconds=60)


def whisper(models_dir: Path, **config: Any) -> WhisperTranscriber:
    return WhisperTranscriber(SpeechConfig(**config), models_dir)


def load_error(t: WhisperTranscriber) -> str:
    with pytest.raises(SpeechUnavailable) as info:
        t.load()
    assert not t.ready
    assert t.error == str(info.value)  # the service reports exactly this on 503 and /health
    return str(info.value)


# --- errors that say how to fix them ----------------------------------------------------------


def test_missing_size_name_offline_says_how_to_provide_it(tmp_path: Path) -> None:
    message = load_error(whisper(tmp_path / "models", model="base.en"))
    assert f"'base.en' is not in {tmp_path / 'models'}" in message
    assert "local_files_only is on" in message
    assert "hf download Systran/faster-whisper-base.en --local-dir base.en" in message
    assert str(tmp_path / "models" / "base.en") in message
    assert "local CTranslate2 model directory" in message


def test_missing_hub_id_offline_names_the_repository(tmp_path: Path) -> None:
    message = load_error(whisper(tmp_path, model="someone/whisper-ct2"))
    assert "hf download someone/whisper-ct2 --local-dir whisper-ct2" in message


def test_failed_download_when_local_files_only_is_off(
    tmp_path: Path, network_attempts: list[str]
) -> None:
    message = load_error(whisper(tmp_path, model="tiny.en", local_files_only=False))
    # Whether the Hub was asked depends on HF_HUB_OFFLINE (conftest sets it); either way the
    # attempt was refused and the message must still say what to do.
    network_attempts.clear()
    assert message.startswith("could not download faster-whisper model 'tiny.en'")
    assert "Check the network, or provide the model offline" in message
    assert "hf download Systran/faster-whisper-tiny.en" in message
    assert "local_files_only = false" not in message  # it already is


def test_unknown_size_name_lists_the_sizes(tmp_path: Path) -> None:
    message = load_error(whisper(tmp_path, model="enormous"))
    assert "'enormous' is neither a faster-whisper size" in message
    assert "base.en" in message and "small" in message


@pytest.mark.parametrize("model", ["/nonexistent/lobug/whisper", "./no-such-model", "~/nope/"])
def test_model_directory_that_does_not_exist(tmp_path: Path, model: str) -> None:
    message = load_error(whisper(tmp_path, model=model))
    assert "which does not exist" in message and "model.bin" in message


def test_directory_without_model_bin(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    message = load_error(whisper(tmp_path, model=str(tmp_path / "empty")))
    assert "has no model.bin" in message and "CTranslate2" in message


def test_directory_without_tokenizer_offline(tmp_path: Path) -> None:
    # faster-whisper would fetch a tokenizer from the Hub; offline we refuse up front instead.
    model = tmp_path / "no-tokenizer"
    model.mkdir()
    (model / "model.bin").write_bytes(b"\0" * 64)
    message = load_error(whisper(tmp_path, model=str(model)))
    assert "no tokenizer.json" in message and "local_files_only" in message


def test_garbage_model_bin_is_a_clear_error(tmp_path: Path) -> None:
    model = tmp_path / "garbage"
    model.mkdir()
    (model / "model.bin").write_bytes(b"this is not a model " * 50)
    (model / "tokenizer.json").write_text("{}")
    message = load_error(whisper(tmp_path, model=str(model)))
    assert message.startswith(f"could not load the faster-whisper model in {model}")
    assert "damaged" in message and "download the model again" in message


def test_truncated_real_model_is_a_clear_error(tmp_path: Path, tiny_model: Path) -> None:
    model = tmp_path / "cut"
    model.mkdir()
    for file in tiny_model.iterdir():
        (model / file.name).write_bytes(file.read_bytes())
    data = (tiny_model / "model.bin").read_bytes()
    (model / "model.bin").write_bytes(data[: len(data) // 3])  # an interrupted copy
    message = load_error(whisper(tmp_path, model=str(model)))
    assert "could not load the faster-whisper model" in message and "damaged" in message


def test_unsupported_compute_type_lists_the_supported_ones(tiny_model: Path) -> None:
    message = load_error(whisper(tiny_model.parent, model=str(tiny_model), compute_type="bogus"))
    assert "speech.compute_type 'bogus' is not supported on cpu" in message
    assert "int8" in message and "float32" in message


def test_missing_gpu_points_at_speech_device(tiny_model: Path) -> None:
    import ctranslate2

    if ctranslate2.get_cuda_device_count() > 0:
        pytest.skip("this machine has a GPU")
    message = load_error(whisper(tiny_model.parent, model=str(tiny_model), device="cuda"))
    assert 'speech.device = "cpu"' in message


def test_faster_whisper_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "faster_whisper", None)  # makes the import fail
    message = load_error(whisper(tmp_path))
    assert (
        "faster-whisper cannot be imported" in message and "pip install faster-whisper" in message
    )


def test_transcribe_before_load_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SpeechUnavailable, match="not loaded"):
        whisper(tmp_path).transcribe(np.zeros(16000, np.float32))


# --- finding and loading a real (tiny) model ------------------------------------------------


def test_real_model_directory_loads_and_transcribes(tiny_model: Path, speech: np.ndarray) -> None:
    t = whisper(Path("/unused"), model=str(tiny_model), beam_size=1, vad=True)
    assert isinstance(t, Transcriber)
    t.load()
    assert t.ready and t.error is None and t.model_path == tiny_model
    transcript = t.transcribe(speech)
    assert isinstance(transcript.text, str)  # random weights: gibberish, but real decoding
    assert transcript.language == "en"  # an English-only vocabulary
    assert transcript.duration_s == pytest.approx(speech.size / 16000)


def test_size_name_found_as_a_plain_directory_in_models_dir(
    tmp_path: Path, tiny_model: Path
) -> None:
    # What the how-to-fix message tells an operator to do on an offline Pi.
    target = tmp_path / "models" / "tiny.en"
    target.parent.mkdir()
    target.symlink_to(tiny_model, target_is_directory=True)
    t = whisper(tmp_path / "models", model="tiny.en")
    t.load()
    assert t.ready and t.model_path == target


def test_size_name_found_in_the_hugging_face_cache_layout(tmp_path: Path, tiny_model: Path) -> None:
    # What `speech.local_files_only = false` (or huggingface_hub on another machine) leaves behind.
    repo = tmp_path / "cache" / "models--Systran--faster-whisper-tiny.en"
    revision = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(revision)
    (repo / "snapshots").mkdir()
    (repo / "snapshots" / revision).symlink_to(tiny_model, target_is_directory=True)
    t = whisper(tmp_path / "unused", model="tiny.en", download_root=tmp_path / "cache")
    t.load()
    assert t.ready and t.model_path == repo / "snapshots" / revision


def test_config_reaches_whisper_model(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "model.bin").write_bytes(b"x")
    (model / "tokenizer.json").write_text("{}")
    calls: list[tuple[str, dict[str, Any]]] = []

    def factory(path: str, **kwargs: Any) -> object:
        calls.append((path, kwargs))
        return object()

    config = SpeechConfig(
        model=str(model),
        device="cpu",
        compute_type="int8_float32",
        cpu_threads=3,
        download_root=tmp_path / "dl",
        local_files_only=True,
    )
    t = WhisperTranscriber(config, tmp_path / "ignored", model_factory=factory)
    t.load()
    assert calls == [
        (
            str(model),
            {
                "device": "cpu",
                "compute_type": "int8_float32",
                "cpu_threads": 3,
                "download_root": str(tmp_path / "dl"),
                "local_files_only": True,
            },
        )
    ]


def test_transcribe_consumes_the_lazy_segments_itself(tmp_path: Path) -> None:
    consumed: list[str] = []
    seen: dict[str, Any] = {}

    class LazyModel:
        def transcribe(self, audio: np.ndarray, **options: Any) -> tuple[Iterator[Any], Any]:
            seen.update(options)

            def segments() -> Iterator[Any]:
                for text in (" Turn on", " ", " the light."):
                    consumed.append(text)  # in faster-whisper, this is where decoding happens
                    yield SimpleNamespace(text=text)

            return segments(), SimpleNamespace(language="en", duration=1.0)

    model = tmp_path / "m"
    model.mkdir()
    (model / "model.bin").write_bytes(b"x")
    (model / "tokenizer.json").write_text("{}")
    config = SpeechConfig(model=str(model), language="en", beam_size=2, vad=False)
    t = WhisperTranscriber(config, tmp_path, model_factory=lambda *a, **k: LazyModel())
    t.load()
    transcript = t.transcribe(np.zeros(8000, np.float32))
    assert transcript.text == "Turn on the light."
    assert len(consumed) == 3  # the generator was drained inside transcribe()
    assert seen == {"language": "en", "beam_size": 2, "vad_filter": False}
    assert (transcript.language, transcript.duration_s) == ("en", 0.5)


# --- through the service ----------------------------------------------------------------------


async def test_service_with_a_real_model(tiny_model: Path, tmp_path: Path) -> None:
    service = SpeechService(whisper(tmp_path, model=str(tiny_model)), SpeechConfig())
    await service.load()
    assert service.ready
    body = speak_wav("hello there", tmp_path / "h.wav", rate=22050).read_bytes()
    transcript = await service.transcribe_body(body, "audio/wav", None, trust="full")
    assert transcript.language == "en" and transcript.duration_s > 0.5


async def test_service_without_the_model_is_503_with_the_fix(tmp_path: Path) -> None:
    config = SpeechConfig(model="small.en")
    service = SpeechService(WhisperTranscriber(config, tmp_path / "models"), config)
    await service.load()  # logs a warning, does not raise
    with pytest.raises(ApiError) as info:
        await service.transcribe_body(b"RIFF....WAVE", "audio/wav", None, trust="full")
    assert info.value.status == 503 and info.value.code == "unavailable"
    assert "hf download Systran/faster-whisper-small.en" in info.value.message
