"""WyomingHandler: one Wyoming connection — describe, ping, asr (audio in, transcript out) and
handle (a transcript's text in, the turn's reply out)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.handle import NotHandled
from wyoming.info import Describe
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler

from lobug import conversation
from lobug.access import STORES_BY_TRUST
from lobug.api.auth import peer_trust
from lobug.chat.service import ChatService
from lobug.config import Config
from lobug.errors import ApiError, invalid_request
from lobug.speech.audio import RAW_TYPE
from lobug.speech.service import SpeechService
from lobug.wyoming_server import handle
from lobug.wyoming_server.asr import AudioStream
from lobug.wyoming_server.info import describe

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Services:
    """What a connection needs from the daemon."""

    config: Config
    chat: ChatService
    speech: SpeechService


class WyomingHandler(AsyncEventHandler):
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        services: Services,
        on_close: Callable[[WyomingHandler], None] = lambda handler: None,
    ) -> None:
        super().__init__(reader, writer)
        self.services = services
        self._on_close = on_close
        peer = writer.get_extra_info("peername")
        self.peer: str | None = peer[0] if isinstance(peer, tuple) and peer else None
        self.task: asyncio.Task[Any] | None = None
        self._audio: AudioStream | None = None
        self._session = handle.SESSION_PREFIX + conversation.new_session_id()

    async def run(self) -> None:
        self.task = asyncio.current_task()  # so the daemon can end it on shutdown
        await super().run()

    async def disconnect(self) -> None:
        self._on_close(self)

    async def handle_event(self, event: Event) -> bool:
        try:
            await self._dispatch(event)
        except ConnectionError:  # BrokenPipeError, ConnectionResetError
            return False  # the client left; a turn in progress was committed by then
        except Exception:  # a bug must cost one request, not the connection or the daemon
            log.exception("Wyoming %s event from %s failed", event.type, self.peer)
            await self.write_event(Error(text="internal error (see the Lo-Bug log)",
                                         code="internal").event())  # fmt: skip
        return True

    async def _dispatch(self, event: Event) -> None:
        if Describe.is_type(event.type):
            info = describe(self.services.config, speech_ready=self.services.speech.ready)
            await self.write_event(info.event())
        elif Ping.is_type(event.type):
            await self.write_event(Pong(text=Ping.from_event(event).text).event())
        elif Transcribe.is_type(event.type):
            pass  # the model is the loaded one; its language is speech.language or detected
        elif AudioStart.is_type(event.type):
            await self._guard(self._audio_start, AudioStart.from_event(event))
        elif AudioChunk.is_type(event.type):
            await self._guard(self._audio_chunk, AudioChunk.from_event(event))
        elif AudioStop.is_type(event.type):
            await self._guard(self._audio_stop)
        elif Transcript.is_type(event.type):
            await self._handle(Transcript.from_event(event))
        else:
            log.debug("Wyoming: ignored a %s event from %s", event.type, self.peer)

    async def _guard(self, step: Any, *args: Any) -> None:
        """An audio step's ApiError (limits, format, model unavailable) → an `error` event."""
        try:
            await step(*args)
        except ApiError as exc:
            log.info("Wyoming asr from %s refused: %s", self.peer, exc.message)
            await self.write_event(Error(text=exc.message, code=exc.code).event())

    async def _audio_start(self, start: AudioStart) -> None:
        self._audio = None
        self._audio = AudioStream.begin(start, self.services.config.speech)

    async def _audio_chunk(self, chunk: AudioChunk) -> None:
        if self._audio is None:  # no audio-start: the first chunk says the format
            start = AudioStart(rate=chunk.rate, width=chunk.width, channels=chunk.channels)
            self._audio = AudioStream.begin(start, self.services.config.speech)
        if not self._audio.refused:  # refused: its one error was sent, the rest is dropped
            self._audio.add(chunk)

    async def _audio_stop(self) -> None:
        audio, self._audio = self._audio, None
        if audio is None:
            raise invalid_request("audio-stop without any audio")
        if audio.refused:
            return
        pcm = await asyncio.to_thread(audio.pcm16_mono)
        # The same path as a raw-PCM /chat/audio body: limits, silence, one model run at a time.
        result = await self.services.speech.transcribe_body(pcm, RAW_TYPE, str(audio.rate))
        await self.write_event(Transcript(text=result.text.strip(),
                                          language=result.language).event())  # fmt: skip

    async def _handle(self, transcript: Transcript) -> None:
        config = self.services.config
        session = handle.session_for(transcript.context, self._session)
        context = {**(transcript.context or {}), "session_id": session}
        allowlist = config.api.device_allowlist
        if allowlist and handle.DEVICE_ID not in allowlist:
            message = f"device {handle.DEVICE_ID!r} is not allowed (api.device_allowlist)"
            await self.write_event(NotHandled(text=message, context=context).event())
            return
        trusted = handle.in_networks(self.peer, config.wyoming.trusted_hosts)
        stores = STORES_BY_TRUST[peer_trust(config.api, self.peer, trusted=trusted)]
        try:
            await handle.reply(
                self.services.chat,
                self.write_event,
                transcript.text,
                session_id=session,
                stores=stores,
                context=context,
            )
        except ApiError as exc:  # empty or over-long text, a full disk: the protocol's refusal
            log.info("Wyoming handle from %s refused: %s", self.peer, exc.message)
            await self.write_event(NotHandled(text=exc.message, context=context).event())
