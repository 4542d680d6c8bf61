"""The composition root: the daemon's parts, built in one place for every door (the daemon,
the `lobug memory` commands and `lobug mcp`), so a command searches and judges a fact exactly
as the daemon would (what the parts are: docs/architecture.md, "One composition root").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from lobug.access import CategoryPolicy
from lobug.config import Config
from lobug.devices import Devices
from lobug.llm.backends import make_llm
from lobug.llm.client import LLMClient
from lobug.llm.embedders import Embedder, close_embedder, make_embedder
from lobug.llm.lane import LLMLane
from lobug.memory import MemoryService, Recall, Records
from lobug.memory.vectors.gate import EmbeddingMismatch
from lobug.storage.database import Database
from lobug.storage.migrations import migrate
from lobug.storage.vector_index import VectorIndex

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Parts:
    db: Database
    llm: LLMClient
    embedder: Embedder
    memory: MemoryService | None  # None: memory.enabled is off, or the command needs none
    records: Records
    recall: Recall
    devices: Devices


def make_database(config: Config) -> Database:
    return Database(
        config.storage.db_path,
        busy_timeout_ms=config.storage.busy_timeout_ms,
        readers=config.storage.read_connections,
        max_page_count=config.storage.max_page_count,
        vector_index=VectorIndex() if config.storage.vector_index else None,
    )


def open_database(config: Config) -> Database:
    """Open and migrate synchronously (the CLI's commands that need no service use this)."""
    db = make_database(config)
    db.open_sync()
    migrate(db.writer)
    return db


@contextlib.asynccontextmanager
async def parts(
    config: Config,
    *,
    policy: CategoryPolicy | None = None,
    clock: Callable[[], float] = time.time,
    memory: bool = True,
    daemon: bool = False,
) -> AsyncIterator[Parts]:
    """Build, start, and at the end close every part. `policy`: the daemon's AccessControl's
    (a command loads the same file). `memory=False`: no memory service (a command that only
    reads rows). `daemon`: the vectors load in the background while search scans sqlite-vec;
    a command waits for them, so that it searches the same index. The daemon refuses vectors
    of another model or size (EmbeddingMismatch); a command opens them (reembed fixes them)."""
    policy = policy or CategoryPolicy.load(config.api.categories_file)
    async with contextlib.AsyncExitStack() as stack:
        db = make_database(config)
        await db.open()
        stack.push_async_callback(db.close)
        applied = await db.write_raw(migrate)
        if applied:
            log.info("database %s migrated: %s", db.path, ", ".join(applied))
        # One lane for every model call: the daemon's turn first (lobug.llm.lane); a command
        # has no turn to wait for and runs its calls as they come.
        lane = LLMLane(quiet_s=config.memory.quiet_s, enabled=daemon and config.memory.user_first)
        llm = make_llm(config, lane=lane)
        stack.push_async_callback(llm.close)
        embedder = make_embedder(config, llm)
        stack.push_async_callback(close_embedder, embedder)
        service = None
        if memory:
            service = MemoryService(
                db=db, llm=llm, embedder=embedder, config=config, clock=clock, categories=policy
            )
            await service.start()
            stack.push_async_callback(service.close)
            state = service.gate.state
            if daemon and state is not None and state.mismatch:
                raise EmbeddingMismatch(state)
            if not daemon and service.indexing is not None:
                await asyncio.wait([service.indexing])  # a failed load: sqlite-vec, as the daemon
        records = Records(db, policy, memory=service, clock=clock)
        recall = Recall(
            records,
            max_text_chars=config.chat.max_text_chars,
            working_memory_size=config.chat.working_memory_size,
        )
        yield Parts(db, llm, embedder, service, records, recall, Devices(db, clock))
