"""SpeechService: request body → Transcript, with all decoding and inference off the event loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import numpy as np

from lobug.config import SpeechConfig
from lobug.errors import payload_too_large, unavailable
from lobug.llm.lane import LLMLane
from lobug.speech.audio import SAMPLE_RATE, check_request, decode_audio, media_type, rms_dbfs
from lobug.speech.hints import NO_HINTS, Hints, VocabularySource, hints_for
from lobug.speech.transcriber import SpeechUnavailable, Transcriber, Transcript

log = logging.getLogger(__name__)

# Below this the body is digital silence (a muted mic sends zeros or ±1 LSB, about -90 dBFS);
# Whisper tends to "hear" phrases like "Thank you." in it, so we don't ask.
SILENCE_DBFS = -70.0
# After a failed load, a request may try again this much later: an operator who copies the
# model into place shouldn't have to restart the daemon, but a missing model isn't re-probed
# on every request either.
RELOAD_AFTER_S = 30.0

T = TypeVar("T")


class SpeechService:
    def __init__(
        self,
        transcriber: Transcriber,
        config: SpeechConfig,
        *,
        lane: LLMLane | None = None,
        vocabulary: VocabularySource | None = None,
    ) -> None:
        self._transcriber = transcriber
        self._config = config
        # The words the caller's household uses, by trust (lobug.speech.hints); None: no hints.
        self._vocabulary = vocabulary
        # A transcription is part of a turn: memory work gives it the machine (lobug.llm.lane).
        self._lane = lane or LLMLane(enabled=False)
        # One transcription at a time: Whisper on a Pi saturates every core, so parallel runs
        # only make each other slower.
        self._slot = asyncio.Semaphore(1)
        self._load_lock = asyncio.Lock()
        self._load_error: str | None = None
        self._last_attempt: float | None = None

    @property
    def ready(self) -> bool:
        return self._transcriber.ready

    @property
    def model(self) -> str:
        """The configured model: a faster-whisper size or a model directory."""
        return self._config.model

    @property
    def error(self) -> str | None:
        """Why speech is unavailable and how to fix it; None when ready."""
        if self.ready:
            return None
        if self._last_attempt is None:
            return f"the {self._transcriber.name} model has not been loaded yet"
        return self._load_error or self._transcriber.error or "the speech model failed to load"

    async def load(self, *, only_if_due: bool = False) -> None:
        """Load the model in a thread; on failure log one warning and carry on without speech.
        `only_if_due`: not again within RELOAD_AFTER_S of the last attempt."""
        async with self._load_lock:  # concurrent first requests share one load
            last = self._last_attempt
            if self.ready or (
                only_if_due and last is not None and time.monotonic() - last < RELOAD_AFTER_S
            ):
                return
            started = self._last_attempt = time.monotonic()
            try:
                await asyncio.to_thread(self._transcriber.load)
            except SpeechUnavailable as exc:
                self._load_error = str(exc)
            except Exception as exc:  # a bug or odd library error must not stop the daemon
                self._load_error = f"{type(exc).__name__}: {exc}"
                log.debug("speech model load failed", exc_info=True)
            else:
                self._load_error = None
                elapsed = time.monotonic() - started
                log.info("speech: %s model loaded in %.1f s", self._transcriber.name, elapsed)
                return
            log.warning("speech-to-text is unavailable (/chat/audio answers 503): %s", self.error)

    async def transcribe_body(
        self,
        body: bytes,
        content_type: str | None,
        sample_rate_header: str | None,
        *,
        trust: str,
    ) -> Transcript:
        """Decode, skip digital silence, transcribe; failures are ApiErrors (CONTRACT.md).
        `trust` is the caller's: the names Whisper is given come only from what it may read.

        The request's own problems come first (413 size, 415 media type, 400 empty body or bad
        X-Sample-Rate, raw PCM's odd length or too many seconds): a client must learn what to
        fix whether or not the model is loaded. Then the model's availability (503), then the
        decoding of a container (422 undecodable, 413 too many seconds)."""
        limit = self._config.max_audio_bytes
        if len(body) > limit:  # the HTTP layer checks first; this keeps the service safe alone
            raise payload_too_large(
                f"audio body is {len(body) / 2**20:.1f} MiB; the limit is {limit / 2**20:g} MiB"
            )
        check_request(
            body,
            content_type,
            sample_rate_header=sample_rate_header,
            max_seconds=self._config.max_audio_seconds,
        )
        if not self.ready:  # load lazily (speech.load_at_start off), or retry a failed load
            await self.load(only_if_due=True)
        if not self.ready:
            raise unavailable(f"speech-to-text is unavailable: {self.error}")
        audio, level = await asyncio.to_thread(
            _decode_and_measure, body, content_type, sample_rate_header, self._config
        )
        duration = audio.size / SAMPLE_RATE
        if level < SILENCE_DBFS:
            return Transcript(text="", language=self._config.language, duration_s=duration)
        hints = await self.hints(trust)
        try:
            async with self._lane.turn(counts=trust != "public"):
                return await self._run_exclusive(
                    partial(self._transcriber.transcribe, hints=hints), audio
                )
        except SpeechUnavailable as exc:
            raise unavailable(f"speech-to-text is unavailable: {exc}") from None

    async def hints(self, trust: str) -> Hints:
        """The names to expect for a caller of `trust`; none when they cannot be had (a failing
        lookup costs the hint, never the transcription)."""
        mode = self._config.vocabulary
        if self._vocabulary is None or mode == "off":
            return NO_HINTS
        try:
            terms = await self._vocabulary(trust)
        except Exception:  # noqa: BLE001 - e.g. a locked or damaged database
            log.warning("speech: the memory's names could not be read", exc_info=True)
            return NO_HINTS
        return hints_for(terms, mode, self._config.vocabulary_max_tokens)

    @staticmethod
    def check_content_type(content_type: str | None) -> None:
        """415 for a media type /chat/audio never accepts (before its body is even read)."""
        media_type(content_type)

    async def _run_exclusive(self, fn: Callable[[np.ndarray], T], audio: np.ndarray) -> T:
        await self._slot.acquire()
        try:
            task = asyncio.ensure_future(asyncio.to_thread(fn, audio))
        except BaseException:
            self._slot.release()
            raise
        # A cancelled request (client hung up) cannot stop a running thread, so the slot is
        # released only when the thread really finishes; otherwise the next run would overlap.
        task.add_done_callback(self._release_slot)
        return await asyncio.shield(task)

    def _release_slot(self, task: asyncio.Future[Any]) -> None:
        self._slot.release()
        if not task.cancelled() and task.exception() is not None:
            # Retrieve it so an orphaned task doesn't log "exception was never retrieved".
            log.debug("transcription failed", exc_info=task.exception())


def _decode_and_measure(
    body: bytes, content_type: str | None, sample_rate_header: str | None, config: SpeechConfig
) -> tuple[np.ndarray, float]:
    # Both steps touch every sample, so both run in the worker thread.
    audio = decode_audio(
        body,
        content_type,
        sample_rate_header=sample_rate_header,
        max_seconds=config.max_audio_seconds,
    )
    return audio, rms_dbfs(audio)
