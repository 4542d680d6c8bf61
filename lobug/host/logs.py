"""Root logging: journald (with levels and fields) under systemd, plain stderr elsewhere."""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping

HANDLER_NAME = "lobug"  # marks our handler so a second call replaces it instead of adding one
STDERR_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Chatty at INFO and not ours: one access line per device poll would flood a Pi's journal.
QUIET_LOGGERS = ("aiohttp.access", "httpx", "httpcore", "faster_whisper")


def setup_logging(level: str = "INFO", env: Mapping[str, str] | None = None) -> str:
    """Configure the root logger; returns "journald" or "stderr". Safe to call again."""
    env = os.environ if env is None else env
    numeric = logging.getLevelName(level.strip().upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    handler, target = _journal_handler(env) or (_stderr_handler(), "stderr")
    handler.set_name(HANDLER_NAME)
    handler.addFilter(RepeatLimit())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in QUIET_LOGGERS:
        # At DEBUG the access log is wanted; NOTSET lets it follow the root again.
        wanted = name == "aiohttp.access" and numeric <= logging.DEBUG
        logging.getLogger(name).setLevel(logging.NOTSET if wanted else logging.WARNING)
    return target


class RepeatLimit(logging.Filter):
    """At most `burst` records of one message template per logger within `window_s`; then one
    line saying how many were dropped. A flood (asyncio's "socket.accept() out of system
    resource" once per refused connection: ~7 MB/s at the fd limit) must not fill the disk."""

    def __init__(
        self, burst: int = 5, window_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self.burst, self.window_s, self.clock = burst, window_s, clock
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}  # key -> (window start, n)

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self.clock()
        start, count = self._seen.get(key, (now, 0))
        if now - start >= self.window_s:
            if count > self.burst:
                record.msg = f"{record.msg} (and {count - self.burst} more like it suppressed)"
            start, count = now, 0
        self._seen[key] = (start, count + 1)
        if len(self._seen) > 1000:  # bounded: forget the oldest templates
            self._seen.pop(next(iter(self._seen)))
        return count < self.burst


def _journal_handler(env: Mapping[str, str]) -> tuple[logging.Handler, str] | None:
    # JOURNAL_STREAM: our stderr is the journal; INVOCATION_ID: we are a systemd unit at all.
    if "JOURNAL_STREAM" not in env and "INVOCATION_ID" not in env:
        return None
    try:
        journal = importlib.import_module("systemd.journal")  # no stubs; see notify.py
    except ImportError:
        return None  # stderr still reaches the journal, just without per-record priority
    return journal.JournalHandler(SYSLOG_IDENTIFIER="lobug"), "journald"


def _stderr_handler() -> logging.Handler:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(STDERR_FORMAT))
    return handler
