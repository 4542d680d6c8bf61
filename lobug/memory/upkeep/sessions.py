"""Session consolidation (seed 003): a session the user left is consolidated once.

A session switch enqueues one `consolidate_session` job per ended, unconsolidated session of
the device (`enqueue_ended`, in the turn's transaction); the daily schedule enqueues the ones
left behind (`enqueue_idle`). The job waits until every exchange went through extraction,
writes seed 002's record of the session (`SessionSummarizer`: request, outcome, decisions,
open items), consolidates the session's facts only and sets `sessions.consolidated_at`
(idempotent: a consolidated session is skipped).

The record costs one LLM call per ended session, from the upkeep budget, for the owner's
sessions only (a lower-trust caller's words reach no summary) with at least
`SUMMARY_MIN_USER_TURNS` user turns (a one-question session is its own summary, and the model's
time on a Pi is scarce); a session summarised up to its last turn is not asked about again.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from lobug.conversation import CONVERSATION_TURN, TurnRecord
from lobug.llm.ask import InvalidOutput, ask, plain_text
from lobug.llm.client import LLMClient, LLMUnavailable, OutputSchema
from lobug.llm.replies import json_value
from lobug.memory import enqueue, instructions
from lobug.memory.table.rows import bump_counter, extracted_from
from lobug.memory.upkeep.budget import LlmBudget
from lobug.storage.database import Database
from lobug.workers import queue
from lobug.workers.runner import RetryLater

log = logging.getLogger(__name__)

CONSOLIDATE_SESSION = "consolidate_session"
RECENT_SESSIONS = 5  # the device's latest sessions looked at per turn (indexed)
IDLE_BATCH = 50  # ended sessions the daily schedule enqueues at most
EXTRACTION_WAIT_S = 30.0


def _key(session_id: str) -> str:
    return f"{CONSOLIDATE_SESSION}:{session_id}"


def enqueue_ended(conn: Any, turn: TurnRecord, *, now: float) -> list[int]:
    """In the user turn's transaction: a job for each of the device's other recent sessions
    not consolidated yet (none already queued or given up on). A consolidated session the
    user comes back to is open again: its new exchanges are consolidated when it ends."""
    conn.execute(
        "UPDATE sessions SET consolidated_at = NULL WHERE id = ? AND consolidated_at IS NOT NULL",
        (turn.session_id,),
    )
    rows = conn.execute(
        "SELECT id, user_id FROM sessions WHERE device_id = ? AND id != ?"
        " AND consolidated_at IS NULL ORDER BY last_active DESC LIMIT ?",
        (turn.device_id, turn.session_id, RECENT_SESSIONS),
    ).fetchall()
    return _enqueue_sessions(conn, rows, now=now)


def enqueue_idle(conn: Any, *, now: float, idle_s: float) -> list[int]:
    """The schedule's catch-up: sessions idle for `idle_s` and never consolidated."""
    rows = conn.execute(
        "SELECT id, user_id FROM sessions WHERE consolidated_at IS NULL AND last_active < ?"
        " ORDER BY last_active DESC LIMIT ?",
        (now - idle_s, IDLE_BATCH),
    ).fetchall()
    return _enqueue_sessions(conn, rows, now=now)


def _enqueue_sessions(conn: Any, rows: list[Any], *, now: float) -> list[int]:
    """A job per session, except one whose job failed for good (`lobug jobs retry` runs it
    again, not every turn)."""
    jobs = []
    for row in rows:
        key = _key(row["id"])
        if conn.execute(
            "SELECT 1 FROM jobs WHERE kind = ? AND state = 'failed' AND dedupe_key = ? LIMIT 1",
            (CONSOLIDATE_SESSION, key),
        ).fetchone():
            continue
        payload = {"user_id": row["user_id"], "session_id": row["id"]}
        jobs.append(queue.enqueue(conn, CONSOLIDATE_SESSION, payload, now=now, dedupe_key=key))
    return jobs


