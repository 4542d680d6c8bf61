"""The OpenAI door's fixtures: the app with the test tokens, and the real `openai` client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from api_kit import TOKENS, App, make_app


@pytest.fixture
async def app(make_client: Callable[..., Any]) -> App:
    return await make_app(make_client)


@pytest.fixture
async def ai(app: App) -> AsyncIterator[openai.AsyncOpenAI]:
    """The real client, pointed at the test server as a user would point it at Lo-Bug."""
    async with openai.AsyncOpenAI(
        base_url=str(app.client.make_url("/v1")), api_key=TOKENS["full"], max_retries=0
    ) as client:
        yield client
