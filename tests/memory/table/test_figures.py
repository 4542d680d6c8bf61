"""The memory figures of `GET /v1/stats` (table/rows.py `figures`): seed 003's latest record,
when the newest memory the caller may see was made, beside seed 000's counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_kit import IN_STORE, make_app


async def test_stats_say_when_the_newest_visible_memory_was_made(
    make_client: Callable[..., Any], clock: Any
) -> None:
    app = await make_app(make_client)
    assert (await app.local.get("/v1/stats"))["memories"]["latest_at"] is None

    await app.remember(IN_STORE["social"], store="social")
    social_at = clock()
    clock.advance(3600)
    await app.remember(IN_STORE["private"], store="private")
    private_at = clock()

    assert (await app.local.get("/v1/stats"))["memories"]["latest_at"] == private_at
    # A caller who may not read the private store is not told when it was written to.
    familiar = await app.as_["familiar"].get("/v1/stats")
    assert familiar["memories"]["latest_at"] == social_at
    assert familiar["memories"]["total"] == 1
