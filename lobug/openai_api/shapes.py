"""OpenAI's chat request, read strictly, and the completion, chunk and model objects we answer."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lobug import errors

MODEL_ID = "lobug"  # the memory-keeping assistant; Ollama's model behind it is a detail
INSTRUCTION_ROLES = ("system", "developer")


@dataclass(frozen=True)
class ChatRequest:
    model: str
    text: str  # the last user message: the turn
    instructions: str | None  # the client's system/developer messages, joined
    stream: bool
    temperature: float | None
    max_tokens: int | None
    user: str | None


def parse_chat_request(body: dict[str, Any], *, max_instruction_chars: int) -> ChatRequest:
    """The fields Lo-Bug uses; unknown ones are ignored, as OpenAI-compatible servers do.

    Only the last message is the turn: the session's history is Lo-Bug's working memory (the
    database is the truth), so earlier user/assistant messages a client resends are not read
    again: they would appear twice, and a client could put words in the assistant's mouth."""
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        raise _bad("'model' is required (GET /v1/models lists it)", "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _bad("'messages' must be a non-empty array", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _bad(f"messages[{i}] must be an object with a 'role'", "messages")
    last = messages[-1]
    if last["role"] != "user":
        raise _bad("the last message must have role 'user' (it is the turn)", "messages")
    text = _content(last, len(messages) - 1)
    instructions = "\n\n".join(
        _content(m, i) for i, m in enumerate(messages) if m["role"] in INSTRUCTION_ROLES
    ).strip()
    n = body.get("n", 1)
    if n not in (1, None):
        raise _bad("only n=1 is supported", "n")
    if body.get("tools") or body.get("functions"):
        raise _bad("tool and function calls are not supported", "tools")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _bad("'stream' must be a boolean", "stream")
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise _bad("'user' must be a string", "user")
    return ChatRequest(
        model=model.strip(),
        text=text,
        instructions=instructions[:max_instruction_chars] or None,
        stream=stream,
        temperature=_number(body.get("temperature"), "temperature", 0.0, 2.0),
        max_tokens=_max_tokens(body),
        user=user,
    )


def _content(message: dict[str, Any], index: int) -> str:
    """A message's text: a string, or an array of parts of which only `text` parts are read."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise _bad(f"messages[{index}]: only text content parts are supported", "messages")
            if not isinstance(part.get("text"), str):
                raise _bad(f"messages[{index}]: a text part needs a 'text' string", "messages")
            texts.append(part["text"])
        return "\n".join(texts)
    raise _bad(f"messages[{index}].content must be a string or an array of parts", "messages")


def _number(value: Any, name: str, low: float, high: float) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _bad(f"'{name}' must be a number", name)
    if not low <= value <= high:
        raise _bad(f"'{name}' must be between {low:g} and {high:g}", name)
    return float(value)


def _max_tokens(body: dict[str, Any]) -> int | None:
    name = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000:
        raise _bad(f"'{name}' must be a positive integer", name)
    return value


def _bad(message: str, param: str) -> errors.ApiError:
    return errors.invalid_request(message, param=param)


def completion(cid: str, created: int, text: str) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }


def chunk(
    cid: str, created: int, delta: dict[str, str], finish_reason: str | None = None
) -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def model_object(created: int) -> dict[str, Any]:
    return {"id": MODEL_ID, "object": "model", "created": created, "owned_by": "lobug"}
