"""The query's vector for a search: the gate re-checked, the embedder asked within its timeout,
an outage logged once, and the words kept for the turn's own embed job (`RecentVectors`)."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable

from lobug.llm.embedders import Embedder
from lobug.memory.query import MAX_QUERY_CHARS
from lobug.memory.vectors.gate import VectorGate
from lobug.storage.database import Database

log = logging.getLogger(__name__)
RECENT_VECTORS = 64  # query vectors kept for the turns' embed jobs


class RecentVectors:
    """The last few query vectors by exact text: the user's words were embedded for retrieval
    already, so the turn's embed job need not ask the embedder again (an Ollama round trip, or
    CPU time on a Pi)."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[str, list[float]] = OrderedDict()

    def put(self, text: str, vector: list[float]) -> None:
        self._vectors[text] = vector
        self._vectors.move_to_end(text)
        while len(self._vectors) > RECENT_VECTORS:
            self._vectors.popitem(last=False)

    def get(self, text: str) -> list[float] | None:
        return self._vectors.get(text)


class QueryVectors:
    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        gate: VectorGate,
        *,
        timeout_s: float,
        recent: RecentVectors,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.gate = gate
        self.timeout_s = timeout_s
        self.recent = recent
        self._failing = False

    async def recheck(self) -> None:
        """Vectors off (setup failed, model mismatch) are looked at again now and then."""
        if not self.gate.due():
            return
        if self.gate.setup_error is None:
            await self.db.read(self.gate.recheck)
            return
        try:
            await self.db.write(self.gate.setup)
        except Exception as exc:  # noqa: BLE001 - still failing: try again later
            self.gate.setup_failed(exc)

    async def now(self, text: str) -> list[float] | None:
        await self.recheck()
        return await self.embed(text) if self.gate.enabled else None

    async def later(self, text: str) -> Awaitable[list[float] | None]:
        """The vector as an awaitable, the gate checked now: the caller starts the word lists
        before waiting for the embedder."""
        await self.recheck()
        return self.embed(text) if self.gate.enabled else _none()

    async def embed(self, text: str) -> list[float] | None:
        """None when the embedder fails (the search goes on with words alone)."""
        try:
            vectors = await asyncio.wait_for(
                self.embedder.embed([text[:MAX_QUERY_CHARS]]), self.timeout_s
            )
        except Exception as exc:  # noqa: BLE001 - EmbeddingUnavailable, timeout, model errors
            self.gate.error = f"{type(exc).__name__}: {exc}"
            # Once per outage at WARNING; every turn would flood the journal.
            level = logging.DEBUG if self._failing else logging.WARNING
            log.log(level, "cannot embed the query (%s); no relevant memories this turn", exc)
            self._failing = True
            return None
        if self._failing:
            log.info("query embedding works again")
        self._failing = False
        self.gate.error = None
        if len(text) <= MAX_QUERY_CHARS:
            self.recent.put(text, vectors[0])
        return vectors[0]


async def _none() -> None:
    return None
