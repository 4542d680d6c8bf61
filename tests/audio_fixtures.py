"""Test helpers: real audio files (espeak-ng, sox, numpy) and a fake Transcriber."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lobug.speech.hints import NO_HINTS, Hints
from lobug.speech.transcriber import SpeechUnavailable, Transcript


def require_tools(*names: str) -> None:
    """Skip the calling test only when a binary is genuinely missing (CI installs them)."""
    missing = [name for name in names if shutil.which(name) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH")


def speak_wav(text: str, path: Path, rate: int = 16000, channels: int = 1) -> Path:
    """Speak `text` with espeak-ng, then convert with sox to `rate` Hz, 16-bit, `channels`.
    No dither (-D): sox would add fresh random noise on each run, and a real-speech test must
    hear the same audio every time."""
    require_tools("espeak-ng", "sox")
    raw = path.with_name(path.stem + ".espeak.wav")
    subprocess.run(["espeak-ng", "-w", str(raw), text], check=True, capture_output=True)
    convert = ["sox", "-D", str(raw), "-r", str(rate), "-c", str(channels), "-b", "16", str(path)]
    subprocess.run(convert, check=True, capture_output=True)
    raw.unlink()
    return path


def sox_duration(path: Path) -> float:
    """Length in seconds as sox reports it: the independent reference for decode tests."""
    require_tools("soxi")
    out = subprocess.run(["soxi", "-D", str(path)], check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def tone(
    seconds: float, rate: int = 16000, freq: float = 440.0, amplitude: float = 0.5
) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def write_wav(path: Path, samples: np.ndarray, rate: int = 16000, channels: int = 1) -> Path:
    """Write float samples in [-1, 1] (shape (n,) or (n, channels)) as 16-bit PCM."""
    pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm.tobytes())
    return path


def tone_wav(path: Path, seconds: float, rate: int = 16000, freq: float = 440.0) -> Path:
    return write_wav(path, tone(seconds, rate, freq), rate)


def silence_wav(path: Path, seconds: float, rate: int = 16000) -> Path:
    return write_wav(path, np.zeros(round(seconds * rate), dtype=np.float32), rate)


def raw_pcm(seconds: float, rate: int = 16000, freq: float = 440.0) -> bytes:
    """Raw little-endian 16-bit mono PCM of a tone, as the device sends with octet-stream."""
    return (np.round(tone(seconds, rate, freq) * 32767)).astype("<i2").tobytes()


WHISPER_SPECIALS = [
    "<|endoftext|>",
    "<|startoftranscript|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nocaptions|>",
    "<|notimestamps|>",
]


def tiny_whisper_model(path: Path, *, seed: int = 0, width: int = 32) -> Path:
    """Write a real, tiny, randomly initialised CTranslate2 Whisper model directory (< 1 MB).

    No weights are downloaded: the spec is filled with seeded noise and saved by ctranslate2,
    with a byte-level tokenizer.json, so faster-whisper's real loading, decoding, VAD and
    segment generator all run. It transcribes gibberish, English-only (a small vocabulary).
    """
    from ctranslate2.specs import whisper_spec
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    rng = np.random.default_rng(seed)
    d, ffn = width, 2 * width

    def noise(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    def norm(spec: Any) -> None:
        spec.gamma, spec.beta = np.ones(d, np.float32), np.zeros(d, np.float32)

    def linear(spec: Any, out: int, inp: int) -> None:
        spec.weight, spec.bias = noise(out, inp), noise(out)

    def block(layer: Any, cross: bool) -> None:
        norm(layer.self_attention.layer_norm)
        linear(layer.self_attention.linear[0], 3 * d, d)  # fused q, k, v
        linear(layer.self_attention.linear[1], d, d)
        if cross:
            norm(layer.attention.layer_norm)
            linear(layer.attention.linear[0], d, d)
            linear(layer.attention.linear[1], 2 * d, d)  # fused k, v over the encoder output
            linear(layer.attention.linear[2], d, d)
        norm(layer.ffn.layer_norm)
        linear(layer.ffn.linear_0, ffn, d)
        linear(layer.ffn.linear_1, d, ffn)

    timestamps = [f"<|{i * 0.02:.2f}|>" for i in range(1501)]
    tokens = sorted(pre_tokenizers.ByteLevel.alphabet()) + WHISPER_SPECIALS + timestamps
    spec = whisper_spec.WhisperSpec(1, 2, 1, 2)
    encoder, decoder = spec.encoder, spec.decoder
    encoder.conv1.weight, encoder.conv1.bias = noise(d, 80, 3), noise(d)  # 80 mel bins
    encoder.conv2.weight, encoder.conv2.bias = noise(d, d, 3), noise(d)
    encoder.position_encodings.encodings = noise(1500, d)  # 30 s of 20 ms frames
    norm(encoder.layer_norm)
    block(encoder.layer[0], cross=False)
    decoder.embeddings.weight = noise(len(tokens), d)
    decoder.position_encodings.encodings = noise(448, d)
    decoder.projection.weight = decoder.embeddings.weight
    norm(decoder.layer_norm)
    block(decoder.layer[0], cross=True)
    spec.register_vocabulary(tokens)
    spec.config.suppress_ids, spec.config.suppress_ids_begin = [], []
    spec.config.lang_ids, spec.config.alignment_heads = [], [(0, 0)]
    spec.validate()
    path.mkdir(parents=True, exist_ok=True)
    spec.save(str(path))

    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(WHISPER_SPECIALS + timestamps)
    tokenizer.save(str(path / "tokenizer.json"))
    return path


class FakeTranscriber:
    """A Transcriber with the real interface and a fixed answer; counts calls and concurrency."""

    name = "fake"

    def __init__(
        self,
        text: str = "what's the weather like",
        *,
        delay_s: float = 0.0,
        fail_load: bool = False,
        language: str | None = "en",
    ) -> None:
        self.text = text
        self.delay_s = delay_s  # time.sleep in the worker thread, like a slow model on a Pi
        self.fail_load = fail_load
        self.language = language
        self.load_calls = 0
        self.transcribe_calls = 0
        self.active = 0
        self.max_active = 0
        self.threads: set[str] = set()
        self.last_audio: np.ndarray | None = None
        self.last_hints: Hints | None = None
        self._loaded = False
        self._error: str | None = None
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self._loaded

    @property
    def error(self) -> str | None:
        return self._error

    def load(self) -> None:
        self.load_calls += 1
        self.threads.add(threading.current_thread().name)
        if self.fail_load:
            self._error = "fake model is missing; put it in /nowhere and restart"
            raise SpeechUnavailable(self._error)
        self._loaded, self._error = True, None

    def transcribe(self, audio: np.ndarray, hints: Hints = NO_HINTS) -> Transcript:
        with self._lock:
            self.last_hints = hints
            self.transcribe_calls += 1
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            self.threads.add(threading.current_thread().name)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            self.last_audio = audio
            return Transcript(self.text, self.language, duration_s=audio.size / 16000)
        finally:
            with self._lock:
                self.active -= 1
