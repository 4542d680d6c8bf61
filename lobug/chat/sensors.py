"""Physical state per device: stored on /context/sensors, summarised into the system prompt."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from lobug import errors
from lobug.config import SensorConfig
from lobug.storage.database import Database

_VECTOR_KEYS = ("accel", "gyro")
# The orientations CONTRACT.md names. The state is stored as the device sent it, but only these
# reach the system prompt: anything else a device (or anyone holding its token) sends there would
# be text the model reads as instructions.
ORIENTATIONS = frozenset({"face_up", "face_down", "upright", "tilted", "shaking"})
TEMPERATURE_RANGE = (-60.0, 150.0)  # °C a device can plausibly report
_SEPARATORS = re.compile(r"[\s\-]+")


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
    """`[Current physical state: Device orientation: face_up, battery 80%]` (CONTRACT.md).

    One line, whatever was stored: an orientation outside ORIENTATIONS and numbers out of range
    are left out, so nothing a client sends can add lines or instructions to the prompt."""
    parts = []
    orientation = orientation_of(state.get("orientation"))
    if orientation:
        parts.append(f"Device orientation: {orientation}")
    battery: Any = state.get("battery")
    charging = state.get("charging") is True
    if _is_number(battery) and 0 <= battery <= 100:
        parts.append(f"battery {round(battery)}%" + (" (charging)" if charging else ""))
    elif charging:
        parts.append("charging")
    temperature: Any = state.get("temperature_c")
    low, high = TEMPERATURE_RANGE
    if _is_number(temperature) and low <= temperature <= high:
        parts.append(f"temperature {temperature:.1f}°C")
    if not parts:
        return None
    return f"[Current physical state: {', '.join(parts)}]"


def orientation_of(value: Any) -> str | None:
    """The orientation as one of ORIENTATIONS ("Face-Up " → face_up), else None."""
    if not isinstance(value, str):
        return None
    token = _SEPARATORS.sub("_", value.strip().lower())
    return token if token in ORIENTATIONS else None


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
