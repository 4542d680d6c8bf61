"""A bounded schemathesis run against the OpenAPI document and a live daemon app.

The app runs in a thread with its own event loop on a real port (schemathesis calls it with
blocking `requests`), Ollama is unreachable (extraction stays pending: the outage path), and
the hashing embedder is used. About 100 generated requests over every /v1 operation; checks:
no 5xx, every status documented, every response matching its schema.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from api_contract import document
from audio_fixtures import FakeTranscriber
from daemon_proc import free_port
from hypothesis import HealthCheck, Phase, given, settings

from lobug.app import Overrides, create_app
from lobug.config import load_config

schemathesis = pytest.importorskip("schemathesis")
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = 100
TOKEN = "schemathesis-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


class LiveApp:
    """The real app on 127.0.0.1:<port>, served from a background thread."""

    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = load_config(
            None,
            env={},
            overrides={
                "storage.data_dir": str(data_dir),
                "ollama.host": f"http://127.0.0.1:{free_port()}",  # nobody listens: an outage
                "ollama.timeout_s": 1.0,
                "embedding.backend": "hashing",
                "embedding.dim": 64,
                "log.level": "WARNING",
                "api.tokens": [{"token": TOKEN, "trust": "full", "agent": "owner"}],
            },
        )
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.stopped = asyncio.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._main())

    async def _main(self) -> None:
        app = create_app(self.config, Overrides(transcriber=FakeTranscriber()))
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", self.port).start()
        self.ready.set()
        await self.stopped.wait()
        await runner.cleanup()

    def __enter__(self) -> LiveApp:
        self.thread.start()
        assert self.ready.wait(30), "the app did not start"
        return self

    def __exit__(self, *exc: Any) -> None:
        self.loop.call_soon_threadsafe(self.stopped.set)
        self.thread.join(30)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveApp]:
    with LiveApp(tmp_path / "data") as app:
        yield app


def test_generated_requests_get_documented_answers(live: LiveApp) -> None:
    import requests

    with requests.Session() as session:
        for content in ("The user keeps bees on the roof.", "The user sails on weekends."):
            session.post(
                f"{live.url}/v1/memories", json={"content": content}, headers=AUTH, timeout=10
            )
    schema = schemathesis.openapi.from_dict(document())
    schema.config.update(base_url=live.url)
    checks = [not_a_server_error, status_code_conformance, response_schema_conformance]
    seen: set[str] = set()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=schema.as_strategy())
    def run(case: Any) -> None:
        seen.add(f"{case.method} {case.path}")
        response = case.call(base_url=live.url, headers=AUTH, timeout=30)
        if response.headers.get("Content-Type", "").startswith("application/x-ndjson"):
            assert response.status_code == 200  # the lines are checked in test_api_export
            return
        case.validate_response(response, checks=checks)

    run()
    assert len(seen) >= 12, seen  # the run reached (nearly) every operation
