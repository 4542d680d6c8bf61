"""How an OpenAI stream ends when the client does not read it to the end (issue 25, 10-11):
a client that hangs up or stops reading, and a daemon that shuts down with streams open."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import aiohttp
import openai
import pytest
from api_kit import TOKENS, App, make_app
from faultkit import DaemonPool, db_rows
from prometheus_client.parser import text_string_to_metric_families

from lobug.openai_api import sse

pytestmark = pytest.mark.timeout(90)

# Far more than the socket buffers between the daemon and a client that reads nothing hold
# (a few MB on loopback): the daemon's writes must come to wait for the client.
BIG_REPLY = " ".join(["x" * 8000] * 1000)
ASK = {"model": "lobug", "stream": True, "messages": [{"role": "user", "content": "tell all"}]}
# A reply that long needs the daemon's ceiling raised to it (ollama.max_tokens: 16 M characters).
LONG_REPLIES = {"ollama.max_tokens": 1_048_576}


@pytest.fixture
async def app(make_client: Callable[..., Any]) -> App:
    return await make_app(make_client, **LONG_REPLIES)


@pytest.fixture
def stalled() -> Iterator[Callable[..., socket.socket]]:
    """A client that sends a streaming request and never reads (a tiny receive buffer)."""
    opened: list[socket.socket] = []

    def connect(host: str, port: int, token: str | None = TOKENS["full"]) -> socket.socket:
        sock = socket.socket()
        opened.append(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((host, port))
        body = json.dumps(ASK).encode()
        auth = f"Authorization: Bearer {token}\r\n" if token else ""  # none: loopback owner
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        return sock

    yield connect
    for sock in opened:
        sock.close()


def assistant_rows(rows: list[Any]) -> list[tuple[int, int]]:
    """(length of the text, degraded) of each assistant turn."""
    return [(len(r[1]), r[2]) for r in rows if r[0] == "assistant"]


async def until(check: Callable[[], Any], timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)
    return found


async def turn_outcomes(app: App) -> dict[str, float]:
    resp = await app.client.get("/metrics")
    found: dict[str, float] = {}
    for family in text_string_to_metric_families(await resp.text()):
        for sample in family.samples:
            if sample.name == "lobug_turns_total":
                found[sample.labels["outcome"]] = sample.value
    return found


def errors_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_a_client_that_stops_reading_loses_its_stream_not_the_daemon(
    app: App,
    ai: openai.AsyncOpenAI,
    ollama: Any,
    stalled: Callable[..., socket.socket],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    state, _ = ollama
    state.reply = BIG_REPLY
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(sse, "WRITE_TIMEOUT_S", 0.5)
    server = app.client.server
    stalled(server.host, server.port)
    rows = "SELECT role, text, degraded FROM turns ORDER BY id"
    # The turn ends by itself: what was sent (before the writes stalled) is kept, cut short.
    ((said, degraded),) = await until(lambda: assistant_rows(app.rows(rows)), 20)
    assert degraded == 1 and 0 < said < len(BIG_REPLY)
    state.reply = None
    answer = await ai.chat.completions.create(
        model="lobug", messages=[{"role": "user", "content": "still there?"}]
    )
    assert answer.choices[0].message.content == "You said: still there?"
    assert "read nothing for 0.5 s" in caplog.text
    assert errors_logged(caplog) == []
    assert (await turn_outcomes(app)).get("error", 0) == 0


async def test_a_client_hanging_up_mid_stream_is_a_normal_end(
    app: App, ollama: Any, caplog: pytest.LogCaptureFixture
) -> None:
    state, _ = ollama
    caplog.set_level(logging.INFO)
    state.reply, state.stream_delay_s = "One two three four five six seven eight", 0.1
    async with aiohttp.ClientSession() as http:
        resp = await http.post(
            app.client.make_url("/v1/chat/completions"),
            json=ASK,
            headers={"Authorization": f"Bearer {TOKENS['full']}"},
        )
        assert resp.status == 200
        assert (await resp.content.readuntil(b"\n\n")).startswith(b"data: ")
        resp.close()  # hangs up mid-answer
    rows = "SELECT role, text, degraded FROM turns ORDER BY id"
    ((_, degraded),) = await until(lambda: assistant_rows(app.rows(rows)), 10)
    assert degraded == 1  # the same record as before: cut short
    await until(lambda: "the stream ended early" in caplog.text, 5)
    assert errors_logged(caplog) == []
    outcomes = await turn_outcomes(app)
    assert outcomes.get("error", 0) == 0 and outcomes["client_closed"] == 1


async def test_shutdown_stops_open_streams_at_once_and_keeps_what_was_said(
    app: App, ollama: Any, stalled: Callable[..., socket.socket]
) -> None:
    state, _ = ollama
    state.reply = BIG_REPLY
    server = app.client.server
    stalled(server.host, server.port)  # stuck: the default write timeout is far off
    await until(lambda: state.chat_calls(), 10)
    # A slow model on the next stream, whose client reads: it would still be talking.
    state.reply, state.stream_delay_s = "One two three four five six", 5.0
    async with aiohttp.ClientSession() as http:
        reader = await http.post(
            app.client.make_url("/v1/chat/completions"),
            json=ASK,
            headers={"Authorization": f"Bearer {TOKENS['full']}"},
        )
        assert reader.status == 200
        await reader.content.readuntil(b"\n\n")
        await asyncio.sleep(0.5)  # the stalled stream's writes are waiting by now
        started = time.monotonic()
        await app.client.close()  # the server's shutdown, as on SIGTERM
        elapsed = time.monotonic() - started
        tail = await asyncio.wait_for(reader.content.read(), 5)
    assert elapsed < 5, f"shutdown took {elapsed:.1f}s with streams open"
    rows = app.rows("SELECT role, text, degraded FROM turns ORDER BY id")
    assert [degraded for _, degraded in assistant_rows(rows)] == [1, 1]  # both cut short
    assert [r[1] for r in rows if r[0] == "assistant"][1] == "One"
    assert b'"code": "unavailable"' in tail and tail.endswith(sse.DONE)


async def test_the_daemon_process_ends_streams_left_stalled_or_open_at_sigterm(
    daemons: DaemonPool, ollama: Any, stalled: Callable[..., socket.socket]
) -> None:
    """`lobug serve` as deployed (aiohttp does not cancel a handler whose client left)."""
    state, _ = ollama
    state.reply, state.stream_delay_s = "One two three four five six seven eight", 0.1
    # The grace for running requests far above the bound below: the streams must not use it.
    daemon = await daemons.start(
        env={"LOBUG_SERVER_SHUTDOWN_TIMEOUT_S": "30", "LOBUG_OLLAMA_MAX_TOKENS": "1048576"}
    )
    rows = "SELECT role, text, degraded FROM turns ORDER BY id"
    async with aiohttp.ClientSession() as http:
        resp = await http.post(daemon.url + "/v1/chat/completions", json=ASK)
        assert resp.status == 200
        await resp.content.readuntil(b"\n\n")
        resp.close()  # hangs up mid-answer
        await until(lambda: assistant_rows(db_rows(daemon.data_dir, rows)), 10)
        async with http.get(daemon.url + "/metrics") as scraped:
            metrics = await scraped.text()
    assert 'outcome="client_closed"' in metrics and 'outcome="error"' not in metrics
    state.reply, state.stream_delay_s = BIG_REPLY, 0.0
    stalled("127.0.0.1", daemon.port, token=None)  # the default write timeout is far off
    await until(lambda: len(db_rows(daemon.data_dir, rows)) == 3, 10)
    await asyncio.sleep(1.0)  # its writes are waiting for the client now
    started = time.monotonic()
    code = await daemon.terminate(timeout=25)
    elapsed = time.monotonic() - started
    assert code == 0, daemon.log()
    assert elapsed < 5, f"SIGTERM took {elapsed:.1f}s with a stalled stream (unit: 20 s)"
    (_, (said, degraded)) = assistant_rows(db_rows(daemon.data_dir, rows))
    assert degraded == 1 and 0 < said < len(BIG_REPLY)
    assert "Traceback" not in daemon.log() and " ERROR " not in daemon.log()
