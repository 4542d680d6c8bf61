"""WyomingHandler: one Wyoming connection — describe, ping, asr (audio in, transcript out) and
handle (a transcript's text in, the turn's reply out) — read with Lo-Bug's own bounds
(`frames`), closed when idle, its audio counted against the daemon-wide budget."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event, async_write_event
from wyoming.handle import NotHandled
from wyoming.info import Describe
from wyoming.ping import Ping, Pong

from lobug import conversation
from lobug.access import OWNER, STORES_BY_TRUST, peer_owner
from lobug.api.auth import peer_trust
from lobug.chat.service import ChatService
from lobug.config import Config
from lobug.errors import ApiError, invalid_request
from lobug.speech.audio import RAW_TYPE
from lobug.speech.service import SpeechService
from lobug.wyoming_server import frames, handle
from lobug.wyoming_server.asr import AudioBudget, AudioStream, audio_chunk, audio_start
from lobug.wyoming_server.info import describe

log = logging.getLogger(__name__)

LINGER_S = 1.0  # after refusing a frame: what the peer still sends is read and dropped so
# that the close is a FIN, not a reset that could discard the error event before it is read


@dataclass(frozen=True)
class ConnectionServices:
    """What a connection needs from the daemon."""

    config: Config
    chat: ChatService
    speech: SpeechService


class WyomingHandler:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        services: ConnectionServices,
        budget: AudioBudget,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.services = services
        self.budget = budget
        self.idle_s = services.config.wyoming.idle_timeout_s
        peer = writer.get_extra_info("peername")
        self.peer: str | None = peer[0] if isinstance(peer, tuple) and peer else None
        self.task: asyncio.Task[Any] | None = None
        self._audio: AudioStream | None = None
        self._held = 0  # bytes of the audio budget this connection holds
        self._session = handle.SESSION_PREFIX + conversation.new_session_id()

    async def run(self) -> None:
        """Events until the peer leaves, idles, sends a malformed one, or the daemon stops."""
        self.task = asyncio.current_task()  # so the daemon can end it on shutdown
        try:
            await self._serve()
        except OSError:  # BrokenPipeError, ConnectionResetError…: the client's socket is gone
            pass
        finally:
            self.budget.give(self._held)
            self._held = 0
            self._audio = None
            self.writer.close()

    def stop(self) -> None:
        self.writer.close()
        self.reader.feed_eof()

    async def write_event(self, event: Event) -> None:
        """Send an event; a peer that reads none of it for wyoming.idle_timeout_s has left."""
        try:
            async with asyncio.timeout(self.idle_s):
                await async_write_event(event, self.writer)
        except TimeoutError:
            raise ConnectionAbortedError("the Wyoming peer stopped reading") from None

    async def _serve(self) -> None:
        limits = frames.FrameLimits.of(self.services.config)
        while True:
            try:
                async with asyncio.timeout(self.idle_s):
                    event = await frames.read_event(self.reader, limits, self._reserve)
            except TimeoutError:
                log.info("Wyoming: closed %s, idle for %g s", self.peer, self.idle_s)
                return
            except ApiError as exc:  # malformed or too big: answered once, then closed
                await self._refuse(exc)
                return
            if event is None:
                return
            try:
                if not await self.handle_event(event):
                    return
            finally:
                self._settle()

    async def _refuse(self, exc: ApiError) -> None:
        log.warning("Wyoming: closed %s: %s", self.peer, exc.message)
        await self.write_event(Error(text=exc.message, code=exc.code).event())
        with contextlib.suppress(OSError, TimeoutError):
            self.writer.write_eof()
            async with asyncio.timeout(LINGER_S):
                while await self.reader.read(frames.LINE_BYTES):
                    pass

    def _reserve(self, size: int) -> None:
        self.budget.take(size)
        self._held += size

    def _settle(self) -> None:
        """After each event: hold exactly what the audio stream keeps."""
        keep = self._audio.held if self._audio is not None else 0
        self.budget.give(self._held - keep)
        self._held = keep

    async def handle_event(self, event: Event) -> bool:
        try:
            await self._dispatch(event)
        except ConnectionError:
            return False  # the client left; a turn in progress was committed by then
        except ApiError as exc:  # limits, format, bad fields, model unavailable
            log.info("Wyoming %s from %s refused: %s", event.type, self.peer, exc.message)
            await self.write_event(Error(text=exc.message, code=exc.code).event())
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
            self._audio = None
            self._audio = AudioStream.begin(audio_start(event), self.services.config.speech)
        elif AudioChunk.is_type(event.type):
            await self._audio_chunk(audio_chunk(event))
        elif AudioStop.is_type(event.type):
            await self._audio_stop()
        elif Transcript.is_type(event.type):
            await self._handle(event.data.get("text"), event.data.get("context"))
        else:
            log.debug("Wyoming: ignored a %s event from %s", event.type, self.peer)

    async def _audio_chunk(self, chunk: AudioChunk) -> None:
        if self._audio is None:  # no audio-start: the first chunk says the format
            start = AudioStart(rate=chunk.rate, width=chunk.width, channels=chunk.channels)
            self._audio = AudioStream.begin(start, self.services.config.speech)
        if not self._audio.refused:  # refused: its one error was sent, the rest is dropped
            self._audio.add(chunk)

    async def _audio_stop(self) -> None:
        audio, self._audio = self._audio, None  # its budget is held until this returns
        if audio is None:
            raise invalid_request("audio-stop without any audio")
        if audio.refused:
            return
        pcm = await asyncio.to_thread(audio.pcm16_mono)
        audio.chunks.clear()
        # The same path as a raw-PCM /chat/audio body: limits, silence, one model run at a time.
        result = await self.services.speech.transcribe_body(
            pcm, RAW_TYPE, str(audio.rate), trust=self._trust()
        )
        await self.write_event(Transcript(text=result.text.strip(),
                                          language=result.language).event())  # fmt: skip

    def _trust(self) -> str:
        """This connection's trust: what its turns may read, and the names its audio may hint."""
        config = self.services.config
        trusted = handle.in_networks(self.peer, config.wyoming.trusted_hosts)
        return peer_trust(config.api, self.peer, trusted=trusted)

    async def _handle(self, text: Any, context: Any) -> None:
        if not isinstance(context, dict):
            context = {}  # absent (or not an object): nothing to carry back
        config = self.services.config
        session = handle.session_for(context, self._session)
        context = {**context, "session_id": session}
        allowlist = config.api.device_allowlist
        if allowlist and handle.DEVICE_ID not in allowlist:
            message = f"device {handle.DEVICE_ID!r} is not allowed (api.device_allowlist)"
            await self.write_event(NotHandled(text=message, context=context).event())
            return
        trust = self._trust()
        # A peer the owner trusts speaks for the owner; any other is a stranger known by its
        # address, whose conversations are its own (issue 38).
        owner = OWNER if trust == "full" else peer_owner(self.peer)
        try:
            await handle.reply(
                self.services.chat,
                self.write_event,
                text,
                session_id=session,
                stores=STORES_BY_TRUST[trust],
                owner=owner,
                context=context,
            )
        except ApiError as exc:  # not text, empty or over-long, a full disk: a refusal
            log.info("Wyoming handle from %s refused: %s", self.peer, exc.message)
            await self.write_event(NotHandled(text=exc.message, context=context).event())
