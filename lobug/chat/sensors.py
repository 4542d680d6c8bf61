"""Physical state per device: stored on /context/sensors, summarised into the system prompt."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lobug import errors
from lobug.config import SensorConfig
from lobug.storage.database import Database

_VECTOR_KEYS = ("accel", "gyro")


class SensorService:
    def __init__(self, db: Database, config: SensorConfig, clock: Callable[[], float]) -> None:
        self.db = db
        self.config = config
        self.clock = clock
        self._latest: dict[str, dict[str, Any] | None] = {}  # None: known to have no state

    async def store(self, device_id: str, state: dict[str, Any]) -> None:
        validate(state)
        encoded = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
        size = len(encoded.encode())
        if size > self.config.max_bytes:
            raise errors.payload_too_large(
                f"sensor state is {size} bytes; the limit is {self.config.max_bytes} bytes"
            )
        now = self.clock()
        await self.db.write(
            lambda c: c.execute(
                "INSERT INTO sensor_state (device_id, state, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT(device_id) DO UPDATE SET state = excluded.state,"
                " updated_at = excluded.updated_at",
                (device_id, encoded, now),
            )
        )
        self._latest[device_id] = state

    async def latest(self, device_id: str) -> dict[str, Any] | None:
        if device_id not in self._latest:
            row = await self.db.read(
                lambda c: c.execute(
                    "SELECT state FROM sensor_state WHERE device_id = ?", (device_id,)
                ).fetchone()
            )
            self._latest[device_id] = None if row is None else json.loads(row[0])
        return self._latest[device_id]

    async def summary(self, device_id: str) -> str | None:
        state = await self.latest(device_id)
        return summarize(state) if state else None


def validate(state: dict[str, Any]) -> None:
    """Known keys must have the documented types; unknown keys are stored as given."""

    def bad(key: str, expected: str) -> errors.ApiError:
        return errors.invalid_request(f"'{key}' must be {expected}", field=key)

    if "orientation" in state and not isinstance(state["orientation"], str):
        raise bad("orientation", "a string")
    for key in _VECTOR_KEYS:
        if key in state:
            value = state[key]
            if not (
                isinstance(value, list) and len(value) == 3 and all(_is_number(v) for v in value)
            ):
                raise bad(key, "an array of 3 numbers")
    if "battery" in state and not (_is_number(state["battery"]) and 0 <= state["battery"] <= 100):
        raise bad("battery", "a number from 0 to 100")
    if "charging" in state and not isinstance(state["charging"], bool):
        raise bad("charging", "true or false")
    if "temperature_c" in state and not _is_number(state["temperature_c"]):
        raise bad("temperature_c", "a number")


def summarize(state: dict[str, Any]) -> str | None:
    """`[Current physical state: Device orientation: face_up, battery 80%]` (CONTRACT.md)."""
    parts = []
    if state.get("orientation"):
        parts.append(f"Device orientation: {state['orientation']}")
    if _is_number(state.get("battery")):
        battery = f"battery {round(state['battery'])}%"
        if state.get("charging") is True:
            battery += " (charging)"
        parts.append(battery)
    elif state.get("charging") is True:
        parts.append("charging")
    if _is_number(state.get("temperature_c")):
        parts.append(f"temperature {state['temperature_c']:.1f}°C")
    if not parts:
        return None
    return f"[Current physical state: {', '.join(parts)}]"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
