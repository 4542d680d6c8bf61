"""Idle and slow sockets cannot take the real daemon offline (issue 16, item 11): connections
past the cap are refused at once, a request head that does not arrive in time is cut, and
/health answers throughout."""

from __future__ import annotations

import asyncio
import socket
import time

from faultkit import DaemonPool, request_head


def idle_socket(port: int) -> socket.socket | None:
    try:
        return socket.create_connection(("127.0.0.1", port), timeout=2)
    except OSError:
        return None


def closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


async def test_idle_and_slow_sockets_are_cut_and_health_answers(daemons: DaemonPool) -> None:
    env = {"LOBUG_SERVER_MAX_CONNECTIONS": "40"}
    daemon = await daemons.start(env=env, extra_args=["--header-timeout-s", "1"])
    flood = [s for s in (idle_socket(daemon.port) for _ in range(120)) if s is not None]
    slow = idle_socket(daemon.port)
    try:
        # A head sent a byte at a time never completes: cut after the header timeout.
        if slow is not None:
            slow.sendall(b"GET /health HTTP/1.1\r\nHost: lob")
        started = time.monotonic()
        status = None
        while time.monotonic() - started < 5:
            try:
                status, body = await daemon.request("GET", "/health")
                break
            except Exception:  # noqa: BLE001 - refused while the flood holds every slot
                await asyncio.sleep(0.2)
        assert status == 200, daemon.log()
        assert time.monotonic() - started < 3  # the idle ones were cut after ~1 s
        assert all(closed_by_server(s, 2.0) for s in flood[:40])  # held ones: cut by the deadline
        if slow is not None:
            assert closed_by_server(slow, 2.0)
        # The daemon still serves normally afterwards.
        status, _ = await daemon.request("POST", "/chat/text", json={"text": "hello"})
        assert status == 200
    finally:
        for s in [*flood, *([slow] if slow else [])]:
            s.close()


def slow_body(port: int, method: str, path: str, headers: dict[str, str]) -> socket.socket | None:
    """A whole head, then 10 bytes of a body that claims 2,000: the rest never comes."""
    sock = idle_socket(port)
    if sock is not None:
        sock.sendall(request_head(method, path, {**headers, "Content-Length": "2000"}) + b"x" * 10)
    return sock


def answer_then_close(sock: socket.socket, within: float) -> bytes:
    """What the server sent before closing the connection (nothing if it kept it open)."""
    sock.settimeout(within)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return b""
    return data


async def test_half_sent_bodies_are_cut_and_the_owner_gets_through(daemons: DaemonPool) -> None:
    """Issue 38, finding 8: a body that stops half-way held its connection forever, so enough of
    them locked /health and the device out. Each now has a deadline: answered 408 and closed."""
    env = {"LOBUG_SERVER_MAX_CONNECTIONS": "40"}
    daemon = await daemons.start(env=env, extra_args=["--body-timeout-s", "1"])
    json_head = {"Content-Type": "application/json"}
    doors = [
        ("POST", "/chat/text", json_head),
        ("POST", "/chat/audio", {"Content-Type": "audio/wav"}),
        ("POST", "/context/sensors", json_head),
        ("POST", "/v1/turns", json_head),
    ]
    held = [slow_body(daemon.port, *doors[i % len(doors)]) for i in range(40)]
    flood = [s for s in held if s is not None]
    try:
        assert len(flood) == 40
        await asyncio.sleep(0.3)  # every head is in: the slots are all taken
        started = time.monotonic()
        status = None
        while time.monotonic() - started < 8:
            try:
                status, _ = await daemon.request("GET", "/health")
                break
            except Exception:  # noqa: BLE001 - refused while the slow bodies hold every slot
                await asyncio.sleep(0.2)
        assert status == 200, daemon.log()
        # Each slow body got a clear error and its connection was closed.
        for sock in flood:
            answer = answer_then_close(sock, 3.0)
            assert answer.startswith(b"HTTP/1.1 408"), daemon.log()[-3000:]
            assert b'"code": "invalid_request"' in answer and b"did not arrive" in answer
        status, _ = await daemon.request("POST", "/chat/text", json={"text": "hello"})
        assert status == 200
        assert "Traceback" not in daemon.log()
    finally:
        for s in flood:
            s.close()
