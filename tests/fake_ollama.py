"""A protocol-faithful fake Ollama server: same REST shapes and error bodies, with fault switches.

Run it standalone for benchmarks and smoke tests: `python tests/fake_ollama.py --port 11500`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import itertools
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from lobug.memory.graph import ner_llm
from lobug.memory.instructions import task_of
from lobug.memory.reflect.instructions import task_of as thinking_task_of

ChatScript = Callable[[dict[str, Any]], str]
RECORD = web.RequestKey("record", dict)


@dataclass
class FakeOllamaState:
    """Switches a test flips; every request is recorded in `requests`."""

    models: list[str] = field(
        default_factory=lambda: ["llama3.2:latest", "nomic-embed-text:latest", "all-minilm:latest"]
    )
    mode: str = "ok"  # ok | down (500) | slow | malformed | reset | empty
    delay_s: float = 0.0
    reply: str | None = None  # fixed content for chat; None → a JSON RESPOND echo
    script: ChatScript | None = None  # content from the request (extraction, summaries…)
    embed_dim: int = 768
    embed_nan: bool = False  # vectors of NaN, as a server whose backend broke answers them
    fail_next: int = 0  # the next N requests answer 500, then normal service resumes
    # Memory prompts (extraction, summaries, distillation) only: background work can be held
    # or failed while device turns keep working.
    memory_mode: str = "ok"  # ok | down (500)
    memory_delay_s: float = 0.0
    # The "newer wins" judge prompt is answered by `judge` (see `judge_by`); else by `script`
    # only when it has a `judge` attribute (it knows the prompt), so a script written for the
    # other prompts never sees it; else MEMORY_DEFAULTS["judge"].
    judge: ChatScript | None = None
    # Background thinking (`reflect`, `insight`) is answered by `thinking`; else by `script`
    # only when it has an attribute of the task's name; else MEMORY_DEFAULTS.
    thinking: ChatScript | None = None
    # The enrichment's LLM NER prompt (graph/ner_llm.py) is answered by `ner`; else "{}".
    ner: ChatScript | None = None
    # A streamed chat reply (stream: true) is cut after this many content chunks: "reset"
    # drops the connection, "error" sends Ollama's mid-stream `{"error": …}` line and ends.
    stream_cut_after: int | None = None
    stream_cut: str = "reset"  # reset | error
    stream_delay_s: float = 0.0  # between streamed chunks
    # Set: every request is answered with this redirect status to `redirect_to` + its path
    # (a server moved, or an attacker's proxy: a client must not follow it with the prompt).
    redirect: int | None = None
    redirect_to: str = ""
    # A streamed reply that never ends, whatever num_predict says (a server that ignores it).
    stream_endless: bool = False
    # One chat at a time, as a local server with one slot: the next waits until the one
    # answering ends or its client hangs up.
    one_slot: bool = False
    slot: asyncio.Lock = field(default_factory=asyncio.Lock)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def prompt_text(self, index: int = -1) -> str:
        """What a device turn's prompt tells the model around the conversation: the system
        message (stable sections) and the last user message (this turn's sections, then the
        user's words: lobug.chat.prompt), joined."""
        messages = self.chat_calls()[index]["body"]["messages"]
        return str(messages[0]["content"]) + "\n\n" + str(messages[-1]["content"])

    def conversation(self, index: int = -1) -> list[str]:
        """The conversation a device turn's prompt shows, as said: the window's messages, the
        last one without this turn's context block before the user's words."""
        said = [str(m["content"]) for m in self.chat_calls()[index]["body"]["messages"][1:]]
        return [*said[:-1], said[-1].rsplit("\n\n", 1)[-1]] if said else []

    def chat_calls(self) -> list[dict[str, Any]]:
        """The device turns' chat calls (memory jobs' calls are in `memory_calls`)."""
        return [r for r in self._all_chats() if request_task(r["body"]) is None]

    def memory_calls(self, task: str | None = None) -> list[dict[str, Any]]:
        """Calls with a memory prompt: task `extract`, `summarize`, `distill`, `judge` or any."""
        calls = [r for r in self._all_chats() if request_task(r["body"]) is not None]
        return [r for r in calls if task is None or request_task(r["body"]) == task]

    def timed_calls(self) -> list[dict[str, Any]]:
        """Every answered chat call with its `task` (None: a turn), `started` and `ended`."""
        return [{**r, "task": request_task(r["body"])} for r in self._all_chats() if "ended" in r]

    def _all_chats(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] in CHAT_PATHS]


CHAT_PATHS = ("/api/chat", "/v1/chat/completions")  # Ollama's, and the OpenAI fake's


def request_task(body: Any) -> str | None:
    """The memory task a chat request's prompt is (None: a device turn)."""
    if not isinstance(body, dict):
        return None
    messages = body.get("messages", [])
    return task_of(messages) or thinking_task_of(messages) or ner_task_of(messages)


def ner_task_of(messages: Any) -> str | None:
    """`ner` for the LLM NER provider's prompt (graph/ner_llm.py); None for anything else."""
    system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    return ner_llm.TASK if system == ner_llm.SYSTEM else None


