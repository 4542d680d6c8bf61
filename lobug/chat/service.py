"""ChatService: one turn end to end — commit, prompt, one LLM call (or stream), commit, respond."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from lobug import conversation as turns
from lobug import errors
from lobug.access import OWNER, STORES, trust_of, trust_rank
from lobug.chat.hooks import MemoryHooks, NoMemory
from lobug.chat.prompt import PROSE_FORMAT, REPLY_FORMAT, build_messages
from lobug.chat.sensors import SensorService
from lobug.chat.strangers import StrangerAllowance
from lobug.chat.stream import StreamedTurn
from lobug.chat.working_memory import Message, WorkingMemory
from lobug.config import ChatConfig
from lobug.conversation import TurnRecord
from lobug.llm.ask import snippet
from lobug.llm.client import LLMClient, LLMUnavailable
from lobug.llm.replies import REPLY_MAX_TOKENS, REPLY_SCHEMA, UnusableReply, parse_reply
from lobug.storage.database import Database

log = logging.getLogger(__name__)

MAX_ID_CHARS = 128
# What a stranger (public trust) may spend of the one model slot per reply: a few spoken
# sentences, whatever it asks (issue 38: "tell me the longest story you know" held the slot).
STRANGER_MAX_TOKENS = 160


def tokens_for(trust: str, asked: int | None) -> int | None:
    """The max_tokens a caller of `trust` gets: as asked (the client's ceiling applies), a
    stranger at most STRANGER_MAX_TOKENS."""
    if trust != "public":
        return asked
    return STRANGER_MAX_TOKENS if asked is None else min(asked, STRANGER_MAX_TOKENS)


@dataclass(frozen=True)
class TurnResult:
    response: str
    action: str
    session_id: str
    turn_id: int
    degraded: bool = False

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "response": self.response,
            "action": self.action,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
        }
        if self.degraded:
            body["degraded"] = True
        return body


class ChatService:
    def __init__(
        self,
        *,
        db: Database,
        llm: LLMClient,
        working_memory: WorkingMemory,
        sensors: SensorService,
        config: ChatConfig,
        personality: str,
        clock: Callable[[], float],
        memory: MemoryHooks | None = None,
        strangers: StrangerAllowance | None = None,
    ) -> None:
        self.db = db
        self.strangers = strangers  # what strangers' turns may take of the disk
        self.llm = llm
        self.working_memory = working_memory
        self.sensors = sensors
        self.config = config
        self.personality = personality
        self.clock = clock
        self.memory: MemoryHooks = memory or NoMemory()

    def clean_text(self, text: Any) -> str:
        if not isinstance(text, str):
            raise errors.invalid_request("'text' must be a string", field="text")
        cleaned = text.strip()
        if not cleaned:
            raise errors.invalid_request("'text' is empty", field="text")
        if len(cleaned) > self.config.max_text_chars:
            raise errors.payload_too_large(
                f"'text' is {len(cleaned)} characters; the limit is {self.config.max_text_chars}"
            )
        return cleaned

    async def turn(
        self,
        text: str,
        *,
        device_id: str = "default",
        session_id: str | None = None,
        voice: bool = False,
        stores: Sequence[str] = STORES,
        owner: str = OWNER,
    ) -> TurnResult:
        """Handle one user utterance. The user turn is durable before the LLM is called.

        `voice`: transcribed from /chat/audio; the turn is stored with `ref` VOICE_REF so that
        memory asks before keeping spoken profile fields (seed 001 §10). `stores`: what the
        caller's prompt may draw on (an unknown device: none; lobug.api.auth); they also name
        its trust. `owner`: whose the conversation is (`access.Principal.owner`); with the
        trust, it decides the sessions the turn may join (`conversation.resolve_session`)."""
        # Memory work gives way until the reply is out; a stranger's turn does not hold it back.
        async with self.llm.lane.turn(counts=trust_of(stores) != "public"):
            user, messages = await self._begin(
                text,
                device_id=device_id,
                session_id=session_id,
                voice=voice,
                stores=stores,
                owner=owner,
            )
            trust = trust_of(stores)
            try:
                raw = await self.llm.chat(
                    messages,
                    schema=REPLY_SCHEMA,
                    max_tokens=tokens_for(trust, REPLY_MAX_TOKENS),
                    rank=trust_rank(trust),
                )
            except LLMUnavailable as exc:
                log.warning("LLM unavailable for turn %d (%s); answering degraded", user.id, exc)
                return await self._degraded(user)
            try:
                reply = parse_reply(raw)
                self.llm.counted(REPLY_SCHEMA.name, valid=True)
            except UnusableReply as exc:
                self.llm.counted(REPLY_SCHEMA.name, valid=False)
                log.warning(
                    "unusable model output for turn %d (%s): %s; answering degraded",
                    user.id,
                    exc,
                    snippet(exc.raw),
                )
                return await self._degraded(user)
            await self._finish(user, reply.action, reply.response)
            return TurnResult(reply.response, reply.action, user.session_id, user.id)

    async def stream_turn(
        self,
        text: str,
        *,
        device_id: str = "default",
        session_id: str | None = None,
        voice: bool = False,
        stores: Sequence[str] = STORES,
        owner: str = OWNER,
        categories: frozenset[str] | None = None,
        instructions: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> StreamedTurn:
        """The same turn with the reply streamed as prose (the OpenAI door): the user turn is
        committed, the prompt built and the first piece of the reply received before this
        returns, so an unreachable LLM is an LLMUnavailable here, before anything was sent.
        The reply is committed when the stream ends (`StreamedTurn.finish`).

        `categories`: the caller's category allowlist (None: every category), which the
        prompt's memories keep to like /v1's. `instructions`: the client app's own system
        prompt, added as a prompt section."""
        extra = [f"[Instructions from the client app]\n{instructions}"] if instructions else []
        lane = self.llm.lane
        counts = trust_of(stores) != "public"  # a stranger's turn does not hold memory back
        lane.enter(counts=counts)  # left when the stream is committed, however it ends
        try:
            user, messages = await self._begin(
                text,
                device_id=device_id,
                session_id=session_id,
                voice=voice,
                stores=stores,
                owner=owner,
                categories=categories,
                reply_format=PROSE_FORMAT,
                extra_sections=extra,
            )
        except BaseException:
            lane.leave(counts=counts)
            raise
        trust = trust_of(stores)
        pieces = self.llm.stream(
            messages,
            temperature=temperature,
            max_tokens=tokens_for(trust, max_tokens),
            rank=trust_rank(trust),
        )
        streamed = StreamedTurn(
            user, pieces, self._commit_streamed, on_end=partial(lane.leave, counts=counts)
        )
        try:
            await streamed.start()
        except LLMUnavailable as exc:
            log.warning("LLM unavailable for streamed turn %d (%s)", user.id, exc)
            await streamed.finish()
            raise
        return streamed

    async def ignore(
        self,
        text: str,
        *,
        device_id: str,
        session_id: str | None,
        stores: Sequence[str] = STORES,
        owner: str = OWNER,
    ) -> TurnResult:
        """Log an utterance that needs no answer (e.g. silence after VAD) without an LLM call."""
        device_id = clean_id(device_id, "device_id") or "default"
        session_id = clean_id(session_id, "session_id")
        commit = partial(self._commit_user_turn, trust=trust_of(stores), owner=owner)
        user = await self.db.write(commit, text, device_id, session_id, "IGNORE")
        return TurnResult("", "IGNORE", user.session_id, user.id)

    async def _begin(
        self,
        text: str,
        *,
        device_id: str,
        session_id: str | None,
        voice: bool = False,
        stores: Sequence[str] = STORES,
        owner: str = OWNER,
        categories: frozenset[str] | None = None,
        reply_format: str = REPLY_FORMAT,
        extra_sections: Sequence[str] = (),
    ) -> tuple[TurnRecord, list[Message]]:
        """Everything before the LLM call: commit the user turn, then build its prompt."""
        text = self.clean_text(text)
        device_id = clean_id(device_id, "device_id") or "default"
        session_id = clean_id(session_id, "session_id")
        ref = turns.VOICE_REF if voice else None
        commit = partial(self._commit_user_turn, trust=trust_of(stores), owner=owner)
        user = await self.db.write(commit, text, device_id, session_id, None, ref)
        self.memory.wake()
        await self.working_memory.append(user)

        stable, this_turn = await self.memory.prompt_sections(
            user_id=user.user_id,
            session_id=user.session_id,
            text=text,
            stores=tuple(stores),
            categories=categories,
            window_start=self.working_memory.window_start(user.session_id),
        )
        sensor_line = await self.sensors.summary(device_id)
        history = await self.working_memory.messages(user.session_id)
        # The previous session's gist closes the system message: it is the same all session.
        earlier = await self.working_memory.earlier(user.session_id)
        messages = build_messages(
            self.personality,
            [*stable, *extra_sections, earlier or ""],
            history,
            [*this_turn, sensor_line or ""],
            reply_format,
        )
        return user, messages

    async def _finish(self, user: TurnRecord, action: str, response: str) -> None:
        """Everything after a usable reply: commit it (extraction queued), update the window."""
        assistant = await self.db.write(self._commit_reply, user, action, response)
        self.memory.wake()
        if action == "IGNORE":
            self.working_memory.discard(user.session_id, user.id)
        elif assistant is not None:
            await self.working_memory.append(assistant)

    async def _commit_streamed(self, user: TurnRecord, text: str, complete: bool) -> None:
        """A streamed reply that ran to its end is a reply like any other; one cut short (the
        LLM failed mid-way, or the client went away) is kept as a degraded turn: in the log,
        out of working memory and extraction, the user's words still queued for memory work."""
        text = text.strip()
        if complete and text:
            await self._finish(user, "RESPOND", text)
            return
        await self.db.write(self._commit_reply, user, "RESPOND", text or None, True)
        self.memory.wake()

    # -- transactions (run on the writer thread) -------------------------------------------------
    def _commit_user_turn(
        self,
        conn: Any,
        text: str,
        device_id: str,
        session_id: str | None,
        action: str | None = None,
        ref: str | None = None,
        *,
        trust: str,
        owner: str,
    ) -> TurnRecord:
        now = self.clock()
        if self.strangers is not None:
            self.strangers.admit(conn, trust, text, now)
        sid = turns.resolve_session(
            conn,
            device_id=device_id,
            session_id=session_id,
            now=now,
            idle_s=self.config.session_idle_minutes * 60,
            trust=trust,
            owner=owner,
        )
        user = turns.insert_turn(
            conn,
            session_id=sid,
            role="user",
            text=text,
            ts=now,
            device_id=device_id,
            ref=ref,
            action=action,
        )
        if action != "IGNORE":
            self.memory.on_user_turn(conn, user, now=now)
        return user

    def _commit_reply(
        self,
        conn: Any,
        user: TurnRecord,
        action: str,
        response: str | None,
        degraded: bool = False,
    ) -> TurnRecord | None:
        now = self.clock()
        turns.set_action(conn, user.id, action)
        assistant = None
        if response is not None:
            if self.strangers is not None:
                self.strangers.count(conn, user.session_id, response, now)
            assistant = turns.insert_turn(
                conn,
                session_id=user.session_id,
                role="assistant",
                text=response,
                ts=max(now, user.ts),
                device_id=user.device_id,
                action=action,
                degraded=degraded,
                # Linked now: by the time the model has answered, another device's turns
                # may sit between the two ids.
                reply_to=user.id,
            )
        if action != "IGNORE":
            # A degraded reply is no exchange to learn from: the user's words are still
            # extracted, later, when the LLM is back.
            self.memory.on_exchange(conn, user, None if degraded else assistant, now=now)
        return assistant

    async def _degraded(self, user: TurnRecord) -> TurnResult:
        apology = self.config.apology
        try:
            await self.db.write(self._commit_reply, user, "RESPOND", apology or None, True)
            self.memory.wake()
        except Exception:  # noqa: BLE001 - the user turn is already stored; answer anyway
            log.exception("could not record the degraded reply for turn %d", user.id)
        return TurnResult(apology, "RESPOND", user.session_id, user.id, degraded=True)


def clean_id(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise errors.invalid_request(f"'{name}' must be a string", field=name)
    value = value.strip()
    if not value:
        return None
    if len(value) > MAX_ID_CHARS or any(ord(ch) < 32 for ch in value):
        raise errors.invalid_request(
            f"'{name}' must be at most {MAX_ID_CHARS} printable characters", field=name
        )
    return value
