"""A protocol-faithful fake OpenAI-compatible LLM server (llama-server, LM Studio, vLLM): the
same request and response shapes as theirs, error bodies, server-sent-event streaming with
`data:` chunks, `usage` and `[DONE]`, and llama-server's `timings`.

It answers from the same scripts and memory defaults as the fake Ollama (tests/fake_ollama.py),
so a test written for one backend runs on the other. A request with `response_format` of type
`json_schema` gets an answer of that schema, as a grammar-constrained server gives; with
`ignore_schema` set it answers as if the schema were not there (a server that ignores it).

Run it standalone: `python tests/fake_openai_llm.py --port 11600`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from aiohttp import web
from fake_ollama import (
    RECORD,
    FakeOllamaState,
    answer_content,
    fake_embedding,
    request_task,
)


@dataclass
class FakeOpenAIState(FakeOllamaState):
    """The fake Ollama's switches, plus what only this protocol has."""

    models: list[str] = field(default_factory=lambda: ["gemma-3-270m", "all-minilm"])
    ignore_schema: bool = False  # answer as if `response_format` were not sent
    # llama-server's mid-stream failure is an `error:` event; OpenAI's a `data:` error object.
    stream_error_style: str = "data"  # data | llama
    # Set: a request without `Authorization: Bearer <api_key>` gets 401 quoting the key it
    # sent, whole (OpenAI's "Incorrect API key provided: …"; some proxies do not mask it).
    api_key: str | None = None