# What the fake answers to memory prompts when no script is set: valid, and uneventful.
MEMORY_DEFAULTS = {
    "extract": "[]",
    "summarize": "The user and Lo-Bug had a short conversation. The user shared a few details "
    "about their day and Lo-Bug answered their questions.",
    "distill": "User Profile:\n- (nothing known yet)\nPreferences:\n- (none recorded)\n"
    "Ongoing Topics:\n- (none)\nKey History:\n- (none)",
    # No labels: every pair goes to the heuristic judge, as before the LLM judge existed.
    "judge": "[]",
    "reflect": "This week the user talked about everyday things; nothing stood out as a "
    "new theme worth following up.",
    "insight": '{"insights": []}',
    "ner": "{}",
    # Seed 002's record of an ended session (memory/upkeep/sessions.py).
    "session": '{"request": "The user chatted with Lo-Bug.", "outcome": "Lo-Bug answered.", '
    '"decisions": [], "open_items": []}',
}
THINKING_TASKS = ("reflect", "insight")

_NEW_FACT = re.compile(r"^New fact (\d+): (.*)$")
_STORED_FACT = re.compile(r"^\s+stored (\d+): (.*)$")


def judge_pairs(body: dict[str, Any]) -> list[tuple[int, str, int, str]]:
    """The pairs a judge prompt offers: (new number, new text, stored id, stored text)."""
    messages = body.get("messages", [])
    prompt = next((m["content"] for m in messages if m.get("role") == "user"), "")
    pairs: list[tuple[int, str, int, str]] = []
    current: tuple[int, str] | None = None
    for line in prompt.splitlines():
        if new := _NEW_FACT.match(line):
            current = (int(new[1]), new[2])
        elif (old := _STORED_FACT.match(line)) and current is not None:
            pairs.append((*current, int(old[1]), old[2]))
    return pairs


def judge_by(label: Callable[[str, str], str]) -> ChatScript:
    """A judge answering every offered pair with `label(new text, stored text)`."""

    def answer(body: dict[str, Any]) -> str:
        return json.dumps(
            [
                {"new": number, "stored": stored_id, "label": label(new, old)}
                for number, new, stored_id, old in judge_pairs(body)
            ]
        )

    return answer


def fake_embedding(text: str, dim: int) -> list[float]:
    """Deterministic bag-of-words vector: texts sharing words are close, as with a real model."""
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vec[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def _model_known(state: FakeOllamaState, name: str) -> bool:
    wanted = name if ":" in name else f"{name}:latest"
    return wanted in state.models


def _default_reply(body: dict[str, Any]) -> str:
    last = next((m for m in reversed(body.get("messages", [])) if m.get("role") == "user"), {})
    # The user's words close the last user message, after this turn's context block.
    echo = f"You said: {str(last.get('content', '')).rsplit(chr(10) * 2, 1)[-1]}"
    if not asked_json(body):  # asked for prose (the OpenAI door), as a model obeys
        return echo
    return json.dumps({"action": "RESPOND", "response": echo})


def asked_json(body: dict[str, Any]) -> bool:
    """Whether the request constrains the answer to JSON: Ollama's `format` ("json" or a JSON
    schema), OpenAI's `response_format`."""
    fmt = body.get("format", body.get("response_format"))
    return fmt == "json" or (isinstance(fmt, dict) and fmt.get("type") != "text")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())


