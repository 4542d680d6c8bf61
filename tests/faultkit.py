"""Helpers for the fault tests: a pool of real daemons, raw HTTP, and DB inspection."""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from daemon_proc import Daemon
from dbutil import query


class DaemonPool:
    """Starts real daemons on one data dir and makes sure none outlives the test."""

    def __init__(self, data_dir: Path, ollama_url: str, log_dir: Path | None = None) -> None:
        self.data_dir = data_dir
        self.ollama_url = ollama_url
        self.log_dir = log_dir
        self.started: list[Daemon] = []

    def new(self, *, env: dict[str, str] | None = None, **kwargs: Any) -> Daemon:
        daemon = Daemon(self.data_dir, ollama_url=self.ollama_url, env=env, **kwargs)
        if self.log_dir is not None:  # e.g. the data dir is a tiny tmpfs the test fills up
            daemon.log_path = self.log_dir / daemon.log_path.name
        self.started.append(daemon)
        return daemon

    __call__ = new  # `daemons(...)` reads as a factory in tests

    async def start(self, *, env: dict[str, str] | None = None, **kwargs: Any) -> Daemon:
        return await self.new(env=env, **kwargs).start()

    def stop_all(self) -> None:
        for daemon in self.started:
            daemon.stop_quietly()


def db_rows(data_dir: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in query(data_dir / "lobug.db", sql, *params)]


def db_value(data_dir: Path, sql: str, *params: Any) -> Any:
    rows = db_rows(data_dir, sql, *params)
    return rows[0][0] if rows else None


def vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def raw_http(
    port: int, head: bytes, body: bytes = b"", *, timeout: float = 5.0, close_write: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """Send bytes as they are (lying headers included) and read one response."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + body)
        await writer.drain()
        if close_write:
            writer.write_eof()
        status_line = await asyncio.wait_for(reader.readline(), timeout)
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while True:
            line = await asyncio.wait_for(reader.readline(), timeout)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        payload = await asyncio.wait_for(reader.readexactly(length), timeout)
        return status, headers, payload
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass


def request_head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def wav_header(*, rate: int = 16000, channels: int = 1, bits: int = 16, data_bytes: int) -> bytes:
    """A canonical 44-byte PCM WAV header that may claim any data size (it can lie)."""
    block = channels * bits // 8
    riff_size = min(0xFFFFFFFF, 36 + data_bytes)
    return (
        b"RIFF"
        + struct.pack("<I", riff_size)
        + b"WAVE"
        + b"fmt "
        + struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * block, block, bits)
        + b"data"
        + struct.pack("<I", min(0xFFFFFFFF, data_bytes))
    )


async def wait_until(
    predicate: Callable[[], bool | Awaitable[bool]], timeout: float = 10.0, every: float = 0.05
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(every)
