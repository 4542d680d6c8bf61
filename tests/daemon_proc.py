"""Run the daemon as a real process for tests: start, talk HTTP, SIGTERM or kill -9, restart."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

TESTS = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_http(url: str, timeout: float = 30.0) -> None:
    """Until `url` answers below 500 (a helper server such as the fake Ollama is up)."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            try:
                async with session.get(url) as resp:
                    if resp.status < 500:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


class Daemon:
    """One daemon process on a free port with its own data dir and log file."""

    def __init__(
        self,
        data_dir: Path,
        *,
        ollama_url: str,
        env: dict[str, str] | None = None,
        fake_stt: bool = True,
        stt_delay: float = 0.0,
        extra_args: list[str] | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir / f"daemon-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = {
            **os.environ,
            "LOBUG_DATA_DIR": str(data_dir),
            "LOBUG_OLLAMA_HOST": ollama_url,
            "LOBUG_OLLAMA_TIMEOUT_S": "3",
            "LOBUG_EMBEDDER": "hashing",
            "LOBUG_EMBEDDING_DIM": "64",
            "LOBUG_MEMORY_QUIET_S": "0",
            "LOBUG_WORKERS_BACKOFF_BASE_S": "0.2",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        self.env.pop("NOTIFY_SOCKET", None)
        if fake_stt:
            self.argv = [
                sys.executable,
                str(TESTS / "run_daemon.py"),
                "--stt-delay",
                str(stt_delay),
            ]
        else:
            self.argv = [sys.executable, "-m", "lobug"]
        self.argv += [*(extra_args or [])]
        if not fake_stt:
            self.argv += ["serve"]
        self.argv += ["--host", "127.0.0.1", "--port", str(self.port)]

    async def start(self, timeout: float = 60.0) -> Daemon:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it until it exits
        self.proc = subprocess.Popen(self.argv, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"daemon exited with {self.proc.returncode}:\n{self.log()}")
                try:
                    async with session.get(self.url + "/health") as resp:
                        if resp.status == 200:
                            return self
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
        raise RuntimeError(f"daemon did not answer within {timeout}s:\n{self.log()}")

    async def request(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        async with aiohttp.ClientSession() as session:
            async with session.request(method, self.url + path, **kwargs) as resp:
                body = await resp.json(content_type=None)
                return resp.status, body

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    async def terminate(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.proc.poll() is None:
            self.proc.kill()
            raise RuntimeError(f"daemon ignored SIGTERM for {timeout}s:\n{self.log()}")
        return int(self.proc.returncode)

    def stop_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
