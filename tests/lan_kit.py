"""Callers at other addresses of the LAN, for real: a client socket bound to its own loopback
address (127.0.0.2, 127.0.0.3, …), so the daemon sees that peer address on the connection.
With `api.allow_loopback` off a loopback address is trusted no more than any LAN address, which
makes each of them a household device or a stranger on the LAN, as the tests need."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

NO_LOOPBACK = {"api.allow_loopback": False}


class LanClient:
    """HTTP from one address to the daemon at `base` (e.g. "http://127.0.0.1:8765")."""

    def __init__(self, session: aiohttp.ClientSession, base: str, address: str) -> None:
        self.session = session
        self.base = base.rstrip("/")
        self.address = address

    async def post(
        self, path: str, body: dict[str, Any], expect: int = 200, **headers: str
    ) -> dict[str, Any]:
        async with self.session.post(self.base + path, json=body, headers=headers) as resp:
            text = await resp.text()
            assert resp.status == expect, (self.address, path, resp.status, text)
            got: dict[str, Any] = await resp.json()
            return got

    async def say(self, text: str, **fields: Any) -> dict[str, Any]:
        """One /chat/text turn, as the firmware sends it: no token."""
        return await self.post("/chat/text", {"text": text, **fields})


@asynccontextmanager
async def lan_client(base: str, address: str) -> AsyncIterator[LanClient]:
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(connector=connector) as session:
        yield LanClient(session, str(base), address)