def is_consolidated(conn: Any, session_id: str) -> bool:
    row = conn.execute(
        "SELECT consolidated_at FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return row is None or row[0] is not None  # a session that is gone has nothing to do


def extraction_owed(conn: Any, session_id: str) -> tuple[list[tuple[int, int | None]], int]:
    """(the exchanges no extraction job ever saw: (user turn, its reply), how many are still
    pending or running)."""
    missing: list[tuple[int, int | None]] = []
    pending = 0
    users = conn.execute(
        f"SELECT id FROM turns WHERE session_id = ? AND role = 'user' AND {CONVERSATION_TURN}"
        " ORDER BY id",
        (session_id,),
    ).fetchall()
    for (turn_id,) in users:
        states = {
            r[0]
            for r in conn.execute(
                "SELECT state FROM jobs WHERE kind = ? AND dedupe_key = ?",
                (enqueue.EXTRACT, f"{enqueue.EXTRACT}:{turn_id}"),
            )
        }
        if states & {"pending", "running"}:
            pending += 1
        elif not states and not extracted_from(conn, turn_id):
            missing.append((int(turn_id), _reply_to(conn, session_id, int(turn_id))))
    return missing, pending


def _reply_to(conn: Any, session_id: str, turn_id: int) -> int | None:
    row = conn.execute(
        "SELECT id, role FROM turns WHERE session_id = ? AND id > ? ORDER BY id LIMIT 1",
        (session_id, turn_id),
    ).fetchone()
    return int(row["id"]) if row is not None and row["role"] == "assistant" else None


def extract_missing(
    conn: Any,
    user_id: str,
    missing: list[tuple[int, int | None]],
    *,
    now: float,
) -> None:
    for user_turn, reply in missing:
        enqueue.extract(
            conn,
            user_id=user_id,
            user_turn_id=user_turn,
            assistant_turn_id=reply,
            now=now,
        )


def session_facts(conn: Any, session_id: str, user_id: str) -> list[int]:
    rows = conn.execute(
        "SELECT id FROM memories WHERE session_id = ? AND user_id = ? AND kind = 'fact'"
        " AND status = 'active' ORDER BY id",
        (session_id, user_id),
    )
    return [int(r[0]) for r in rows]


def mark_consolidated(conn: Any, session_id: str, *, now: float) -> None:
    conn.execute(
        "UPDATE sessions SET consolidated_at = ? WHERE id = ? AND consolidated_at IS NULL",
        (now, session_id),
    )
    # The record's fact count after the consolidation's merges (no call: a count).
    conn.execute(
        "UPDATE session_summaries SET observation_count = (SELECT COUNT(*) FROM memories m"
        " WHERE m.session_id = session_summaries.session_id AND m.user_id ="
        " session_summaries.user_id AND m.status = 'active') WHERE session_id = ?",
        (session_id,),
    )


# -- seed 002's session summary ------------------------------------------------------------------
SUMMARY_MIN_USER_TURNS = 2  # a single exchange is not worth a call (see the docstring)
SUMMARY_TURNS = 40  # turns shown to the model at most: the first ones (the request) and the last
SUMMARY_HEAD = 8
SUMMARY_TURN_CHARS = 600
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)")
SUMMARY_MAX_TOKENS = 400  # four short fields
MAX_ITEMS = 10  # decisions, open items kept at most
MAX_FIELD_CHARS = 600
SUMMARY_INVALID = "session_summary_invalid_total"

