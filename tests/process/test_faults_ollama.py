"""Ollama faults against the real daemon: every turn still gets a 200 (degraded), is stored, and
its background work waits for Ollama instead of being lost."""

from __future__ import annotations

import time
from pathlib import Path

from contract import assert_valid
from fake_ollama import FakeOllamaState
from faultkit import DaemonPool, db_rows, db_value, wait_until

FAULTS = ["down", "malformed", "reset", "slow", "model_missing"]


def set_fault(state: FakeOllamaState, fault: str) -> None:
    state.mode, state.delay_s = "ok", 0.0
    state.models = ["llama3.2:latest", "nomic-embed-text:latest", "all-minilm:latest"]
    if fault == "slow":
        state.delay_s = 1.5  # longer than the daemon's chat timeout below
    elif fault == "model_missing":
        state.models = ["nomic-embed-text:latest"]
    elif fault != "ok":
        state.mode = fault


def extract_jobs(data_dir: Path) -> list[tuple[str, int]]:
    """(state, attempts) of every `extract` job, once the memory service enqueues them."""
    if not db_rows(data_dir, "SELECT name FROM sqlite_master WHERE name = 'jobs'"):
        return []
    return db_rows(data_dir, "SELECT state, attempts FROM jobs WHERE kind = 'extract'")


async def test_every_ollama_fault_is_a_stored_degraded_turn(
    daemons: DaemonPool, ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    state, _ = ollama
    data_dir = tmp_path / "data"
    daemon = await daemons.start(env={"LOBUG_OLLAMA_TIMEOUT_S": "0.5"})
    for fault in FAULTS:
        set_fault(state, fault)
        started = time.monotonic()
        status, body = await daemon.request(
            "POST", "/chat/text", json={"text": f"during {fault}", "session_id": "s-faults"}
        )
        elapsed = time.monotonic() - started
        assert status == 200, (fault, body)
        assert_valid("chat_text.response", body)
        assert body["degraded"] is True and body["action"] == "RESPOND", fault
        assert body["response"], fault  # the spoken apology
        assert elapsed < 3.0, f"{fault}: the device waited {elapsed:.1f}s"
        stored = db_rows(
            data_dir,
            "SELECT role, text, degraded FROM turns WHERE id >= ? ORDER BY id",
            body["turn_id"],
        )
        assert stored[0] == ("user", f"during {fault}", 0), fault
        assert stored[1][0] == "assistant" and stored[1][2] == 1, fault
        status, health = await daemon.request("GET", "/health")
        assert status == 200, fault
        # Malformed chat replies come from an Ollama that lists its models fine.
        assert health["ollama"] is (fault == "malformed"), fault
        for job_state, _ in extract_jobs(data_dir):
            assert job_state in ("pending", "running", "done"), f"{fault}: an extract job failed"

    set_fault(state, "ok")
    status, body = await daemon.request(
        "POST", "/chat/text", json={"text": "and now?", "session_id": "s-faults"}
    )
    assert status == 200 and "degraded" not in body
    assert body["response"] == "You said: and now?"
    # The apologies never reach the model as conversation; the user's words all do.
    history = [m["content"] for m in state.chat_calls()[-1]["body"]["messages"][1:]]
    assert history == [f"during {fault}" for fault in FAULTS] + ["and now?"]
    # Every user turn is stored exactly once.
    users = [r[0] for r in db_rows(data_dir, "SELECT text FROM turns WHERE role = 'user'")]
    assert users == [f"during {fault}" for fault in FAULTS] + ["and now?"]
    # Background work deferred by the outage runs once Ollama is back (when there is any).
    if extract_jobs(data_dir):
        await wait_until(lambda: all(s == "done" for s, _ in extract_jobs(data_dir)), timeout=20)
    assert await daemon.terminate() == 0


async def test_outage_mid_traffic_then_recovery(
    daemons: DaemonPool, ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    """Ollama drops for a while with requests in flight, then recovers without a restart."""
    state, _ = ollama
    data_dir = tmp_path / "data"
    daemon = await daemons.start(env={"LOBUG_OLLAMA_TIMEOUT_S": "0.5"})
    degraded = []
    for i in range(12):
        if i == 4:
            state.fail_next = 4  # four 500s in a row, then normal service
        status, body = await daemon.request("POST", "/chat/text", json={"text": f"msg {i}"})
        assert status == 200, body
        degraded.append(bool(body.get("degraded")))
    assert degraded[:4] == [False] * 4
    assert any(degraded[4:8]) and not any(degraded[9:])
    texts = [r[0] for r in db_rows(data_dir, "SELECT text FROM turns WHERE role = 'user'")]
    assert texts == [f"msg {i}" for i in range(12)]
    flagged = db_value(data_dir, "SELECT COUNT(*) FROM turns WHERE degraded = 1")
    assert flagged == sum(degraded)
    assert await daemon.terminate() == 0
