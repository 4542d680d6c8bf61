"""faster-whisper transcriber: finds the model offline, loads it once, transcribes on demand."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from lobug.config import SpeechConfig
from lobug.speech.audio import SAMPLE_RATE
from lobug.speech.hints import NO_HINTS, Hints
from lobug.speech.transcriber import SpeechUnavailable, Transcript

ModelFactory = Callable[..., Any]


class WhisperTranscriber:
    """Loads `speech.model` (a size name such as base.en, or a CTranslate2 model directory).

    A size name is looked up first as a plain directory `<models_dir>/<name>` (what an operator
    copies onto an offline Pi), then in the Hugging Face cache layout under `<models_dir>`.
    With local_files_only nothing is ever fetched from the network.
    """

    name = "faster-whisper"

    def __init__(
        self,
        config: SpeechConfig,
        models_dir: Path,
        *,
        model_factory: ModelFactory | None = None,  # tests pass a stand-in; None → WhisperModel
    ) -> None:
        self._config = config
        self._root = Path(config.download_root or models_dir).expanduser()
        self._factory = model_factory
        self._model: Any = None
        self._error: str | None = None
        self.model_path: Path | None = None  # the directory actually loaded, for logs and health

    @property
    def ready(self) -> bool:
        return self._model is not None

    @property
    def error(self) -> str | None:
        return self._error

    def load(self) -> None:
        try:
            self._model = self._load()
            self._error = None
        except SpeechUnavailable as exc:
            self._model = None
            self._error = str(exc)
            raise
        except Exception as exc:  # e.g. an unreadable models directory: still a reason, not a crash
            self._model = None
            self._error = f"could not load the faster-whisper model {self._config.model!r}: {exc}"
            raise SpeechUnavailable(self._error) from exc

    def transcribe(self, audio: np.ndarray, hints: Hints = NO_HINTS) -> Transcript:
        model = self._model
        if model is None:
            raise SpeechUnavailable(self._error or "the faster-whisper model is not loaded yet")
        cfg = self._config
        options: dict[str, Any] = {}
        if not hints.empty:  # without hints, exactly the model's defaults
            options = {"hotwords": hints.hotwords, "initial_prompt": hints.initial_prompt}
        segments, info = model.transcribe(
            audio, language=cfg.language, beam_size=cfg.beam_size, vad_filter=cfg.vad, **options
        )
        # `segments` is lazy: the decoding happens while it is iterated, so it must be consumed
        # here, in the worker thread, and never on the event loop.
        parts = [segment.text.strip() for segment in segments]
        text = " ".join(part for part in parts if part)
        language = getattr(info, "language", None) or cfg.language
        return Transcript(text=text, language=language, duration_s=audio.size / SAMPLE_RATE)

    def _load(self) -> Any:
        factory = self._factory or _import("WhisperModel")
        path = self._resolve()
        cfg = self._config
        try:
            model = factory(
                str(path),
                device=cfg.device,
                compute_type=cfg.compute_type,
                cpu_threads=cfg.cpu_threads,
                download_root=str(self._root),
                local_files_only=cfg.local_files_only,
            )
        except Exception as exc:  # CTranslate2 raises bare RuntimeError/ValueError for all of these
            raise SpeechUnavailable(_explain_load_failure(path, cfg, exc)) from exc
        self.model_path = path
        return model

    def _resolve(self) -> Path:
        """The model directory to load; raises SpeechUnavailable saying what to do instead."""
        model = self._config.model.strip()
        if not model:
            raise SpeechUnavailable(
                "speech.model is empty; set it to a faster-whisper size such as base.en "
                "or to a CTranslate2 Whisper model directory"
            )
        path = Path(model).expanduser()
        if path.is_dir():
            return self._check_dir(path)
        if _looks_like_path(model):
            raise SpeechUnavailable(
                f"speech.model is the directory {path}, which does not exist; copy a CTranslate2 "
                f"Whisper model directory (model.bin, config.json, tokenizer.json, vocabulary.*) "
                f"there, or set speech.model to a size such as base.en"
            )
        if (self._root / model / "model.bin").is_file():
            return self._check_dir(self._root / model)
        return self._check_dir(self._from_hub_cache(model))

    def _from_hub_cache(self, model: str) -> Path:
        utils = _import("utils")
        sizes = utils.available_models()
        if "/" not in model and model not in sizes:
            raise SpeechUnavailable(
                f"speech.model {model!r} is neither a faster-whisper size ({', '.join(sizes)}) "
                f"nor an existing model directory"
            )
        repo = getattr(utils, "_MODELS", {}).get(model, model)
        offline = self._config.local_files_only
        try:
            snapshot = utils.download_model(
                model, local_files_only=offline, cache_dir=str(self._root)
            )
        except Exception as exc:  # huggingface_hub: LocalEntryNotFoundError, HTTP and OS errors
            if offline:
                raise SpeechUnavailable(
                    f"faster-whisper model {model!r} is not in {self._root} and "
                    "speech.local_files_only is on, so it was not downloaded; "
                    + self._how_to_copy(model, repo)
                ) from exc
            raise SpeechUnavailable(
                f"could not download faster-whisper model {model!r} ({repo}) into {self._root}: "
                f"{_one_line(exc)}. Check the network, or provide the model offline: "
                + self._how_to_copy(model, repo)
            ) from exc
        return Path(snapshot)

    def _check_dir(self, path: Path) -> Path:
        if not (path / "model.bin").is_file():
            raise SpeechUnavailable(
                f"{path} has no model.bin, so it is not a CTranslate2 Whisper model directory "
                f"(expected model.bin, config.json, tokenizer.json, vocabulary.*); download a "
                f"faster-whisper model or convert one with ct2-transformers-converter"
            )
        if self._config.local_files_only and not (path / "tokenizer.json").is_file():
            # Without it faster-whisper fetches a tokenizer from the Hub: not allowed offline.
            raise SpeechUnavailable(
                f"{path} has no tokenizer.json and speech.local_files_only is on; copy the "
                f"model's tokenizer.json into that directory"
            )
        return path

    def _how_to_copy(self, model: str, repo: str) -> str:
        local = model.rsplit("/", 1)[-1]
        then = "" if local == model else f' and set speech.model = "{local}"'
        steps = [
            f"on a connected machine run `hf download {repo} --local-dir {local}` and copy the "
            f"{local} directory to {self._root / local}{then}",
            "or set speech.model to a local CTranslate2 model directory",
        ]
        if self._config.local_files_only:
            steps.append("or allow a one-time download with speech.local_files_only = false")
        return ", ".join(steps)


def _import(name: str) -> Any:
    try:
        import faster_whisper
        import faster_whisper.utils
    except ImportError as exc:  # includes a broken ctranslate2 or PyAV wheel underneath
        raise SpeechUnavailable(
            f"faster-whisper cannot be imported ({exc}); install it into lobug's environment "
            f"with `pip install faster-whisper`"
        ) from exc
    return faster_whisper.utils if name == "utils" else getattr(faster_whisper, name)


def _looks_like_path(model: str) -> bool:
    # "Systran/faster-whisper-base.en" is a Hub id; "/srv/models/base", "./base" are directories.
    return (
        Path(model).is_absolute()
        or model.startswith((".", "~"))
        or model.count("/") > 1
        or model.endswith("/")
    )


def _explain_load_failure(path: Path, cfg: SpeechConfig, exc: Exception) -> str:
    detail = _one_line(exc)
    lowered = detail.lower()
    if "compute type" in lowered or "compute_type" in lowered:
        hint = (
            f"speech.compute_type {cfg.compute_type!r} is not supported on {cfg.device}; "
            f"use one of {_supported_compute_types(cfg.device)}"
        )
    elif "cuda" in lowered or "device" in lowered:
        hint = f'speech.device is {cfg.device!r}; use speech.device = "cpu" without a GPU'
    else:
        hint = (
            "the files may be damaged, incomplete or not a CTranslate2 Whisper model; "
            "download the model again or convert it with ct2-transformers-converter"
        )
    return f"could not load the faster-whisper model in {path}: {detail}. {hint}"


def _one_line(exc: Exception) -> str:
    # Library messages span lines and end in "."; ours embed them mid-sentence in one log line.
    return " ".join(str(exc).split()).rstrip(".") or type(exc).__name__


def _supported_compute_types(device: str) -> str:
    try:
        import ctranslate2

        return ", ".join(sorted(ctranslate2.get_supported_compute_types(device)))
    except Exception:  # only used to word a message
        return "int8, float32"
