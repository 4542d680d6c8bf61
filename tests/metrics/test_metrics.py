"""GET /metrics scraped from the real app and parsed by prometheus_client's own parser."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from api_kit import TOKEN_CONFIG, TOKENS
from audio_fixtures import raw_pcm
from prometheus_client.parser import text_string_to_metric_families

from lobug import keys
from lobug.app import Overrides, create_app

pytestmark = pytest.mark.timeout(60)


def remote_as(address: str) -> Any:
    """A middleware that makes the request look like it came from `address` (as test_auth)."""

    @web.middleware
    async def fake_remote(request: web.Request, handler: Any) -> web.StreamResponse:
        return await handler(request.clone(remote=address))

    return fake_remote


@pytest.fixture
def lan_client(
    aiohttp_client: Any, make_config: Callable[..., Any], transcriber: Any, clock: Any
) -> Callable[..., Any]:
    async def factory(remote: str, **overrides: Any) -> TestClient:
        overrides.setdefault("api.tokens", TOKEN_CONFIG)
        app = create_app(make_config(**overrides), Overrides(transcriber=transcriber, clock=clock))
        app.middlewares.insert(0, remote_as(remote))
        client: TestClient = await aiohttp_client(TestServer(app))
        return client

    return factory


async def scrape(client: TestClient, headers: dict[str, str] | None = None) -> dict[Any, float]:
    resp = await client.get("/metrics", headers=headers)
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("text/plain")
    samples: dict[Any, float] = {}
    for family in text_string_to_metric_families(await resp.text()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


async def test_a_scrape_after_a_few_turns(
    make_client: Callable[..., Any], ollama: Any, clock: Any
) -> None:
    state, _ = ollama
    client = await make_client(**{"api.tokens": TOKEN_CONFIG, "memory.enabled": True})
    for text in ("my cat is Tom", "and my dog is Rex"):
        assert (await client.post("/chat/text", json={"text": text})).status == 200
    assert (await client.post("/chat/text", json={"text": ""})).status == 400
    audio = await client.post(
        "/chat/audio", data=raw_pcm(1.0), headers={"Content-Type": "application/octet-stream"}
    )
    assert audio.status == 200
    async with openai.AsyncOpenAI(
        base_url=str(client.make_url("/v1")), api_key=TOKENS["full"], max_retries=0
    ) as ai:
        await ai.chat.completions.create(
            model="lobug", messages=[{"role": "user", "content": "hi"}]
        )
        state.mode = "down"
        assert (await client.post("/chat/text", json={"text": "are you there?"})).status == 200
        with pytest.raises(openai.InternalServerError):
            await ai.chat.completions.create(
                model="lobug", messages=[{"role": "user", "content": "hello?"}], stream=True
            )
    state.mode = "ok"
    memory = client.app[keys.MEMORY]
    assert memory is not None
    await memory.remember(content="The user's sister lives in Lyon.", actor="test")
    await client.app[keys.RUNNER].stop()  # the queue holds still while we compare
    clock.advance(90)  # the jobs still pending have waited 90 s of the app's clock

    samples = await scrape(client)
    turns = "lobug_turns_total"
    assert value(samples, turns, endpoint="/chat/text", outcome="ok") == 2
    assert value(samples, turns, endpoint="/chat/text", outcome="degraded") == 1
    assert value(samples, turns, endpoint="/chat/text", outcome="rejected") == 1
    assert value(samples, turns, endpoint="/chat/audio", outcome="ok") == 1
    assert value(samples, turns, endpoint="/v1/chat/completions", outcome="ok") == 1
    assert value(samples, turns, endpoint="/v1/chat/completions", outcome="degraded") == 1
    assert value(samples, "lobug_turn_seconds_count", endpoint="/chat/text") == 4
    assert value(samples, "lobug_turn_seconds_sum", endpoint="/chat/text") > 0
    assert value(samples, "lobug_stt_seconds_count") == 1
    assert value(samples, "lobug_stt_audio_seconds_total") > 0
    assert value(samples, "lobug_ollama_errors_total", client="chat", kind="error") == 2
    assert value(samples, "lobug_database_up") == 1
    rows = client.app[keys.DB].read_sync(
        lambda c: c.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()
    )
    by_state = {r[0]: r[1] for r in rows}
    for job_state in ("pending", "running", "failed"):
        assert value(samples, "lobug_jobs", state=job_state) == by_state.get(job_state, 0)
    assert by_state.get("pending", 0) > 0  # the memory written above waits for its vector
    # The lag is how long the oldest ready job has waited: at least the 90 s the clock moved
    # minus the few seconds of backoff a job retried during the outage may carry.
    oldest = client.app[keys.DB].read_sync(
        lambda c: c.execute(
            "SELECT MIN(run_after) FROM jobs WHERE state = 'pending' AND run_after <= ?",
            (clock(),),
        ).fetchone()[0]
    )
    assert value(samples, "lobug_queue_lag_seconds") == pytest.approx(clock() - oldest, abs=1)
    assert value(samples, "lobug_queue_lag_seconds") >= 60
    assert value(samples, "lobug_memories", kind="fact", status="active") >= 1
    made = value(samples, "lobug_memories_created_last_day")
    assert made == sum(v for (name, _), v in samples.items() if name == "lobug_memories") >= 1
    assert value(samples, "lobug_memory_age_mean_days") == pytest.approx(90 / 86400, abs=1e-3)
    assert ("lobug_memory_score_mean", ()) not in samples  # no upkeep pass has scored yet
    assert value(samples, "lobug_event_loop_lag_max_seconds") >= 0


async def test_registries_are_per_app(make_client: Callable[..., Any]) -> None:
    first, second = await make_client(), await make_client()
    assert (await first.post("/chat/text", json={"text": "hello"})).status == 200
    assert value(await scrape(first), "lobug_turns_total", endpoint="/chat/text", outcome="ok") == 1
    assert ("lobug_turns_total", (("endpoint", "/chat/text"), ("outcome", "ok"))) not in (
        await scrape(second)
    )


async def test_a_stranger_on_the_lan_needs_a_token(lan_client: Callable[..., Any]) -> None:
    client = await lan_client("192.168.1.20")
    resp = await client.get("/metrics")
    assert resp.status == 401
    assert resp.headers["WWW-Authenticate"] == 'Bearer realm="lobug"'
    assert (await resp.json())["error"]["code"] == "unauthorized"
    resp = await client.get("/metrics", headers={"Authorization": "Bearer wrong-token-123456"})
    assert resp.status == 401
    assert "invalid_token" in resp.headers["WWW-Authenticate"]
    token = {"Authorization": f"Bearer {TOKENS['full']}"}
    assert "lobug_turns_total" not in await scrape(client, token)  # no turn yet, but 200
    stranger = {"Authorization": f"Bearer {TOKENS['public']}"}
    assert (await client.get("/metrics", headers=stranger)).status == 403  # the owner's only
    loopback_off = await lan_client("127.0.0.1", **{"api.allow_loopback": False})
    assert (await loopback_off.get("/metrics")).status == 401
    assert (await (await lan_client("127.0.0.1")).get("/metrics")).status == 200
