"""The /v1/devices bodies and answers and the Devices page's forms (pairing, issue 40), for
the handlers and the OpenAPI document."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from lobug.devices import MAX_WINDOW_S, WINDOW_S

Trust = Literal["full", "inner", "familiar", "public"]


class Device(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 1,
                    "device_id": "m5stack-kitchen",
                    "address": "192.168.1.20",
                    "first_seen": 1767225600.0,
                    "last_seen": 1767229200.0,
                    "turns": 14,
                    "trust": "full",
                    "paired_at": 1767225630.0,
                    "paired_by": "agent 'cli' (trust full, via cli)",
                    "paired_elsewhere": None,
                }
            ]
        }
    )
    id: int = Field(description="The row's id: what `trust` and DELETE take.")
    device_id: str = Field(description="The `device_id` the device sends.")
    address: str = Field(description="The address it was heard from.")
    first_seen: float
    last_seen: float
    turns: int = Field(ge=0, description="Turns it took on /chat/text and /chat/audio.")
    trust: Trust | None = Field(description="null: not paired, a stranger.")
    paired_at: float | None
    paired_by: str | None = Field(description="Who paired it (the window's opener).")
    paired_elsewhere: str | None = Field(
        description="The address this device id is paired at, when it is another: the device "
        "moved (DHCP) or someone sends its id; a stranger until the owner confirms it here."
    )


class DeviceList(BaseModel):
    devices: list[Device] = Field(description="Paired first, then the most recently heard.")
    pairing_until: float | None = Field(
        description="When the open pairing window closes (epoch seconds); null: none is open."
    )


class PairRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seconds: float = Field(
        default=WINDOW_S, gt=0, le=MAX_WINDOW_S, description="How long the window stays open."
    )


class PairingWindow(BaseModel):
    pairing_until: float = Field(description="When the window closes (epoch seconds).")
    seconds: float


class TrustRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trust: Trust = Field(default="full", description="What the device's prompts may draw on.")
