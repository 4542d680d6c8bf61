"""HealthService: real checks of the DB, the LLM server, speech and the queue for /health and
STATUS=."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lobug import __version__
from lobug.host.looplag import LoopLagMonitor
from lobug.llm.client import LLMClient
from lobug.speech.service import SpeechService
from lobug.storage.database import Database
from lobug.storage.sqlite import MIB, MIN_FREE_BYTES, pages_in_use
from lobug.workers import queue

EMBEDDING_WAIT_S = 0.1
# Fewer free pages than this under storage.max_page_count and a long turn's write (its text,
# FTS and index entries) no longer fits.
PAGE_SLACK = 8


@dataclass
class HealthService:
    db: Database
    llm: LLMClient
    speech: SpeechService
    loop: LoopLagMonitor | None = None
    # The memory service's vector state: model/dimension, mismatch, embedder failures.
    embedding: Callable[[], Awaitable[dict[str, Any]]] | None = None
    # The Wyoming listener's state (lobug/wyoming_server), set when it starts. Reported, not a
    # problem: `status` says whether the device's dependencies are up, and a Wyoming port
    # clash leaves the device's routes working.
    wyoming: Callable[[], dict[str, Any]] | None = None
    # Paired devices and the pairing window (lobug.devices); its `note` says, while no device
    # can remember, that devices are answered without memory and how to pair one. Reported,
    # not a problem: answering a stranger without memory is the daemon working as it should.
    devices: Callable[[], Awaitable[dict[str, Any]]] | None = None
    started: float = field(default_factory=time.monotonic)
    _last_embedding: dict[str, Any] | None = None

    async def check(self) -> dict[str, Any]:
        db_ok = await self.db.ping()
        try:
            jobs = await self.db.probe(queue.counts) if db_ok else {}
        except Exception:  # noqa: BLE001 - health reports, never raises
            jobs, db_ok = {}, False
        llm = await self.llm.health()
        problems: list[str] = []
        if not db_ok:
            problems.append("database is not answering")
        else:
            problems.extend(await self._storage())
        llm_problem = self.llm.problem(llm)
        if llm_problem:
            problems.append(llm_problem)
        if not self.speech.ready:
            problems.append(f"speech-to-text is not loaded: {self.speech.error}")
        embedding = await self._embedding()
        if embedding and embedding.get("problem"):
            problems.append(str(embedding["problem"]))
        wyoming = self.wyoming() if self.wyoming is not None else None
        devices = await self._devices() if db_ok else None
        parts = self._parts(llm_problem is None, embedding)
        return {
            "status": "ok" if not problems else "degraded",
            "version": __version__,
            "ollama": llm_problem is None,  # the chat model answers (whichever backend)
            "llm": {"backend": self.llm.backend, "ok": llm_problem is None},
            "stt": self.speech.ready,
            "db": db_ok,
            "queue": {k: int(jobs.get(k, 0)) for k in ("pending", "running", "failed")},
            "uptime_s": round(time.monotonic() - self.started, 1),
            "problems": problems,
            "loop": self.loop.snapshot() if self.loop else {},  # recent: since the last read
            "parts": parts,
            **({"embedding": embedding} if embedding is not None else {}),
            **({"wyoming": wyoming} if wyoming is not None else {}),
            **({"devices": devices} if devices is not None else {}),
        }

    async def _devices(self) -> dict[str, Any] | None:
        if self.devices is None:
            return None
        try:
            return await self.devices()
        except Exception as exc:  # noqa: BLE001 - health reports, never raises
            return {"problem": f"device list unknown: {exc}"}

    def _parts(self, llm_ok: bool, embedding: dict[str, Any] | None) -> dict[str, Any]:
        """Which parts run inside the daemon ("embedded") and which are servers it talks to
        ("external"); `ok` false: that part is missing or failing."""
        parts: dict[str, Any] = {
            "llm": {"where": "external", "what": f"{self.llm.backend} at {self.llm.where}"},
            "stt": {"where": "embedded", "what": f"faster-whisper {self.speech.model}"},
        }
        parts["llm"]["ok"], parts["stt"]["ok"] = llm_ok, self.speech.ready
        if embedding is not None and "backend" in embedding:
            embedded = embedding["backend"] in ("local", "hashing")
            parts["embedder"] = {
                "where": "embedded" if embedded else "external",
                "what": f"{embedding['backend']} {embedding['model']}",
                "ok": embedding.get("problem") is None,
            }
        return parts

    async def _storage(self) -> list[str]:
        """A full disk or page budget (writes answer 503 storage_full meanwhile)."""
        try:
            found = await self.db.probe(storage_problem, self.db.path, self.db.max_page_count)
        except Exception as exc:  # noqa: BLE001 - health reports, never raises
            return [f"free space unknown: {exc}"]
        return [found] if found else []

    async def _embedding(self) -> dict[str, Any] | None:
        """The vector state; under load (its recheck waits for a reader) the last one known,
        so /health answers within ~100 ms whatever the load."""
        if self.embedding is None:
            return None
        try:
            self._last_embedding = await asyncio.wait_for(self.embedding(), EMBEDDING_WAIT_S)
        except TimeoutError:
            if self._last_embedding is None:
                return {"problem": "embedding state not known yet (the database is busy)"}
        except Exception as exc:  # noqa: BLE001 - health reports, never raises
            return {"problem": f"embedding state unknown: {exc}"}
        return self._last_embedding

    async def status_line(self) -> str:
        report = await self.check()
        q = report["queue"]
        return (
            f"{report['status']}; queue pending={q['pending']} running={q['running']} "
            f"failed={q['failed']}"
        )


def storage_problem(conn: Any, path: Path, max_pages: int) -> str | None:
    """Why writes fail for want of space, or None: the disk under the database, then the
    database's page budget (`storage.max_page_count`, 0 = none)."""
    free = shutil.disk_usage(path.parent).free
    if free < MIN_FREE_BYTES:
        return (
            f"the disk holding the database is full ({free / MIB:.0f} MiB free at {path.parent},"
            f" SQLite needs {MIN_FREE_BYTES // MIB} MiB): writes answer 503 storage_full until"
            " space is freed"
        )
    if max_pages > 0:
        used = pages_in_use(conn)
        if max_pages - used < PAGE_SLACK:
            return (
                f"the database is full ({used} of storage.max_page_count {max_pages} pages in"
                " use): writes answer 503 storage_full; raise storage.max_page_count or purge"
                " old data"
            )
    return None
