"""Wyoming `handle`: a transcript's text → the same turn as /chat/text, its reply streamed as
handled-start, handled-chunk…, handled (the whole text, for clients that predate streaming) and
handled-stop; who may see which memories decided by the peer's address."""

from __future__ import annotations

import hashlib
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from wyoming.event import Event
from wyoming.handle import Handled, HandledChunk, HandledStart, HandledStop

from lobug.chat.service import ChatService
from lobug.llm.client import LLMUnavailable

log = logging.getLogger(__name__)

DEVICE_ID = "wyoming"
SESSION_PREFIX = "wyoming-"
_MAX_CONVERSATION_ID = 64

Send = Callable[[Event], Awaitable[None]]


def session_for(context: Any, fallback: str) -> str:
    """The session of a Wyoming conversation: its `conversation_id` (Home Assistant sends one
    per conversation) or else the connection's own. Prefixed, so that a client that picks its
    conversation id can never land in another door's session and read its working memory."""
    cid = context.get("conversation_id") if isinstance(context, dict) else None
    if not isinstance(cid, str | int) or not str(cid).strip():
        return fallback
    cid = str(cid).strip()
    if len(cid) > _MAX_CONVERSATION_ID or not cid.isprintable():
        cid = hashlib.sha256(cid.encode()).hexdigest()[:32]
    return SESSION_PREFIX + cid


def in_networks(host: str | None, networks: Sequence[str]) -> bool:
    """Whether a peer address is one of `wyoming.trusted_hosts` (addresses or networks)."""
    if not host or not networks:
        return False
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:192.168.1.20 from a dual-stack bind
    candidates = [address, mapped] if mapped is not None else [address]
    return any(a in ipaddress.ip_network(n, strict=False) for a in candidates for n in networks)


async def reply(
    chat: ChatService,
    send: Send,
    text: str,
    *,
    session_id: str,
    stores: Sequence[str],
    owner: str,
    context: dict[str, Any],
) -> None:
    """One turn. The user's words are committed before the model is called; when the model is
    unreachable the listener hears chat.apology (as from /chat/text) and memory work for the
    words waits for the model. An ApiError (empty or over-long text, full disk) propagates."""
    apology = chat.config.apology
    try:
        turn = await chat.stream_turn(
            text,
            device_id=DEVICE_ID,
            session_id=session_id,
            voice=True,
            stores=stores,
            owner=owner,
        )
    except LLMUnavailable as exc:
        log.warning("Wyoming turn answered with the apology: %s", exc)
        await _whole(send, apology, context)
        return
    said: list[str] = []
    try:
        await send(HandledStart(context=context).event())
        try:
            async for piece in turn:
                said.append(piece)
                await send(HandledChunk(text=piece).event())
        except LLMUnavailable:  # cut short: what was said stays said, then the apology
            tail = apology if not said or said[-1][-1:].isspace() else f" {apology}"
            said.append(tail)
            await send(HandledChunk(text=tail).event())
        await turn.finish()  # committed before the listener hears the end
        await send(Handled(text="".join(said).strip(), context=context).event())
        await send(HandledStop().event())
    finally:
        await turn.finish()  # a listener who left: what was received is still committed


async def _whole(send: Send, text: str, context: dict[str, Any]) -> None:
    await send(HandledStart(context=context).event())
    await send(HandledChunk(text=text).event())
    await send(Handled(text=text, context=context).event())
    await send(HandledStop().event())
