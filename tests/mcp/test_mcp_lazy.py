"""The daemon loads the MCP SDK only when /mcp is first used (issue 13: ~30 MiB at idle)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
from lobug.app import create_app
from lobug.config import load_config
app = create_app(load_config(None, env={}, overrides={"storage.data_dir": sys.argv[1]}))
print(sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp.")))
"""


def test_building_the_daemon_does_not_import_the_mcp_sdk(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


FIRST_REQUEST = """
import asyncio, importlib.abc, json, sys, threading
from aiohttp.test_utils import TestClient, TestServer
from lobug.app import create_app
from lobug.config import load_config

on_loop = []

class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if threading.current_thread() is threading.main_thread():
            on_loop.append(name)
        return None

async def main():
    config = load_config(None, env={}, overrides={"storage.data_dir": sys.argv[1],
                                                  "wyoming.enabled": False})
    async with TestClient(TestServer(create_app(config))) as client:
        sys.meta_path.insert(0, Spy())
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        resp = await client.post("/mcp", json=init, headers=accept)
        assert resp.status == 200, resp.status
        await resp.read()
    assert "mcp" in sys.modules
    print(json.dumps(sorted(set(on_loop))))

asyncio.run(main())
"""


def test_the_first_request_imports_the_sdk_off_the_event_loop(tmp_path: Path) -> None:
    """Issue 25 (14): the SDK's import (~0.5 s) runs in a thread; the loop serves meanwhile."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_REQUEST, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    sdk = ("mcp", "mcp_types", "starlette", "sse_starlette", "anyio", "httpx", "pydantic")
    on_loop = [m for m in json.loads(done.stdout) if m.split(".")[0] in sdk]
    assert on_loop == [], on_loop
