"""sd_notify over a real AF_UNIX datagram socket, with both the library and the built-in client."""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lobug.host.notify import Notifier, watchdog_loop

try:
    importlib.import_module("systemd.daemon")
    HAVE_LIBRARY = True
except ImportError:
    HAVE_LIBRARY = False

BACKENDS = [
    pytest.param(
        "systemd-python",
        marks=pytest.mark.skipif(not HAVE_LIBRARY, reason="systemd-python is not installed"),
    ),
    "socket",
]


class Receiver:
    """The systemd side: a bound datagram socket that collects what we send."""

    def __init__(self, sock: socket.socket, address: str) -> None:
        self.sock = sock
        self.address = address  # the NOTIFY_SOCKET value

    def recv(self, timeout: float = 2.0) -> str:
        self.sock.settimeout(timeout)
        return self.sock.recv(4096).decode()

    def pending(self) -> list[str]:
        """Everything already queued, without waiting."""
        self.sock.setblocking(False)
        out = []
        try:
            while True:
                out.append(self.sock.recv(4096).decode())
        except BlockingIOError:
            return out


@pytest.fixture
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Receiver]:
    # A short directory name: AF_UNIX paths are limited to 108 bytes, long test names are not.
    path = tmp_path_factory.mktemp("n") / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        yield Receiver(sock, str(path))


@pytest.fixture
def abstract_receiver() -> Iterator[Receiver]:
    name = f"lobug-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        yield Receiver(sock, "@" + name)


def make_notifier(
    backend: str, address: str, monkeypatch: pytest.MonkeyPatch, **extra: str
) -> Notifier:
    env = {"NOTIFY_SOCKET": address, **extra}
    if backend == "systemd-python":
        # libsystemd reads NOTIFY_SOCKET from the real process environment.
        monkeypatch.setenv("NOTIFY_SOCKET", address)
    else:
        monkeypatch.setitem(sys.modules, "systemd", None)  # the library "is not installed"
        monkeypatch.setitem(sys.modules, "systemd.daemon", None)
        monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    notifier = Notifier.from_env(env)
    assert notifier.enabled
    assert notifier.backend == backend
    return notifier


@pytest.mark.parametrize("backend", BACKENDS)
def test_messages_arrive_as_datagrams(
    backend: str, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    notifier = make_notifier(backend, receiver.address, monkeypatch)
    notifier.ready()
    assert receiver.recv() == "READY=1\nSTATUS=ready"
    notifier.status("ready; queue pending=3 running=1 failed=0")
    assert receiver.recv() == "STATUS=ready; queue pending=3 running=1 failed=0"
    notifier.ping()
    assert receiver.recv() == "WATCHDOG=1"
    notifier.stopping()
    assert receiver.recv() == "STOPPING=1\nSTATUS=stopping"


@pytest.mark.parametrize("backend", BACKENDS)
def test_abstract_socket_name(
    backend: str, abstract_receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    notifier = make_notifier(backend, abstract_receiver.address, monkeypatch)
    notifier.ready("listening on :8321")
    assert abstract_receiver.recv() == "READY=1\nSTATUS=listening on :8321"


def test_status_cannot_inject_other_assignments(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    notifier = make_notifier("socket", receiver.address, monkeypatch)
    notifier.status("bad\nREADY=1")
    assert receiver.recv() == "STATUS=bad READY=1"


@pytest.mark.skipif(not HAVE_LIBRARY, reason="systemd-python is not installed")
def test_explicit_env_that_differs_from_process_env_uses_socket(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # libsystemd would send to os.environ's address, not the one we were given.
    monkeypatch.setenv("NOTIFY_SOCKET", "/nonexistent/other.sock")
    notifier = Notifier.from_env({"NOTIFY_SOCKET": receiver.address})
    assert notifier.backend == "socket"
    notifier.ping()
    assert receiver.recv() == "WATCHDOG=1"


def test_logs_which_backend(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lobug.host.notify")
    make_notifier("socket", receiver.address, monkeypatch)
    assert [r.getMessage() for r in caplog.records] == [
        f"sd_notify via built-in socket client (NOTIFY_SOCKET={receiver.address})"
    ]


def test_without_notify_socket_everything_is_a_no_op(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="lobug.host.notify")
    notifier = Notifier.from_env({"WATCHDOG_USEC": "2000000"})
    assert not notifier.enabled
    assert notifier.backend == "off"
    notifier.ready()
    notifier.status("x")
    notifier.ping()
    notifier.stopping()
    assert notifier.watchdog_interval() is None
    assert [r.getMessage() for r in caplog.records] == [
        "not running under systemd notify; sd_notify is off"
    ]


def test_failed_send_never_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="lobug.host.notify")
    notifier = make_notifier("socket", str(tmp_path / "gone.sock"), monkeypatch)
    notifier.ready()
    notifier.ping()
    failures = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert [m.split(" failed:")[0] for m in failures] == [
        "sd_notify 'READY=1'",
        "sd_notify 'WATCHDOG=1'",
    ]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"WATCHDOG_USEC": "2000000"}, 1.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 15.0),
        ({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid() + 1)}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval(
    extra: dict[str, str], expected: float | None, receiver: Receiver
) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": receiver.address, **extra})
    assert notifier.watchdog_interval() == expected


async def collect(receiver: Receiver, count: int, timeout: float = 3.0) -> list[str]:
    """Read `count` datagrams without blocking the loop that is sending them."""
    loop = asyncio.get_running_loop()
    receiver.sock.setblocking(False)

    async def read() -> list[str]:
        return [(await loop.sock_recv(receiver.sock, 4096)).decode() for _ in range(count)]

    return await asyncio.wait_for(read(), timeout)


async def test_watchdog_loop_pings_until_cancelled(receiver: Receiver) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": receiver.address, "WATCHDOG_USEC": "100000"})
    assert notifier.watchdog_interval() == 0.05
    counts = iter(range(100))
    task = asyncio.create_task(watchdog_loop(notifier, lambda: f"ready; pending={next(counts)}"))
    messages = await collect(receiver, 6)
    assert messages[0::2] == ["WATCHDOG=1"] * 3
    assert messages[1::2] == [
        "STATUS=ready; pending=0",
        "STATUS=ready; pending=1",
        "STATUS=ready; pending=2",
    ]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    receiver.pending()  # drop what was sent before the cancel landed
    await asyncio.sleep(0.2)
    assert receiver.pending() == []


async def test_watchdog_loop_survives_a_broken_status_callback(receiver: Receiver) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": receiver.address, "WATCHDOG_USEC": "100000"})

    def broken() -> str:
        raise RuntimeError("queue closed")

    task = asyncio.create_task(watchdog_loop(notifier, broken))
    assert await collect(receiver, 3) == ["WATCHDOG=1"] * 3
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_watchdog_loop_without_watchdog_only_updates_status(receiver: Receiver) -> None:
    notifier = Notifier.from_env({"NOTIFY_SOCKET": receiver.address})
    task = asyncio.create_task(watchdog_loop(notifier, lambda: "ready"))
    assert await collect(receiver, 1) == ["STATUS=ready"]
    assert not task.done()  # next refresh is 30 s away
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_watchdog_loop_returns_when_there_is_nothing_to_do(receiver: Receiver) -> None:
    await asyncio.wait_for(watchdog_loop(Notifier.from_env({"NOTIFY_SOCKET": receiver.address})), 1)
    await asyncio.wait_for(watchdog_loop(Notifier.from_env({}), lambda: "ready"), 1)
    assert receiver.pending() == []