def build_app(state: FakeOllamaState) -> web.Application:
    async def faults(request: web.Request) -> web.StreamResponse | None:
        record = {"path": request.path, "body": await _body(request), "started": time.monotonic()}
        state.requests.append(record)
        request[RECORD] = record  # its own, however many requests are in flight
        if state.redirect is not None:
            location = state.redirect_to + request.path_qs
            return web.Response(status=state.redirect, headers={"Location": location})
        if state.fail_next > 0:
            state.fail_next -= 1
            return web.json_response({"error": "fake transient failure"}, status=500)
        if state.mode == "down":
            return web.json_response({"error": "fake ollama is down"}, status=500)
        if state.mode == "reset":
            assert request.transport is not None
            request.transport.abort()  # the client sees a connection reset
            raise asyncio.CancelledError
        if state.mode == "slow" or state.delay_s:
            await asyncio.sleep(state.delay_s or 30.0)
        return None

    async def version(request: web.Request) -> web.StreamResponse:
        return await faults(request) or web.json_response({"version": "0.12.0"})

    async def tags(request: web.Request) -> web.StreamResponse:
        if (early := await faults(request)) is not None:
            return early
        models = [
            {
                "name": m,
                "model": m,
                "modified_at": _now(),
                "size": 1000,
                "digest": hashlib.sha256(m.encode()).hexdigest(),
                "details": {"format": "gguf", "family": "llama", "parameter_size": "3B"},
            }
            for m in state.models
        ]
        return web.json_response({"models": models})

    async def chat(request: web.Request) -> web.StreamResponse:
        if (early := await faults(request)) is not None:
            return early
        record = request[RECORD]
        body = record["body"]
        if not isinstance(body, dict):
            return web.json_response({"error": "invalid JSON body"}, status=400)
        model = body.get("model", "")
        if not _model_known(state, model):
            return web.json_response(
                {"error": f"model '{model}' not found, try pulling it first"}, status=404
            )
        if state.mode == "malformed":
            return web.Response(
                text='{"model": "x", "message": {"role": ', content_type="application/json"
            )
        task = request_task(body)
        try:
            async with state.slot if state.one_slot else contextlib.nullcontext():
                return await answer(request, body, model, task)
        finally:
            record["ended"] = time.monotonic()

    async def answer(
        request: web.Request, body: dict[str, Any], model: str, task: str | None
    ) -> web.StreamResponse:
        begun = time.monotonic()  # a test may shorten the delay of a call already waiting
        while task is not None and time.monotonic() - begun < state.memory_delay_s:
            await asyncio.sleep(0.02)
        if task is not None and state.memory_mode == "down":
            return web.json_response({"error": "fake ollama is down"}, status=500)
        content = answer_content(state, body, task)
        base = {"model": model, "created_at": _now()}
        if body.get("stream", True):
            return await _stream_chat(request, base, content, state)
        return web.json_response(
            {
                **base,
                "message": {"role": "assistant", "content": content},
                "done": True,
                "done_reason": "stop",
                "total_duration": 1000,
                "eval_count": max(1, len(content) // 4),
            }
        )

    async def embed(request: web.Request) -> web.StreamResponse:
        if (early := await faults(request)) is not None:
            return early
        body = request[RECORD]["body"]
        model = body.get("model", "") if isinstance(body, dict) else ""
        if not _model_known(state, model):
            return web.json_response(
                {"error": f"model '{model}' not found, try pulling it first"}, status=404
            )
        texts = body.get("input", "")
        texts = [texts] if isinstance(texts, str) else list(texts)
        vectors = [fake_embedding(t, state.embed_dim) for t in texts]
        if state.embed_nan:
            vectors = [[math.nan] * state.embed_dim for _ in texts]
        return web.json_response({"model": model, "embeddings": vectors, "total_duration": 1000})

    app = web.Application()
    app.router.add_get("/api/version", version)
    app.router.add_get("/api/tags", tags)
    app.router.add_post("/api/chat", chat)
    app.router.add_post("/api/embed", embed)
    return app


def answer_content(state: FakeOllamaState, body: dict[str, Any], task: str | None) -> str:
    """What the model says to a chat request: the test's scripts, else the defaults."""
    if task == "ner":
        content = state.ner(body) if state.ner is not None else MEMORY_DEFAULTS["ner"]
    elif task == "judge" and state.judge is not None:
        content = state.judge(body)
    elif task == "judge" and not hasattr(state.script, "judge"):
        content = MEMORY_DEFAULTS["judge"]
    elif task == "session" and not hasattr(state.script, "session"):
        content = MEMORY_DEFAULTS["session"]  # only a script that knows the prompt answers it
    elif task in THINKING_TASKS and state.thinking is not None:
        content = state.thinking(body)
    elif task in THINKING_TASKS and not hasattr(state.script, task or ""):
        content = MEMORY_DEFAULTS[task or ""]
    elif state.script:
        content = state.script(body)
    elif task is not None:
        content = MEMORY_DEFAULTS[task]
    else:
        content = state.reply if state.reply is not None else _default_reply(body)
    return "" if state.mode == "empty" else content


async def _body(request: web.Request) -> Any:
    if request.method != "POST":
        return None
    try:
        return await request.json()
    except json.JSONDecodeError:
        return None


async def _stream_chat(
    request: web.Request, base: dict[str, Any], content: str, state: FakeOllamaState
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    words = content.split(" ") if content else [""]
    if state.stream_endless:
        words = itertools.cycle(words)  # type: ignore[assignment]
    for i, word in enumerate(words):
        if state.stream_cut_after is not None and i >= state.stream_cut_after:
            if state.stream_cut == "error":
                line = {"error": "fake ollama: the model runner stopped mid-stream"}
                await response.write((json.dumps(line) + "\n").encode())
                await response.write_eof()
                return response
            assert request.transport is not None
            request.transport.abort()  # the client sees the connection cut mid-body
            raise asyncio.CancelledError
        if state.stream_delay_s and i:
            await asyncio.sleep(state.stream_delay_s)
        if state.stream_endless:
            await asyncio.sleep(0)  # the client's read, and its hang-up, get their turn
        piece = word + " " if state.stream_endless or i < len(words) - 1 else word
        chunk = {**base, "message": {"role": "assistant", "content": piece}, "done": False}
        await response.write((json.dumps(chunk) + "\n").encode())
    final = {
        **base,
        "message": {"role": "assistant", "content": ""},
        "done": True,
        "done_reason": "stop",
    }
    await response.write((json.dumps(final) + "\n").encode())
    await response.write_eof()
    return response


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11500)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--embed-dim", type=int, default=768)
    args = parser.parse_args()
    state = FakeOllamaState(delay_s=args.delay, embed_dim=args.embed_dim)
    web.run_app(build_app(state), host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
