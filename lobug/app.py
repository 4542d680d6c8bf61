"""create_app(config): the aiohttp application with every resource as a cleanup_ctx lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from functools import partial

from aiohttp import web

from lobug import keys, mcp_server, metrics, openai_api, ui, wyoming_server
from lobug.access import AccessControl
from lobug.api import device, devices_routes, memory_routes, proposal_routes
from lobug.api.auth import auth_middleware
from lobug.api.middleware import access_log_middleware, error_middleware
from lobug.chat.prompt import load_personality
from lobug.chat.sensors import SensorService
from lobug.chat.service import ChatService
from lobug.chat.strangers import StrangerAllowance
from lobug.chat.working_memory import WorkingMemory
from lobug.config import Config
from lobug.devices import unpaired_note
from lobug.health import HealthService
from lobug.host.connections import body_deadline
from lobug.host.looplag import LoopLagMonitor
from lobug.memory.graph.vocabulary import MemoryVocabulary
from lobug.parts import parts
from lobug.speech.service import SpeechService
from lobug.speech.transcriber import Transcriber
from lobug.speech.whisper import WhisperTranscriber
from lobug.workers.runner import JobRunner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Overrides:
    """Seams for tests and benchmarks: swap the transcriber, the clock."""

    transcriber: Transcriber | None = None
    clock: Callable[[], float] = time.time


def create_app(config: Config, overrides: Overrides | None = None) -> web.Application:
    overrides = overrides or Overrides()
    max_body = max(config.speech.max_audio_bytes, config.server.max_json_bytes) + 64 * 1024
    app = web.Application(
        middlewares=[
            body_deadline,  # first: a body that never ends holds no connection forever
            access_log_middleware,
            metrics.metrics_middleware,  # outside the error middleware: sees every outcome
            openai_api.openai_error_middleware,  # OpenAI's error shape on its routes
            error_middleware,
            auth_middleware,
        ],
        client_max_size=max_body,
    )
    app[keys.CONFIG] = config
    app[keys.ACCESS] = AccessControl.from_config(config.api)
    app.add_routes(device.routes)
    app.add_routes(memory_routes.routes)
    app.add_routes(proposal_routes.routes)
    app.add_routes(devices_routes.routes)
    openai_api.setup(app)  # /v1/chat/completions, /v1/models; open streams end at shutdown
    metrics.setup(app, overrides.clock)  # GET /metrics
    ui.setup(app)  # the memory browser at /ui/ (lobug/ui)
    mcp_server.setup(app)  # MCP over streamable HTTP at /mcp (lobug/mcp_server)
    app.cleanup_ctx.append(_loop_monitor)
    app.cleanup_ctx.append(_parts(config, overrides))  # db, LLM, memory (lobug.parts)
    app.cleanup_ctx.append(_speech(config, overrides))
    app.cleanup_ctx.append(_services(config, overrides))
    app.cleanup_ctx.append(_workers)
    app.cleanup_ctx.append(wyoming_server.lifecycle)  # Home Assistant Assist (lobug/wyoming_server)
    return app


async def _loop_monitor(app: web.Application) -> AsyncIterator[None]:
    monitor = LoopLagMonitor()
    app[keys.LOOP] = monitor
    task = asyncio.create_task(monitor.run())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _parts(
    config: Config, overrides: Overrides
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        policy, clock, memory = app[keys.ACCESS].policy, overrides.clock, config.memory.enabled
        async with parts(config, policy=policy, clock=clock, memory=memory, daemon=True) as got:
            app[keys.DB], app[keys.LLM], app[keys.MEMORY] = got.db, got.llm, got.memory
            app[keys.RECORDS], app[keys.RECALL] = got.records, got.recall
            app[keys.DEVICES] = got.devices
            # The runner is created here, before any service, so every job handler is
            # registered before it starts claiming jobs (in _workers, the last ctx).
            app[keys.RUNNER] = runner = JobRunner(got.db, config.workers, clock)
            if got.memory is not None:
                got.memory.register(runner)
                got.memory.start_periodic()  # GC and friends: the daemon's, not the CLI's
            yield

    return ctx


def _speech(
    config: Config, overrides: Overrides
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        models_dir = config.speech.download_root or config.storage.data_dir / "models"
        transcriber = overrides.transcriber or WhisperTranscriber(config.speech, models_dir)
        speech = SpeechService(
            metrics.timed(app, transcriber),
            config.speech,
            lane=app[keys.LLM].lane,
            # The household's names from the memory: what Whisper alone mishears ("Pirukas").
            vocabulary=MemoryVocabulary(app[keys.DB], clock=overrides.clock)
            if config.memory.enabled
            else None,
        )
        app[keys.SPEECH] = speech
        # Loading Whisper takes seconds on a Pi: do it in the background so text turns work
        # at once; /chat/audio answers 503 until the model is ready.
        task = asyncio.create_task(speech.load()) if config.speech.load_at_start else None
        yield
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return ctx


def _services(
    config: Config, overrides: Overrides
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        db, llm, memory = app[keys.DB], app[keys.LLM], app[keys.MEMORY]
        sensors = SensorService(db, config.sensors, overrides.clock)
        app[keys.SENSORS] = sensors
        app[keys.CHAT] = ChatService(
            db=db,
            llm=llm,
            working_memory=WorkingMemory(db, config.chat.working_memory_size),
            sensors=sensors,
            config=config.chat,
            personality=load_personality(config.chat.personality_file),
            clock=overrides.clock,
            memory=memory,
            strangers=StrangerAllowance(
                config.storage.db_path,
                config.storage.max_page_count,
                config.chat.stranger_bytes_per_day,
            ),
        )
        app[keys.HEALTH] = HealthService(
            db=db,
            llm=llm,
            speech=app[keys.SPEECH],
            loop=app[keys.LOOP],
            embedding=memory.embedding_status if memory is not None else None,
            devices=partial(
                app[keys.DEVICES].status,
                device_token=config.api.device_token is not None,
                unknown_trust=config.api.unknown_device_trust,
            ),
        )
        await _say_how_to_pair(app, config)
        yield

    return ctx


async def _say_how_to_pair(app: web.Application, config: Config) -> None:
    """Never silent about a device that cannot remember (issue 40): the start-up log says so
    while nothing is paired and no device token is set."""
    paired = await app[keys.DEVICES].paired_count()
    note = unpaired_note(
        paired,
        device_token=config.api.device_token is not None,
        unknown_trust=config.api.unknown_device_trust,
    )
    if note is not None:
        log.warning("%s", note)


async def _workers(app: web.Application) -> AsyncIterator[None]:
    runner = app[keys.RUNNER]
    await runner.start()
    yield
    await runner.stop()
