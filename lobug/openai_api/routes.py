"""POST /v1/chat/completions and GET /v1/models: the chat turn behind OpenAI's API shapes.

The turn is ChatService's (working memory, retrieval, base memory, the user turn committed
before the model is called, extraction queued after), asked for prose instead of the device's
JSON reply: the words are passed on as they arrive, which is what lets text-to-speech start on
the first sentence, and a client sent its text on purpose, so the device's IGNORE has no use.
"""

from __future__ import annotations

import logging
import secrets

from aiohttp import web

from lobug import errors, keys
from lobug.access import STORES_BY_TRUST
from lobug.api.auth import principal_of
from lobug.api.bodies import read_json_object
from lobug.chat.stream import StreamedTurn
from lobug.llm.client import LLMUnavailable
from lobug.openai_api import shapes, sse
from lobug.openai_api.errors import openai_error

log = logging.getLogger(__name__)

routes = web.RouteTableDef()

SESSION_HEADER = "X-Session-Id"
DEVICE_ID = "openai"  # the turns' device: what the log and the browser show as the door
# The metrics outcome of a stream the client ended (hung up, or stopped reading): nginx's 499.
CLIENT_CLOSED = "client_closed"
GOODBYE_S = 1.0  # at shutdown, for the last event to a client that still reads


@routes.get("/v1/models")
async def list_models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [shapes.model_object(_started(request))]})


@routes.get("/v1/models/{model}")
async def get_model(request: web.Request) -> web.Response:
    _check_model(request, request.match_info["model"])
    return web.json_response(shapes.model_object(_started(request)))


@routes.post("/v1/chat/completions")
async def chat_completions(request: web.Request) -> web.StreamResponse:
    app = request.app
    config = app[keys.CONFIG]
    chat = app[keys.CHAT]
    body = await read_json_object(request, config.server.max_json_bytes)
    wanted = shapes.parse_chat_request(body, max_instruction_chars=config.chat.max_text_chars)
    _check_model(request, wanted.model)
    session_id = request.headers.get(SESSION_HEADER) or wanted.user
    principal = principal_of(request)
    try:
        turn = await chat.stream_turn(
            wanted.text,
            device_id=DEVICE_ID,
            session_id=session_id,
            stores=STORES_BY_TRUST[principal.trust],
            owner=principal.owner,  # each token its own conversations, whatever its trust
            categories=app[keys.ACCESS].policy.allowed(principal),
            instructions=wanted.instructions,
            temperature=wanted.temperature,
            max_tokens=wanted.max_tokens,
        )
    except LLMUnavailable as exc:
        raise _unavailable(request, exc) from None
    headers = {SESSION_HEADER: turn.user.session_id, "X-Turn-Id": str(turn.user.id)}
    cid, created = f"chatcmpl-{secrets.token_hex(12)}", int(chat.clock())
    if wanted.stream:
        return await _stream(request, turn, cid, created, headers)
    try:
        async for _ in turn:
            pass
    except LLMUnavailable as exc:
        raise _unavailable(request, exc) from None
    finally:
        await turn.finish()
    request[keys.TURN_OUTCOME] = "ok"
    return web.json_response(shapes.completion(cid, created, turn.text.strip()), headers=headers)


async def _stream(
    request: web.Request, turn: StreamedTurn, cid: str, created: int, headers: dict[str, str]
) -> web.StreamResponse:
    """The reply as SSE. However it ends (whole, the LLM failing, the client hanging up or
    stopping to read, shutdown), what was received is committed, once (`turn.finish`)."""
    stream = sse.Stream(request, headers)
    try:
        async with stream:
            await stream.send(shapes.chunk(cid, created, {"role": "assistant"}))
            try:
                async for piece in turn:
                    await stream.send(shapes.chunk(cid, created, {"content": piece}))
            except LLMUnavailable as exc:
                # Headers are gone: the error travels as an event, as OpenAI's streams do.
                last = openai_error(_unavailable(request, exc).body()["error"], 503)
            else:
                last = shapes.chunk(cid, created, {}, "stop")
                request[keys.TURN_OUTCOME] = "ok"
            await turn.finish()  # committed before the client hears the end of the stream
            await stream.send(last, done=True)
            await stream.end()
    except sse.Gone as gone:
        # A normal end, not an error: the client left (or stopped reading) mid-answer.
        log.info("turn %d: the stream ended early: %s", turn.user.id, gone)
        request[keys.TURN_OUTCOME] = CLIENT_CLOSED
        await turn.finish()
        stream.drop()  # after the commit: aiohttp may cancel a handler whose client is gone
    except sse.Stopped:
        log.info("turn %d: the stream was stopped by shutdown", turn.user.id)
        request[keys.TURN_OUTCOME] = "degraded"  # cut short, as when the LLM fails mid-way
        await turn.finish()
        await _goodbye(stream)
    finally:
        await turn.finish()  # what was received is committed, marked cut short if it was
    return stream.response


async def _goodbye(stream: sse.Stream) -> None:
    """Tell a client that still reads that the daemon is stopping (briefly: it is)."""
    if not stream.response.prepared:
        return
    error = errors.unavailable("the daemon is shutting down; what was said so far is kept")
    try:
        await stream.send(openai_error(error.body()["error"], 503), done=True, timeout=GOODBYE_S)
        await stream.end(GOODBYE_S)
    except sse.Gone:
        stream.drop()


def _unavailable(request: web.Request, exc: LLMUnavailable) -> errors.ApiError:
    request[keys.TURN_OUTCOME] = "degraded"  # the turn is stored; the model failed it
    return errors.ApiError(
        503,
        "llm_unavailable",
        f"the language model is unavailable ({exc}); your message was stored and will be "
        "remembered",
    )


def _check_model(request: web.Request, model: str) -> None:
    """`lobug`, or the model it runs on (clients configured with that name work too)."""
    if model not in (shapes.MODEL_ID, request.app[keys.LLM].model):
        raise errors.ApiError(
            404,
            "model_not_found",
            f"the model {model!r} does not exist; this server offers {shapes.MODEL_ID!r}",
            details={"param": "model"},
        )


def _started(request: web.Request) -> int:
    return int(request.app[keys.CHAT].clock())
