"""setup_logging picks journald under systemd, stderr elsewhere, and never doubles handlers."""

from __future__ import annotations

import importlib
import logging
import re
import sys
from collections.abc import Iterator

import pytest

from lobug.host.logs import HANDLER_NAME, QUIET_LOGGERS, RepeatLimit, setup_logging

try:
    JournalHandler = importlib.import_module("systemd.journal").JournalHandler
except ImportError:
    JournalHandler = None


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """setup_logging changes process-wide state; put it back for the next test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    for name, value in levels.items():
        logging.getLogger(name).setLevel(value)


def ours() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if h.get_name() == HANDLER_NAME]


def test_stderr_outside_systemd(capsys: pytest.CaptureFixture[str]) -> None:
    assert setup_logging("INFO", env={}) == "stderr"
    (handler,) = ours()
    assert isinstance(handler, logging.StreamHandler)
    assert logging.getLogger().level == logging.INFO
    logging.getLogger("lobug.test").info("hello %s", "pi")
    line = capsys.readouterr().err.strip()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO lobug.test: hello pi", line)


def test_noisy_libraries_are_quieted() -> None:
    setup_logging("INFO", env={})
    for name in ("aiohttp.access", "httpx", "httpcore", "faster_whisper"):
        assert logging.getLogger(name).level == logging.WARNING
    setup_logging("debug", env={})
    assert logging.getLogger().level == logging.DEBUG
    assert logging.getLogger("aiohttp.access").level == logging.NOTSET  # follows root again
    assert logging.getLogger("httpx").level == logging.WARNING


def test_idempotent_and_leaves_other_handlers_alone() -> None:
    other = logging.NullHandler()
    logging.getLogger().addHandler(other)
    setup_logging("INFO", env={})
    setup_logging("INFO", env={})
    setup_logging("WARNING", env={})
    assert len(ours()) == 1
    assert other in logging.getLogger().handlers
    assert logging.getLogger().level == logging.WARNING


@pytest.mark.parametrize("variable", ["JOURNAL_STREAM", "INVOCATION_ID"])
def test_journald_under_systemd(variable: str) -> None:
    target = setup_logging("INFO", env={variable: "8:12345"})
    (handler,) = ours()
    if JournalHandler is None:
        assert target == "stderr"  # stderr still reaches the journal through the unit
        assert isinstance(handler, logging.StreamHandler)
    else:
        assert target == "journald"
        assert isinstance(handler, JournalHandler)
        assert handler._extra["SYSLOG_IDENTIFIER"] == "lobug"
    # Leaving systemd (or a second call) swaps the handler instead of adding one.
    assert setup_logging("INFO", env={}) == "stderr"
    assert len(ours()) == 1


def test_journald_wanted_but_library_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "systemd", None)
    monkeypatch.setitem(sys.modules, "systemd.journal", None)
    assert setup_logging("INFO", env={"INVOCATION_ID": "abc"}) == "stderr"


def test_unknown_level_is_an_error() -> None:
    with pytest.raises(ValueError, match="loud"):
        setup_logging("loud", env={})
    assert ours() == []


def test_a_flood_of_one_message_is_cut_to_a_burst_and_a_count() -> None:
    """Issue 16, item 11: one log line per refused connection must not grow the log without
    bound; a burst gets through, then one line says how many were dropped."""
    now = [0.0]
    limit = RepeatLimit(burst=5, window_s=10.0, clock=lambda: now[0])

    def record(msg: str) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, msg, None, None)

    passed = [limit.filter(record("socket.accept() out of system resource")) for _ in range(1000)]
    assert sum(passed) == 5
    assert limit.filter(record("another message"))  # other templates are not affected
    now[0] = 11.0
    summary = record("socket.accept() out of system resource")
    assert limit.filter(summary)
    assert "995 more like it suppressed" in summary.getMessage()
