"""Helpers for the memory tests: a scripted fake LLM, a memory service without the app, waits."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import struct
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from dbutil import query
from fake_ollama import MEMORY_DEFAULTS

from lobug import conversation as turns
from lobug.config import Config
from lobug.conversation import TurnRecord
from lobug.llm import client
from lobug.memory.instructions import SHARED_TASKS, task_of
from lobug.memory.service import MemoryService
from lobug.memory.transfer import import_turns as importer
from lobug.storage.database import Database
from lobug.workers import runner as workers_runner
from lobug.workers.runner import JobRunner

Reply = Callable[[str], str]  # the memory prompt's user message -> the model's raw answer


def unpack(blob: bytes) -> list[float]:
    """A stored vector (`storage.vectors.pack`'s float32 blob) as floats."""
    return list(struct.unpack(f"{len(blob) // 4}f", blob))


def history_of(conn: Any, memory_id: int) -> list[dict[str, Any]]:
    """A memory's audit events, oldest first, with their meta decoded (for `db.read`)."""
    rows = conn.execute(
        "SELECT event, old_value, new_value, actor, meta, ts FROM history WHERE memory_id = ?"
        " ORDER BY id",
        (memory_id,),
    ).fetchall()
    return [{**dict(r), "meta": json.loads(r["meta"])} for r in rows]


def facts_json(*facts: str, kind: str = "personal") -> str:
    return json.dumps([{"fact": f, "type": kind} for f in facts])


@dataclass
class Script:
    """The fake Ollama's `script`: memory prompts answered per task, device turns echoed.

    `extract`/`summarize`/`distill` get the prompt's user message (the exchange, the transcript,
    the distillation inputs); `seen` records them per task, in order.
    """

    extract: Reply = lambda _: MEMORY_DEFAULTS["extract"]  # noqa: E731
    summarize: Reply = lambda _: MEMORY_DEFAULTS["summarize"]  # noqa: E731
    distill: Reply = lambda _: MEMORY_DEFAULTS["distill"]  # noqa: E731
    reply: Reply | None = None
    seen: dict[str, list[list[dict[str, str]]]] = field(default_factory=dict)

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body.get("messages", [])
        task = task_of(messages)
        last_user = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        if task is None:
            if self.reply is not None:
                return self.reply(last_user)
            return json.dumps({"action": "RESPOND", "response": f"You said: {last_user}"})
        self.seen.setdefault(task, []).append(messages)
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        if task in SHARED_TASKS:  # the exchange or the pairs after the task's line
            first_user = first_user.split("\n", 1)[-1]
        if task == "extract":  # one exchange, or several a blank line apart (extract.batch)
            return per_exchange(self.extract, first_user)
        return getattr(self, task)(first_user)


def per_exchange(extract: Reply, exchanges: str) -> str:
    """A batched extraction answered as a model does: every exchange's facts in one array,
    each numbered with its exchange as the prompt asks (an answer that is no JSON array
    stands for the whole, as a model's garbage would)."""
    shown = [re.sub(r"^Exchange \d+:\n", "", e) for e in exchanges.split("\n\n")]
    answers = [extract(exchange) for exchange in shown]
    if len(answers) == 1:
        return answers[0]  # as the script said it (what it says may not even parse)
    merged: list[Any] = []
    for number, raw in enumerate(answers, 1):
        try:
            items = json.loads(raw)
        except ValueError:
            return raw
        if not isinstance(items, list):
            return raw
        merged.extend({**i, "exchange": number} if isinstance(i, dict) else i for i in items)
    return json.dumps(merged)


def extract_by_keyword(table: dict[str, list[str]], kind: str = "personal") -> Reply:
    """Facts for an exchange whose user line contains a key; [] otherwise."""

    def reply(exchange: str) -> str:
        user_line = exchange.split("\n")[0]
        for key, facts in table.items():
            if key in user_line:
                return facts_json(*facts, kind=kind)
        return "[]"

    return reply


@dataclass
class MemoryEnv:
    """A memory service on a real DB, with a runner the test drives (no app, no workers)."""

    config: Config
    db: Database
    service: MemoryService
    runner: JobRunner
    clock: Any

    async def exchange(
        self,
        user_text: str,
        assistant_text: str | None = "OK.",
        *,
        session_id: str = "s-test",
        user_id: str = "default",
    ) -> tuple[TurnRecord, TurnRecord | None]:
        """Commit a turn the way ChatService does, hooks included."""

        def commit(conn: Any) -> tuple[TurnRecord, TurnRecord | None]:
            now = self.clock()
            turns.resolve_session(
                conn,
                device_id="test",
                session_id=session_id,
                now=now,
                idle_s=1800,
                user_id=user_id,
            )
            user = turns.insert_turn(
                conn,
                session_id=session_id,
                role="user",
                text=user_text,
                ts=now,
                device_id="test",
                user_id=user_id,
                action="RESPOND",
            )
            self.service.on_user_turn(conn, user, now=now)
            assistant = None
            if assistant_text is not None:
                assistant = turns.insert_turn(
                    conn,
                    session_id=session_id,
                    role="assistant",
                    text=assistant_text,
                    ts=now,
                    device_id="test",
                    user_id=user_id,
                    action="RESPOND",
                )
            self.service.on_exchange(conn, user, assistant, now=now)
            return user, assistant

        return await self.db.write(commit)

    async def run(self) -> int:
        return await self.runner.run_until_idle(timeout=30)

    async def imported(self, lines: list[dict[str, Any]]) -> dict[str, int]:
        """Turns stored through the import path (`lobug memory import` lines), jobs run;
        every turn's ref → id."""
        parsed, errors = importer.read_lines(
            [json.dumps(line) for line in lines], max_chars=self.config.chat.max_text_chars
        )
        assert errors == []
        partners, batches = importer.plan(parsed)
        for batch in batches:
            store = partial(
                importer.store_batch,
                partners=partners,
                now=self.clock(),
                user_id="default",
                result=importer.ImportResult(),
            )
            await self.db.write(store, batch)
        await self.run()
        return dict(self.rows("SELECT ref, id FROM turns"))

    def rows(self, sql: str, *params: Any) -> list[Any]:
        return query(self.config.storage.db_path, sql, *params)

    def value(self, sql: str, *params: Any) -> Any:
        rows = self.rows(sql, *params)
        return rows[0][0] if rows else None

    def jobs(self, kind: str) -> list[Any]:
        return self.rows("SELECT * FROM jobs WHERE kind = ? ORDER BY id", kind)

    def facts(self, status: str | None = "active") -> list[str]:
        sql = "SELECT content FROM memories WHERE kind = 'fact'"
        rows = self.rows(
            sql + (" AND status = ?" if status else "") + " ORDER BY id",
            *([status] if status else []),
        )
        return [r[0] for r in rows]


async def drain(db_path: Path, clock: Callable[[], float], timeout: float = 10.0) -> None:
    """Wait until no job is ready or running (jobs waiting out a backoff do not count)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = query(
            db_path,
            "SELECT COUNT(*) FROM jobs WHERE state = 'running'"
            " OR (state = 'pending' AND run_after <= ?)",
            clock(),
        )[0][0]
        if busy == 0:
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"jobs still busy after {timeout}s")


def fast_constants(patch: pytest.MonkeyPatch) -> None:
    """A test's pace: every health check asks the fake Ollama, idle workers look often."""
    patch.setattr(client, "HEALTH_CACHE_S", 0.0)
    patch.setattr(workers_runner, "POLL_INTERVAL_S", 0.05)


def memory_config(tmp_path: Path, ollama_url: str, **overrides: Any) -> Config:
    from lobug.config import load_config

    values = {
        "storage.data_dir": str(tmp_path / "data"),
        "ollama.host": ollama_url,
        "ollama.timeout_s": 2.0,
        "embedding.backend": "hashing",
        "embedding.dim": 64,
        "memory.llm_timeout_s": 2.0,
        "workers.backoff_base_s": 1.0,
        "memory.quiet_s": 0.0,
        "log.level": "DEBUG",
    }
    values.update(overrides)
    return load_config(None, env={}, overrides=values)


@contextlib.asynccontextmanager
async def memory_env(
    tmp_path: Path, ollama_url: str, clock: Any, **overrides: Any
) -> AsyncIterator[MemoryEnv]:
    from lobug.parts import parts

    config = memory_config(tmp_path, ollama_url, **overrides)
    with pytest.MonkeyPatch.context() as patch:
        fast_constants(patch)
        # Built by the composition root, as the CLI builds it (the vectors loaded at once).
        async with parts(config, clock=clock) as got:
            db, service = got.db, got.memory
            assert service is not None and db.vector_index is not None
            assert db.vector_index.ready  # searched through the in-memory vectors, as the daemon
            runner = JobRunner(db, config.workers, clock)
            service.register(runner)
            yield MemoryEnv(config, db, service, runner, clock)
