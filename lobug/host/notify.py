"""sd_notify: tell systemd we are ready, what we are doing, and that the event loop is alive."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger(__name__)

Sender = Callable[[str], None]

# Without a watchdog, STATUS= is still worth refreshing so `systemctl status` shows live counts.
STATUS_EVERY_S = 30.0


class Notifier:
    """Sends sd_notify messages; every method is safe to call when not under systemd."""

    def __init__(
        self,
        sender: Sender | None = None,
        backend: str = "off",
        watchdog_usec: int | None = None,
    ) -> None:
        self._sender = sender
        self.backend = backend  # "systemd-python" | "socket" | "off", e.g. for /health
        self._watchdog_usec = watchdog_usec

    @property
    def enabled(self) -> bool:
        return self._sender is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Notifier:
        env = os.environ if env is None else env
        address = env.get("NOTIFY_SOCKET", "")
        if not address:
            log.info("not running under systemd notify; sd_notify is off")
            return cls()
        watchdog_usec = _watchdog_usec(env)
        library = _library_sender()
        # systemd-python reads NOTIFY_SOCKET from the real process environment, so it is only
        # right when that is the address we were given; otherwise speak the protocol ourselves.
        if library is not None and os.environ.get("NOTIFY_SOCKET") == address:
            log.info("sd_notify via systemd-python (NOTIFY_SOCKET=%s)", address)
            return cls(library, "systemd-python", watchdog_usec)
        if not address.startswith(("/", "@")):
            log.info("sd_notify is off: unsupported NOTIFY_SOCKET address %r", address)
            return cls()
        log.info("sd_notify via built-in socket client (NOTIFY_SOCKET=%s)", address)
        return cls(_socket_sender(address), "socket", watchdog_usec)

    def ready(self, status: str = "ready") -> None:
        self._send(f"READY=1\nSTATUS={_one_line(status)}")

    def status(self, text: str) -> None:
        self._send(f"STATUS={_one_line(text)}")

    def stopping(self, status: str = "stopping") -> None:
        self._send(f"STOPPING=1\nSTATUS={_one_line(status)}")

    def ping(self) -> None:
        self._send("WATCHDOG=1")

    def watchdog_interval(self) -> float | None:
        """Seconds between pings: half of WatchdogSec, as sd_watchdog_enabled(3) advises."""
        if not self.enabled or self._watchdog_usec is None:
            return None
        return self._watchdog_usec / 2 / 1_000_000

    def _send(self, message: str) -> None:
        if self._sender is None:
            return
        try:
            self._sender(message)
        except Exception as exc:  # a lost notification must never stop the daemon
            log.debug("sd_notify %r failed: %s", message.split("\n", 1)[0], exc)


async def watchdog_loop(
    notifier: Notifier, status: Callable[[], str | Awaitable[str]] | None = None
) -> None:
    """Ping WATCHDOG=1 (and refresh STATUS=) until cancelled.

    The ping is sent from the event loop itself on purpose: if the loop is blocked, pings stop
    and systemd restarts us, which is the whole point of the watchdog.
    """
    interval = notifier.watchdog_interval()
    if not notifier.enabled or (interval is None and status is None):
        return
    period = interval if interval is not None else STATUS_EVERY_S
    while True:
        if interval is not None:
            notifier.ping()
        if status is not None:
            try:
                text = status()
                if inspect.isawaitable(text):
                    text = await text
                notifier.status(text)
            except Exception:  # a broken status callback must not stop the watchdog
                log.debug("status callback failed", exc_info=True)
        await asyncio.sleep(period)


def _watchdog_usec(env: Mapping[str, str]) -> int | None:
    """WATCHDOG_USEC, when it is meant for this process (WATCHDOG_PID unset or ours)."""
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    pid = env.get("WATCHDOG_PID")
    if usec <= 0 or (pid and pid.strip() != str(os.getpid())):
        return None
    return usec


def _library_sender() -> Sender | None:
    try:
        # import_module: no stubs exist, and the repo's own systemd/ folder confuses mypy.
        daemon = importlib.import_module("systemd.daemon")
    except ImportError:
        return None

    def send(message: str) -> None:
        # False means the C library saw no NOTIFY_SOCKET: surface it like any failed send.
        if not daemon.notify(message):
            raise OSError("sd_notify: NOTIFY_SOCKET is not set in the process environment")

    return send


def _socket_sender(address: str) -> Sender:
    """The sd_notify wire protocol: one datagram of KEY=VALUE lines to an AF_UNIX socket."""
    target = "\0" + address[1:] if address.startswith("@") else address  # '@' = abstract name

    def send(message: str) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            # Non-blocking: a full receive queue must cost a lost ping, never a stalled loop.
            sock.setblocking(False)
            sock.sendto(message.encode("utf-8"), target)

    return send


def _one_line(text: str) -> str:
    # A newline would start a new KEY=VALUE assignment inside the datagram.
    return " ".join(str(text).splitlines()).strip()
