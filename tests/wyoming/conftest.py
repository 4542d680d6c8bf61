"""The app under test with its Wyoming port (`make_door`), for the in-process Wyoming tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from daemon_proc import free_port
from dbutil import query

from lobug import keys


class Door:
    """The app (for its DB and services) and its Wyoming port."""

    def __init__(self, http: Any, port: int) -> None:
        self.http = http
        self.port = port

    def rows(self, sql: str, *params: Any) -> list[Any]:
        return [tuple(r) for r in query(self.http.app[keys.CONFIG].storage.db_path, sql, *params)]


@pytest.fixture
def make_door(make_client: Callable[..., Any]) -> Callable[..., Any]:
    async def factory(**overrides: Any) -> Door:
        port = free_port()
        http = await make_client(**{"wyoming.uri": f"tcp://127.0.0.1:{port}", **overrides})
        return Door(http, port)

    return factory
