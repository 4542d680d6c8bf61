"""The two cascades of seed 004 §7: turns → summaries → the base memory document.

Short: when a user has ≥ `SHORT_THRESHOLD` unsummarised messages, all but the newest
`SHORT_KEEP` become one summary (a `memories` row, kind `summary`, with the turn id range).
Long: when ≥ `LONG_THRESHOLD` summaries are unincorporated, all but the newest
`LONG_KEEP` are distilled, with the current base memory and the facts nearest them (a broad
KNN query, top 10), into a new base memory. The LLM is called outside any transaction; its answer
is written in one transaction that first checks nothing moved meanwhile. A failed call changes
nothing and the job retries.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from lobug.config import MemoryConfig
from lobug.conversation import CONVERSATION_TURN, OWNER_TURN
from lobug.llm.ask import InvalidOutput, ask, plain_text
from lobug.llm.client import LLMClient
from lobug.llm.embedders import Embedder, EmbeddingUnavailable
from lobug.memory import enqueue, instructions
from lobug.memory.graph.entities import Mention, extract_entities, link_entities
from lobug.memory.summaries import base_memory
from lobug.memory.summaries.distill import distill_parser
from lobug.memory.table import delta, memory_events
from lobug.memory.table import rows as store
from lobug.memory.vectors import knn
from lobug.memory.vectors.gate import VectorGate
from lobug.storage.database import Database
from lobug.storage.sqlite import placeholders

log = logging.getLogger(__name__)
SUMMARY_MAX_TOKENS = 320  # one paragraph of 3-5 sentences, with room to spare

ACTOR = "cascade"
# The cascades' sizes (constants, issue 24); each keep is below its threshold.
SHORT_THRESHOLD = 30  # unsummarised messages that trigger a summary...
SHORT_KEEP = 10  # ...of all but this many newest
LONG_THRESHOLD = 20  # unincorporated summaries that trigger a base-memory rewrite...
LONG_KEEP = 10  # ...keeping this many newest
# A backlog (an import, a long outage) is summarised in several calls, each small enough for a
# small model's context window.
MAX_BATCH_TURNS = 40
MAX_BATCH_SUMMARIES = 40
MAX_TURN_CHARS = 600
TOP_FACTS = 10  # seed 004 §7.2: "recent facts via a broad KNN query (top 10)"
QUERY_CHARS = 2000  # of the summaries embedded as that query: the gist, within any embedder's input
_ELIGIBLE = f"{CONVERSATION_TURN} AND {OWNER_TURN}"
_LABEL = re.compile(r"^(?:summary|here is the summary)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class TurnLine:
    id: int
    session_id: str
    role: str
    text: str


# -- short cascade: DB side ----------------------------------------------------------------------
def count_unsummarized(conn: Any, user_id: str) -> int:
    sql = f"SELECT COUNT(*) FROM turns WHERE user_id = ? AND summarized = 0 AND {_ELIGIBLE}"
    return int(conn.execute(sql, (user_id,)).fetchone()[0])


def short_cascade_due(conn: Any, user_id: str) -> bool:
    """Whether at least `SHORT_THRESHOLD` messages wait for a summary.

    Asked on every exchange, so it reads at most that many index rows instead of counting a
    backlog that grows while the LLM is away.
    """
    sql = (
        "SELECT COUNT(*) FROM (SELECT 1 FROM turns WHERE user_id = ? AND summarized = 0"
        f" AND {_ELIGIBLE} LIMIT ?)"
    )
    count = int(conn.execute(sql, (user_id, SHORT_THRESHOLD)).fetchone()[0])
    return count >= SHORT_THRESHOLD


def short_batch(conn: Any, user_id: str) -> list[TurnLine]:
    count = count_unsummarized(conn, user_id)
    if count < SHORT_THRESHOLD:
        return []
    rows = conn.execute(
        f"SELECT id, session_id, role, text FROM turns WHERE user_id = ? AND summarized = 0"
        f" AND {_ELIGIBLE} ORDER BY id LIMIT ?",
        (user_id, min(count - SHORT_KEEP, MAX_BATCH_TURNS)),
    ).fetchall()
    return [TurnLine(r["id"], r["session_id"], r["role"], r["text"]) for r in rows]


def transcript(lines: list[TurnLine]) -> str:
    out: list[str] = []
    session = None
    for line in lines:
        if session is not None and line.session_id != session:
            out.append("(a new conversation starts)")
        session = line.session_id
        who = "User" if line.role == "user" else instructions.ASSISTANT_NAME
        text = " ".join(line.text.split())
        if len(text) > MAX_TURN_CHARS:
            text = text[:MAX_TURN_CHARS] + " …"
        out.append(f"{who}: {text}")
    return "\n".join(out)


def store_summary(
    conn: Any,
    user_id: str,
    lines: list[TurnLine],
    summary: str,
    *,
    now: float,
) -> int | None:
    ids = [line.id for line in lines]
    marks = placeholders(ids)
    still = conn.execute(
        f"SELECT COUNT(*) FROM turns WHERE id IN ({marks}) AND summarized = 0", ids
    ).fetchone()[0]
    if still != len(ids):
        return None  # another run summarised them meanwhile
    memory_id = store.insert_memory(
        conn,
        user_id=user_id,
        kind="summary",
        content=summary,
        now=now,
        actor=ACTOR,
        source_from=ids[0],
        source_to=ids[-1],
        history_meta={"turns": len(ids)},
    )
    store.link_sources(conn, memory_id, ids, reason="summarized")
    # Who and where it was about (seed 003): a person's name finds their conversations too.
    link_entities(conn, memory_id, entities_of(summary), user_id, now)
    delta.summary_written(conn, user_id, memory_id, summary, now)
    memory_events.emit(conn, "episodic", "create", user_id=user_id, now=now, memory_id=memory_id)
    # Summaries are searchable by meaning too (`knn.VECTOR_KINDS`).
    enqueue.embed_memory(conn, memory_id, now=now)
    # Noise (IGNORE, apologies) inside the range is settled with it.
    conn.execute(
        "UPDATE turns SET summarized = 1 WHERE user_id = ? AND summarized = 0 AND id <= ?",
        (user_id, ids[-1]),
    )
    if count_unincorporated(conn, user_id) >= LONG_THRESHOLD:
        enqueue.per_user(conn, enqueue.CASCADE_LONG, user_id=user_id, now=now)
    return memory_id


# -- long cascade: DB side -----------------------------------------------------------------------
def count_unincorporated(conn: Any, user_id: str) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = 'summary'"
            " AND status = 'active' AND incorporated = 0",
            (user_id,),
        ).fetchone()[0]
    )


def long_batch(conn: Any, user_id: str) -> list[store.MemoryRow]:
    count = count_unincorporated(conn, user_id)
    if count < LONG_THRESHOLD:
        return []
    rows = conn.execute(
        "SELECT * FROM memories WHERE user_id = ? AND kind = 'summary' AND status = 'active'"
        " AND incorporated = 0 ORDER BY id LIMIT ?",
        (user_id, min(count - LONG_KEEP, MAX_BATCH_SUMMARIES)),
    ).fetchall()
    return [store.MemoryRow.from_row(r) for r in rows]


def distill_inputs(
    conn: Any, user_id: str, vector: Sequence[float] | None, k: int = TOP_FACTS
) -> tuple[str, list[str]]:
    """The current base memory and the facts to distil with it: the `k` nearest to `vector`
    (a broad query: what is being distilled), topped up by the top facts (pinned, important,
    often said) when fewer have a vector yet, or are all of it while vectors are off (None)."""
    near = knn.nearest_facts(conn, vector, user_id=user_id, k=k) if vector is not None else []
    facts = [row.content for row, _ in near]
    if len(facts) < k:
        top = (f.content for f in store.top_facts(conn, user_id, k))
        facts += [f for f in top if f not in facts][: k - len(facts)]
    return base_memory.get_base(conn, user_id), facts


def entities_of(text: str) -> list[Mention]:
    """The entities a summary or an insight names, Lo-Bug itself left out (it is in them all)."""
    me = instructions.ASSISTANT_NAME.casefold()
    return [e for e in extract_entities(text) if e.canonical.casefold() != me]


def store_base(
    conn: Any, user_id: str, summaries: list[store.MemoryRow], content: str, *, now: float
) -> bool:
    ids = [s.id for s in summaries]
    marks = placeholders(ids)
    still = conn.execute(
        f"SELECT COUNT(*) FROM memories WHERE id IN ({marks}) AND incorporated = 0", ids
    ).fetchone()[0]
    if still != len(ids):
        return False
    base_memory.set_base(
        conn,
        user_id,
        content,
        now=now,
        actor=ACTOR,
        meta={"summaries": ids, "words": len(content.split())},
    )
    conn.execute(
        f"UPDATE memories SET incorporated = 1, updated_at = ? WHERE id IN ({marks})", [now, *ids]
    )
    return True


# -- output checks ---------------------------------------------------------------------------------
def parse_summary(raw: str) -> str:
    text = _LABEL.sub("", plain_text(raw)).strip()
    if len(text) < 20 or text[0] in "[{":
        raise InvalidOutput("not a summary paragraph", raw)
    return text[:3000]


# -- orchestration -------------------------------------------------------------------------------
class Cascades:
    def __init__(
        self,
        db: Database,
        llm: LLMClient,
        config: MemoryConfig,
        *,
        clock: Callable[[], float],
        on_base_written: Callable[[str], None],
        embedder: Embedder,
        gate: VectorGate,
    ) -> None:
        self.db = db
        self.llm = llm
        self.config = config
        self.clock = clock
        self.on_base_written = on_base_written
        self.embedder = embedder
        self.gate = gate

    async def query_vector(self, text: str) -> list[float] | None:
        """A distillation's broad query, embedded in the LLM lane like the jobs' other
        embeddings; None while vectors are off or the embedder fails: the top facts stand in
        (a base memory is worth more than the better choice of facts)."""
        if not self.gate.enabled or not text.strip():
            return None
        try:
            (vector,) = await self.llm.lane.call(lambda: self.embedder.embed([text[:QUERY_CHARS]]))
        except EmbeddingUnavailable as exc:
            log.info("distillation without the facts' KNN: embedder unavailable (%s)", exc)
            return None
        return vector

    async def run_short(self, user_id: str) -> int:
        """Summarise while the threshold is met; returns how many summaries were written."""
        cfg, written = self.config, 0
        while True:
            lines = await self.db.read(short_batch, user_id)
            if not lines:
                return written
            summary = await ask(
                self.llm,
                instructions.summarize_conversation_messages(transcript(lines)),
                parse_summary,
                reminder=instructions.SUMMARY_REMINDER,
                what="summary",
                timeout_s=cfg.llm_timeout_s,
                temperature=0.3,
                max_tokens=SUMMARY_MAX_TOKENS,
            )
            memory_id = await self.db.write(
                partial(store_summary, now=self.clock()),
                user_id,
                lines,
                summary,
            )
            if memory_id is None:
                return written
            written += 1
            log.info(
                "summary #%d of turns %d..%d for %s", memory_id, lines[0].id, lines[-1].id, user_id
            )

    async def run_long(self, user_id: str) -> int:
        cfg, written = self.config, 0
        while True:
            batch = await self.db.read(long_batch, user_id)
            if not batch:
                return written
            summaries = [s.content for s in batch]
            vector = await self.query_vector("\n".join(summaries))
            base, facts = await self.db.read(distill_inputs, user_id, vector)
            messages = instructions.distill_base_memory_messages(
                base, summaries, facts, cfg.base_memory_max_words
            )
            content = await ask(
                self.llm,
                messages,
                distill_parser(cfg.base_memory_max_words),
                reminder=instructions.DISTILL_REMINDER,
                what="base memory distillation",
                timeout_s=cfg.llm_timeout_s,
                temperature=0.3,
            )
            ok = await self.db.write(partial(store_base, now=self.clock()), user_id, batch, content)
            self.on_base_written(user_id)
            if not ok:
                return written
            written += 1
            log.info(
                "base memory of %s rewritten from %d summaries (%d words)",
                user_id,
                len(batch),
                len(content.split()),
            )
