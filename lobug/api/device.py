"""The frozen firmware routes: /chat/text, /chat/audio, /context/sensors, /health."""

from __future__ import annotations

from aiohttp import web

from lobug import errors, keys
from lobug.api.auth import admit_device
from lobug.api.bodies import read_json_object, read_limited
from lobug.chat.service import clean_id

routes = web.RouteTableDef()


@routes.post("/chat/text")
async def chat_text(request: web.Request) -> web.Response:
    app = request.app
    body = await read_json_object(request, app[keys.CONFIG].server.max_json_bytes)
    device_id = clean_id(body.get("device_id"), "device_id") or "default"
    caller = await admit_device(request, device_id, turn=True)
    if "text" not in body:
        raise errors.invalid_request("'text' is required", field="text")
    result = await app[keys.CHAT].turn(
        body["text"],
        device_id=device_id,
        session_id=body.get("session_id"),
        stores=caller.stores,
        owner=caller.owner,
    )
    return web.json_response(result.body())


@routes.post("/chat/audio")
async def chat_audio(request: web.Request) -> web.Response:
    app = request.app
    speech, chat = app[keys.SPEECH], app[keys.CHAT]
    device_id = clean_id(request.query.get("device_id"), "device_id") or "default"
    session_id = clean_id(request.query.get("session_id"), "session_id")
    caller = await admit_device(request, device_id, turn=True)  # before the body is read
    # The request's own problems before the model's availability (transcribe_body): 415 and
    # 413 (Content-Length, or the body overflowing while read) come before any 503.
    speech.check_content_type(request.headers.get("Content-Type"))
    limit = app[keys.CONFIG].speech.max_audio_bytes
    body = await read_limited(request, limit, "audio body")
    transcript = await speech.transcribe_body(
        body,
        request.headers.get("Content-Type"),
        request.headers.get("X-Sample-Rate"),
        trust=caller.trust,  # the names Whisper is told to expect: only those it may read
    )
    text = transcript.text.strip()
    if not text:
        result = await chat.ignore(
            "", device_id=device_id, session_id=session_id, stores=caller.stores,
            owner=caller.owner,
        )  # fmt: skip
    else:
        result = await chat.turn(
            text, device_id=device_id, session_id=session_id, voice=True,
            stores=caller.stores, owner=caller.owner,
        )  # fmt: skip
    return web.json_response({"transcript": text, **result.body()})


@routes.post("/context/sensors")
async def context_sensors(request: web.Request) -> web.Response:
    app = request.app
    sensors = app[keys.SENSORS]
    body = await read_json_object(request, app[keys.CONFIG].sensors.max_bytes + 1024)
    device_id = clean_id(body.pop("device_id", None), "device_id") or "default"
    await admit_device(request, device_id, turn=False)
    await sensors.store(device_id, body)
    return web.json_response({"status": "ok"})


@routes.get("/health")
async def health(request: web.Request) -> web.Response:
    return web.json_response(await request.app[keys.HEALTH].check())