def error_body(message: str, kind: str, code: str | int | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def constrained(content: str, schema: dict[str, Any]) -> str:
    """What a grammar-constrained server answers: the content when it fits the schema, else
    the smallest value that does (a model forced into the shape says as little as it can)."""
    try:
        jsonschema.validate(json.loads(content), schema)
        return content
    except (json.JSONDecodeError, jsonschema.ValidationError):
        return json.dumps(_smallest(schema))


def _smallest(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "array":
        return [_smallest(schema["items"]) for _ in range(schema.get("minItems", 0))]
    if kind == "object":
        props = schema.get("properties", {})
        return {key: _smallest(props[key]) for key in schema.get("required", [])}
    if kind == "integer":
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return ""


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt.get("json_schema", {}).get("schema")
        return schema if isinstance(schema, dict) else None
    return None


def _usage(body: dict[str, Any], content: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", ""))) // 4 for m in body.get("messages", []))
    completion = max(1, len(content) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def no_such_model(model: str) -> web.Response:
    """A real server's answer for a model it does not serve (404 `model_not_found`)."""
    return web.json_response(
        error_body(f"The model `{model}` does not exist.", "invalid_request_error",
                   "model_not_found"),
        status=404,
    )  # fmt: skip


def build_app(state: FakeOpenAIState) -> web.Application:
    async def faults(request: web.Request) -> web.StreamResponse | None:
        record = {
            "path": request.path,
            "body": await _body(request),
            "auth": request.headers.get("Authorization"),
            "started": time.monotonic(),
        }
        state.requests.append(record)
        request[RECORD] = record
        if state.redirect is not None:
            location = state.redirect_to + request.path_qs
            return web.Response(status=state.redirect, headers={"Location": location})
        sent = (request.headers.get("Authorization") or "").removeprefix("Bearer ")
        if state.api_key is not None and sent != state.api_key:
            return web.json_response(
                error_body(
                    f"Incorrect API key provided: {sent}. You can find your API key in your"
                    " account settings.",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
                status=401,
            )
        if state.fail_next > 0:
            state.fail_next -= 1
            return web.json_response(
                error_body("fake transient failure", "server_error", 500), status=500
            )
        if state.mode == "down":
            return web.json_response(error_body("fake server is down", "server_error"), status=500)
        if state.mode == "reset":
            assert request.transport is not None
            request.transport.abort()
            raise asyncio.CancelledError
        if state.mode == "slow" or state.delay_s:
            await asyncio.sleep(state.delay_s or 30.0)
        return None

    async def models(request: web.Request) -> web.StreamResponse:
        if (early := await faults(request)) is not None:
            return early
        data = [
            {"id": m, "object": "model", "created": int(time.time()), "owned_by": "llamacpp"}
            for m in state.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def chat(request: web.Request) -> web.StreamResponse:
        if (early := await faults(request)) is not None:
            return early
        record = request[RECORD]
        body = record["body"]
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return web.json_response(
                error_body("'messages' is required", "invalid_request_error", 400), status=400
            )
        model = body.get("model", "")
        if model not in state.models:
            return no_such_model(model)
        if state.mode == "malformed":
            return web.Response(text='{"id": "x", "choices": [', content_type="application/json")
        task = request_task(body)
        try:
            begun = time.monotonic()
            while task is not None and time.monotonic() - begun < state.memory_delay_s:
                await asyncio.sleep(0.02)
            if task is not None and state.memory_mode == "down":
                return web.json_response(
                    error_body("fake server is down", "server_error"), status=500
                )
            content = answer_content(state, body, task)
            schema = _schema(body)
            if schema is not None and not state.ignore_schema:
                content = constrained(content, schema)
            if body.get("stream"):
                return await _stream(request, body, model, content, state)
            return web.json_response(
                {
                    "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": _usage(body, content),
                    "timings": {"prompt_ms": 1.0, "predicted_ms": 1.0},
                }
            )
        finally:
            record["ended"] = time.monotonic()

    async def embeddings(request: web.Request) -> web.StreamResponse:
        if (early := await faults(request)) is not None:
            return early
        body = request[RECORD]["body"]
        model = body.get("model", "") if isinstance(body, dict) else ""
        if model not in state.models:
            return no_such_model(model)
        texts = body.get("input", "")
        texts = [texts] if isinstance(texts, str) else list(texts)
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(t, state.embed_dim)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(t) // 4 for t in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    app = web.Application()
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/embeddings", embeddings)
    return app


async def _body(request: web.Request) -> Any:
    if request.method != "POST":
        return None
    try:
        return await request.json()
    except json.JSONDecodeError:
        return None


async def _stream(
    request: web.Request,
    body: dict[str, Any],
    model: str,
    content: str,
    state: FakeOpenAIState,
) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    ident, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())

    async def send(choice: dict[str, Any] | None, **extra: Any) -> None:
        chunk = {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [choice] if choice is not None else [],
            **extra,
        }
        await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

    await send({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None})
    words = content.split(" ") if content else []
    if state.stream_endless:
        words = itertools.cycle(words or ["la"])  # type: ignore[assignment]
    for i, word in enumerate(words):
        if state.stream_cut_after is not None and i >= state.stream_cut_after:
            if state.stream_cut == "error":
                error = error_body("fake server: the model stopped mid-stream", "server_error")
                field_name = "error" if state.stream_error_style == "llama" else "data"
                payload = error["error"] if field_name == "error" else error
                await response.write(f"{field_name}: {json.dumps(payload)}\n\n".encode())
                await response.write_eof()
                return response
            assert request.transport is not None
            request.transport.abort()
            raise asyncio.CancelledError
        if state.stream_delay_s and i:
            await asyncio.sleep(state.stream_delay_s)
        if state.stream_endless:
            await asyncio.sleep(0)  # the client's read, and its hang-up, get their turn
        piece = word + " " if state.stream_endless or i < len(words) - 1 else word
        await send({"index": 0, "delta": {"content": piece}, "finish_reason": None})
    await send({"index": 0, "delta": {}, "finish_reason": "stop"})
    if (body.get("stream_options") or {}).get("include_usage"):
        await send(None, usage=_usage(body, content))
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11600)
    parser.add_argument("--embed-dim", type=int, default=384)
    parser.add_argument("--ignore-schema", action="store_true")
    args = parser.parse_args()
    state = FakeOpenAIState(embed_dim=args.embed_dim, ignore_schema=args.ignore_schema)
    web.run_app(build_app(state), host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
