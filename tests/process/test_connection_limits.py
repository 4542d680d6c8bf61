"""Idle and slow sockets cannot take the real daemon offline (issue 16, item 11): connections
past the cap are refused at once, a request head that does not arrive in time is cut, and
/health answers throughout."""

from __future__ import annotations

import asyncio
import socket
import time

from faultkit import DaemonPool


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
