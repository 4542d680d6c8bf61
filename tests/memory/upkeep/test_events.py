"""Operational events (seed 001 §14) in /v1/stats, through the real app and its job runner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_kit import make_app
from fake_ollama import FakeOllamaState
from memory_kit import Script, drain, extract_by_keyword

from lobug.memory.upkeep.events import validator_rate


async def test_stats_show_extraction_latency_and_the_validator_pass_rate(
    make_client: Callable[..., Any], ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    state = ollama[0]
    # One good fact and one in the first person, which the validator refuses.
    state.script = Script(
        extract=extract_by_keyword({"tea": ["The user drinks green tea.", "I drink green tea."]})
    )
    app = await make_app(make_client)
    resp = await app.client.post("/chat/text", json={"text": "I drink green tea"})
    assert resp.status == 200, await resp.json()
    await drain(app.db_path, clock)

    ops = (await app.local.get("/v1/stats"))["operations"]
    extract = ops["ops"]["extract"]
    assert extract["count"] == 1 and extract["failures"] == 0
    assert extract["mean_ms"] > 0 and extract["by_day"][-1] == 1
    assert ops["ops"]["embed_turn"]["count"] >= 1
    assert app.value("SELECT SUM(count) FROM op_events WHERE op = 'extract'") == 1
    validator = ops["validator"]
    assert validator["rejected"] >= 1 and validator["accepted"] >= 1
    assert 0 < validator["pass_rate"] < 1


def test_pass_rate_without_any_candidate_is_unknown() -> None:
    assert validator_rate({})["pass_rate"] is None
    assert validator_rate({"validator_accepted_total": 3, "validator_rejected_total": 1}) == {
        "accepted": 3,
        "rejected": 1,
        "pass_rate": 0.75,
    }
