"""Process faults: kill -9 and SIGTERM in the middle of traffic lose no answered turn; a second
daemon on the same data dir refuses to start."""

from __future__ import annotations

import asyncio
import itertools
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from daemon_proc import Daemon
from faultkit import DaemonPool, db_rows, db_value

from lobug.workers import queue


class Traffic:
    """Devices posting turns and sensor reports back to back; records every 200."""

    def __init__(self, daemon: Daemon, devices: int = 8) -> None:
        self.daemon = daemon
        self.devices = devices
        self.turns: list[dict[str, Any]] = []  # 200'd turns: text, device, turn_id, response
        self.sensors: dict[str, list[int]] = {}  # device -> battery values sent, in order
        self.sensor_ok: dict[str, int] = {}  # device -> index of the last 200'd report
        self.errors = 0

    async def device(self, session: aiohttp.ClientSession, n: int, stop: asyncio.Event) -> None:
        device = f"dev-{n}"
        for i in itertools.count():
            if stop.is_set():
                return
            try:
                if i % 3 == 2:
                    sent = self.sensors.setdefault(device, [])
                    sent.append(i % 100)
                    async with session.post(
                        self.daemon.url + "/context/sensors",
                        json={"device_id": device, "battery": i % 100},
                    ) as resp:
                        if resp.status == 200:
                            self.sensor_ok[device] = len(sent) - 1
                    continue
                text = f"{device} says {i}"
                async with session.post(
                    self.daemon.url + "/chat/text", json={"text": text, "device_id": device}
                ) as resp:
                    if resp.status == 200:
                        body = await resp.json()
                        self.turns.append({"text": text, "device": device, **body})
                    else:
                        self.errors += 1
            except (TimeoutError, aiohttp.ClientError):
                return  # the daemon is gone

    async def run_until(self, stop: asyncio.Event) -> None:
        timeout = aiohttp.ClientTimeout(total=10)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            await asyncio.gather(*(self.device(session, n, stop) for n in range(self.devices)))


def assert_answered_turns_stored(data_dir: Path, traffic: Traffic) -> None:
    stored = {r[0]: r[1:] for r in db_rows(data_dir, "SELECT id, role, text, device_id FROM turns")}
    for turn in traffic.turns:
        assert stored.get(turn["turn_id"]) == ("user", turn["text"], turn["device"]), turn
    replies = {r[0] for r in db_rows(data_dir, "SELECT text FROM turns WHERE role='assistant'")}
    missing = [t for t in traffic.turns if t["response"] not in replies]
    assert not missing, f"answered but the reply was not stored: {missing[:3]}"
    # The latest sensor state per device is the last answered report or one sent after it.
    for device, index in traffic.sensor_ok.items():
        state = db_value(data_dir, "SELECT state FROM sensor_state WHERE device_id = ?", device)
        assert state is not None, device
        later = traffic.sensors[device][index:]
        assert any(f'"battery":{b}' in state for b in later), (device, state, later)


async def test_kill9_mid_traffic_loses_no_answered_turn(
    daemons: DaemonPool, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    daemon = await daemons.start()
    traffic = Traffic(daemon)
    stop = asyncio.Event()
    load = asyncio.create_task(traffic.run_until(stop))
    while len(traffic.turns) < 60:  # well into the traffic, with requests in flight
        await asyncio.sleep(0.02)
    daemon.kill9()
    await asyncio.wait_for(load, 15)
    assert traffic.errors == 0
    answered = len(traffic.turns)
    assert answered >= 60
    assert_answered_turns_stored(data_dir, traffic)
    assert db_value(data_dir, "PRAGMA quick_check") == "ok"

    again = await daemons.start()  # the kernel dropped the dead daemon's lock: no stale lock
    status, body = await again.request("POST", "/chat/text", json={"text": "after kill -9"})
    assert status == 200, body
    assert db_value(data_dir, "SELECT COUNT(*) FROM turns WHERE text = 'after kill -9'") == 1
    assert_answered_turns_stored(data_dir, traffic)
    assert await again.terminate() == 0


async def test_sigterm_mid_traffic_finishes_cleanly(daemons: DaemonPool, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    daemon = await daemons.start()
    traffic = Traffic(daemon)
    stop = asyncio.Event()
    load = asyncio.create_task(traffic.run_until(stop))
    while len(traffic.turns) < 30:
        await asyncio.sleep(0.02)
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGTERM)
    await asyncio.wait_for(load, 15)
    assert await daemon.terminate() == 0  # already exiting; returns its exit code
    assert "lobug stopped" in daemon.log()
    assert traffic.errors == 0
    assert_answered_turns_stored(data_dir, traffic)


async def test_second_daemon_on_the_same_data_dir_refuses_to_start(
    daemons: DaemonPool, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    first = await daemons.start()
    status, _ = await first.request("POST", "/chat/text", json={"text": "first owns it"})
    assert status == 200
    for fake_stt in (True, False):  # the test launcher and the real `lobug serve`
        second = daemons.new(fake_stt=fake_stt)
        with pytest.raises(RuntimeError, match="exited with 2"):
            await second.start(timeout=20)
        log = second.log()
        assert "refusing to start" in log and "lobug.lock" in log, log
        assert f"process {first.proc.pid if first.proc else ''}" in log
        assert "Traceback" not in log
    # The refused daemons never opened the database; the first one still serves it.
    status, _ = await first.request("POST", "/chat/text", json={"text": "still mine"})
    assert status == 200
    texts = [r[0] for r in db_rows(data_dir, "SELECT text FROM turns WHERE role = 'user'")]
    assert texts == ["first owns it", "still mine"]
    assert await first.terminate() == 0
    # Once it has stopped, the data dir is free again.
    again = await daemons.start()
    assert await again.terminate() == 0


async def test_a_job_the_process_dies_running_is_retired_after_three_deaths(
    daemons: DaemonPool, tmp_path: Path, ollama: Any
) -> None:
    """Issue 38: a job that kills the process (a model reply that froze the loop until the
    watchdog's kill) ran again after every restart, for ever. Each death while it runs counts,
    and the third retires it as failed; the daemon then serves turns and runs other jobs."""
    state, _ = ollama
    state.memory_delay_s = 120.0  # the extraction's model call never ends: killed mid-job
    data_dir = tmp_path / "data"
    daemon = await daemons.start()
    status, _ = await daemon.request("POST", "/chat/text", json={"text": "I like green tea."})
    assert status == 200
    running = "SELECT id FROM jobs WHERE kind = 'extract' AND state = 'running'"
    for death in range(1, queue.MAX_INTERRUPTIONS + 1):
        for _ in range(300):
            if db_value(data_dir, running) is not None:
                break
            await asyncio.sleep(0.05)
        job_id = db_value(data_dir, running)
        assert job_id is not None, f"death {death}: the job never ran again\n{daemon.log()}"
        daemon.kill9()
        daemon = await daemons.start()
    row = db_rows(data_dir, "SELECT state, interrupted, last_error FROM jobs WHERE id = ?", job_id)
    assert row[0][:2] == ("failed", queue.MAX_INTERRUPTIONS), row
    assert "the process died while this job ran" in row[0][2]
    state.memory_delay_s = 0.0
    status, _ = await daemon.request("POST", "/chat/text", json={"text": "Still here?"})
    assert status == 200
    assert db_value(data_dir, "SELECT state FROM jobs WHERE id = ?", job_id) == "failed"
    assert await daemon.terminate() == 0
