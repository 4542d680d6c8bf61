"""/health answers at once while every database reader is busy (issue 16, item 12)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from lobug import keys


async def test_health_answers_while_every_reader_is_busy(client: Any) -> None:
    db = client.app[keys.DB]
    readers = client.app[keys.CONFIG].storage.read_connections
    release = threading.Event()

    def hold(conn: Any) -> None:
        release.wait(10)  # a long search on every reader connection, and a queue behind them

    busy = [asyncio.ensure_future(db.read(hold)) for _ in range(readers * 3)]
    await asyncio.sleep(0.1)
    try:
        started = time.monotonic()
        resp = await client.get("/health")
        elapsed = time.monotonic() - started
        body = await resp.json()
    finally:
        release.set()
        await asyncio.gather(*busy)
    assert resp.status == 200 and body["db"] is True, body
    assert set(body["queue"]) == {"pending", "running", "failed"}
    assert elapsed < 0.5, f"/health took {elapsed:.2f} s behind busy readers"