SUMMARY_SCHEMA = OutputSchema(
    "session_summary",
    {
        "type": "object",
        "properties": {
            "request": {"type": "string"},
            "outcome": {"type": "string"},
            "decisions": {"type": "array", "items": {"type": "string"}},
            "open_items": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["request", "outcome", "decisions", "open_items"],
    },
)


@dataclass(frozen=True)
class SessionRecord:
    request: str
    outcome: str
    decisions: tuple[str, ...]
    open_items: tuple[str, ...]


@dataclass(frozen=True)
class SummaryInput:
    transcript: str
    turn_count: int
    last_turn_id: int


def summary_input(conn: Any, session_id: str, user_id: str) -> SummaryInput | None:
    """What the model reads about an ended session; None when there is nothing to ask: not the
    owner's session, fewer than SUMMARY_MIN_USER_TURNS user turns, or already summarised up to
    its last turn."""
    session = conn.execute(
        "SELECT trust FROM sessions WHERE id = ? AND user_id = ?", (session_id, user_id)
    ).fetchone()
    if session is None or session["trust"] != "full":
        return None
    rows = conn.execute(
        f"SELECT id, role, text FROM turns WHERE session_id = ? AND {CONVERSATION_TURN}"
        " ORDER BY id",
        (session_id,),
    ).fetchall()
    if sum(r["role"] == "user" for r in rows) < SUMMARY_MIN_USER_TURNS:
        return None
    last = int(rows[-1]["id"])
    done = conn.execute(
        "SELECT last_turn_id FROM session_summaries WHERE session_id = ?", (session_id,)
    ).fetchone()
    if done is not None and done[0] is not None and int(done[0]) >= last:
        return None
    shown = list(rows)
    gap = len(rows) - SUMMARY_TURNS
    lines = []
    if gap > 0:
        shown = rows[:SUMMARY_HEAD] + rows[SUMMARY_HEAD + gap :]
    for index, row in enumerate(shown):
        if gap > 0 and index == SUMMARY_HEAD:
            lines.append(f"(… {gap} turns left out …)")
        who = "User" if row["role"] == "user" else instructions.ASSISTANT_NAME
        text = " ".join(str(row["text"]).split())
        if row["role"] != "user":
            text = _first_sentence(text)
        if len(text) > SUMMARY_TURN_CHARS:
            text = text[:SUMMARY_TURN_CHARS] + "…"
        lines.append(f"{who}: {text}")
    return SummaryInput("\n".join(lines), len(rows), last)


def _first_sentence(reply: str) -> str:
    """What Lo-Bug answered, in its first sentence: a spoken reply leads with the answer, and
    the rest (a suggestion, a question back) would cost the record's call ~40 % more prefill
    on a Pi (issue 22's benchmark: 1,336 tokens for 24 exchanges)."""
    found = _SENTENCE.match(reply)
    return found.group(1) if found else reply


def parse_summary(raw: str) -> SessionRecord:
    """The model's JSON object (a code fence or reasoning around it tolerated); InvalidOutput
    when it is not one with a non-empty `request` and string fields."""
    text = plain_text(raw)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise InvalidOutput("not a JSON object", raw=raw)
    try:
        data = json_value(text[start : end + 1])
    except ValueError as exc:
        raise InvalidOutput(f"not JSON: {exc}", raw=raw) from None
    if not isinstance(data, dict):
        raise InvalidOutput("not a JSON object", raw=raw)
    request, outcome = _line(data.get("request")), _line(data.get("outcome"))
    if not request:
        raise InvalidOutput("no 'request'", raw=raw)
    if outcome is None:
        raise InvalidOutput("'outcome' must be a string", raw=raw)
    return SessionRecord(
        request, outcome, _items(data.get("decisions"), raw), _items(data.get("open_items"), raw)
    )


def _line(value: Any) -> str | None:
    if value is None:
        return ""
    if not isinstance(value, str):
        return None
    return " ".join(value.split())[:MAX_FIELD_CHARS]


def _items(value: Any, raw: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):  # one item said as a string
        value = [value] if value.strip() else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidOutput("'decisions' and 'open_items' must be lists of strings", raw=raw)
    kept = [line for v in value if (line := _line(v))]
    return tuple(dict.fromkeys(kept))[:MAX_ITEMS]


def store_summary(
    conn: Any,
    session_id: str,
    user_id: str,
    summary: SessionRecord,
    given: SummaryInput,
    *,
    now: float,
) -> None:
    """Insert or replace the session's record (a session the user came back to is summarised
    again when it ends again); a newer record already stored wins."""
    facts = conn.execute(
        "SELECT COUNT(*) FROM memories WHERE session_id = ? AND user_id = ? AND status = 'active'",
        (session_id, user_id),
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO session_summaries (session_id, user_id, request, outcome, decisions,"
        " open_items, observation_count, turn_count, last_turn_id, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET"
        " request = excluded.request, outcome = excluded.outcome,"
        " decisions = excluded.decisions, open_items = excluded.open_items,"
        " observation_count = excluded.observation_count, turn_count = excluded.turn_count,"
        " last_turn_id = excluded.last_turn_id, updated_at = excluded.updated_at"
        " WHERE excluded.last_turn_id > COALESCE(session_summaries.last_turn_id, 0)",
        (
            session_id,
            user_id,
            summary.request,
            summary.outcome,
            json.dumps(list(summary.decisions), ensure_ascii=False),
            json.dumps(list(summary.open_items), ensure_ascii=False),
            int(facts),
            given.turn_count,
            given.last_turn_id,
            now,
            now,
        ),
    )


def read_summary(conn: Any, session_id: str, user_id: str) -> dict[str, Any] | None:
    """The session's record as the API shows it, or None."""
    row = conn.execute(
        "SELECT session_id, request, outcome, decisions, open_items, observation_count,"
        " turn_count, last_turn_id, created_at, updated_at FROM session_summaries"
        " WHERE session_id = ? AND user_id = ?",
        (session_id, user_id),
    ).fetchone()
    if row is None:
        return None
    lists = {key: json.loads(row[key]) for key in ("decisions", "open_items")}
    return {**dict(row), **lists}


class SessionSummarizer:
    """One LLM call per ended session for seed 002's record (see the module's docstring)."""

    def __init__(
        self,
        *,
        db: Database,
        llm: LLMClient,
        budget: LlmBudget,
        clock: Callable[[], float],
        timeout_s: float,
    ) -> None:
        self.db = db
        self.llm = llm
        self.budget = budget
        self.clock = clock
        self.timeout_s = timeout_s

    async def run(self, session_id: str, user_id: str) -> bool:
        """Summarise the session if it needs it; True when a record was written. An outage or
        an empty answer is RetryLater (nothing written), a spent budget NotReady; an answer
        still invalid after the reminder is counted and logged, and the session goes on
        without a record rather than block its consolidation."""
        given = await self.db.read(summary_input, session_id, user_id)
        if given is None:
            return False
        await self.budget.take("session summary", user_id)
        started = time.perf_counter()
        try:
            summary = await ask(
                self.llm,
                instructions.session_summary_messages(given.transcript),
                parse_summary,
                reminder=instructions.SESSION_REMINDER,
                what="session summary",
                timeout_s=self.timeout_s,
                schema=SUMMARY_SCHEMA,
                max_tokens=SUMMARY_MAX_TOKENS,
            )
        except LLMUnavailable as exc:
            await self.budget.record(1, started, ok=False)
            raise RetryLater(f"session summary: LLM unavailable: {exc}") from None
        except InvalidOutput as exc:
            if not exc.raw.strip():
                await self.budget.record(1, started, ok=False)
                raise RetryLater(f"session summary: empty answer: {exc}") from None
            await self.budget.record(2, started, ok=False)
            await self.db.write(bump_counter, SUMMARY_INVALID)
            log.warning("session %s: no summary, the model's answer was invalid twice (%s)",
                        session_id, exc)  # fmt: skip
            return False
        await self.budget.record(1, started)
        await self.db.write(
            partial(store_summary, now=self.clock()), session_id, user_id, summary, given
        )
        return True
