"""Helpers for the /v1 tests: tokens per trust level, the app with them, rows in its database."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_contract import V1
from dbutil import query

from lobug import keys

TRUSTS = ("full", "inner", "familiar", "public")
TOKENS = {trust: f"{trust}-token-0123456789abcdef" for trust in TRUSTS}
PLANNER = "planner-token-0123456789abcdef"  # full trust, but the planner's allowlist
TOKEN_CONFIG = [
    *({"token": TOKENS[t], "trust": t, "agent": "supervisor", "name": t} for t in TRUSTS),
    {"token": PLANNER, "trust": "full", "agent": "planner", "name": "planner"},
]
# One memory per store, far enough apart that reconciliation never merges them.
IN_STORE = {
    "private": "The user's passport number is kept in the blue drawer.",
    "shared": "The user's family eats dinner together every Sunday evening.",
    "social": "The user enjoys playing chess with neighbours in the park.",
}


class App:
    """The app under the test client, one V1 per trust level, and its database."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.local = V1(client)  # loopback: the full-trust agent "local", no allowlist
        self.as_ = {trust: V1(client).as_token(TOKENS[trust]) for trust in TRUSTS}
        self.planner = V1(client).as_token(PLANNER)

    @property
    def db_path(self) -> Any:
        return self.client.app[keys.CONFIG].storage.db_path

    def rows(self, sql: str, *params: Any) -> list[Any]:
        return query(self.db_path, sql, *params)

    def value(self, sql: str, *params: Any) -> Any:
        rows = self.rows(sql, *params)
        return rows[0][0] if rows else None

    async def remember(self, content: str, expect: int = 201, **fields: Any) -> dict[str, Any]:
        return await self.local.post("/v1/memories", {"content": content, **fields}, expect)


async def make_app(make_client: Callable[..., Any], **overrides: Any) -> App:
    overrides.setdefault("api.tokens", TOKEN_CONFIG)
    return App(await make_client(**overrides))


def ids(listing: dict[str, Any]) -> list[int]:
    return [m["id"] for m in listing["memories"]]
