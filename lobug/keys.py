"""Typed application keys: every service the app holds, in one place."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from lobug.access import AccessControl, Principal
    from lobug.chat.sensors import SensorService
    from lobug.chat.service import ChatService
    from lobug.config import Config
    from lobug.devices import Devices
    from lobug.health import HealthService
    from lobug.host.looplag import LoopLagMonitor
    from lobug.llm.client import LLMClient
    from lobug.memory import MemoryService, Recall, Records
    from lobug.speech.service import SpeechService
    from lobug.storage.database import Database
    from lobug.workers.runner import JobRunner

CONFIG: web.AppKey[Config] = web.AppKey("config")
DB: web.AppKey[Database] = web.AppKey("db")
LLM: web.AppKey[LLMClient] = web.AppKey("llm")
SPEECH: web.AppKey[SpeechService] = web.AppKey("speech")
SENSORS: web.AppKey[SensorService] = web.AppKey("sensors")
CHAT: web.AppKey[ChatService] = web.AppKey("chat")
HEALTH: web.AppKey[HealthService] = web.AppKey("health")
RUNNER: web.AppKey[JobRunner] = web.AppKey("runner")
LOOP: web.AppKey[LoopLagMonitor] = web.AppKey("loop")
MEMORY: web.AppKey[MemoryService | None] = web.AppKey("memory")
ACCESS: web.AppKey[AccessControl] = web.AppKey("access")
RECORDS: web.AppKey[Records] = web.AppKey("records")  # the /v1 memory service layer
RECALL: web.AppKey[Recall] = web.AppKey("recall")  # /v1 turns, context, query
DEVICES: web.AppKey[Devices] = web.AppKey("devices")  # heard on the firmware routes; pairing

# Per request: the /v1 caller, set by lobug.api.auth (web.RequestKey needs aiohttp >= 3.14).
PRINCIPAL: web.RequestKey[Principal] = web.RequestKey("principal")
# A firmware route's caller: the trust its token or loopback gives it, or None when it is known
# only by its address (the device list decides: lobug.api.auth.admit_device).
DEVICE_TRUST: web.RequestKey[str | None] = web.RequestKey("device_trust")
# How a chat turn ended (ok | degraded | ignored), when its handler knows better than its status
# code (a stream's outcome is decided after its 200 went out); read by lobug.metrics.
TURN_OUTCOME: web.RequestKey[str] = web.RequestKey("turn_outcome")
