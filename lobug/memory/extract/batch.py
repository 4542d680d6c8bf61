"""Several exchanges of one conversation in one extraction call (issue 22).

When the LLM lane opens after a conversation, the exchanges it left are read together: one
model call instead of one per exchange (the instructions' chat template, the task line and the
answer's brackets once, not every time). The extract job that runs first leads: it takes along
the pending extract jobs of the same session (marking them in one transaction, so another
worker's job does not take them too), asks once, gives each exchange the facts the model numbered
with it (`attribute`), and leaves each job its facts in its payload. Those jobs
then judge, cap and store their own facts as before, with their own provenance, without a
model call of their own. A taken-along job whose leader failed or was preempted before handing
out (no facts in its payload) simply asks for itself.

With several workers, more than one extract job of a session may be claimed before the lane
opens. Whichever reaches the model first leads: it marks itself and takes along the others,
waiting or not; a job that finds itself taken along by a leader still at work waits for the
facts the leader hands it, or leads itself if the leader gives up.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lobug.conversation import TurnRecord, get_turn
from lobug.memory import enqueue
from lobug.memory.extract import llm as extraction
from lobug.memory.search.fts import fold, query_tokens
from lobug.memory.search.lexical import matcher
from lobug.workers.queue import Job

MAX_EXCHANGES = 6  # per call: ~2 facts each stays under extraction.MAX_FACTS
MAX_CHARS = 4000  # the exchanges' words in one prompt, well inside a small model's context


@dataclass(frozen=True)
class Exchange:
    job_id: int
    user: TurnRecord
    assistant: TurnRecord | None

    @property
    def shown(self) -> tuple[str, str | None]:
        return self.user.text, self.assistant.text if self.assistant else None


def given(payload: dict[str, Any]) -> list[extraction.Extracted] | None:
    """The facts a leader handed this job (None: it asks the model itself)."""
    facts = payload.get("facts")
    if not isinstance(facts, list):
        return None
    return [
        extraction.Extracted(str(f["fact"]), str(f["type"]))
        for f in facts
        if isinstance(f, dict) and "fact" in f and "type" in f
    ]


def assistant_of(conn: Any, assistant_turn_id: Any) -> TurnRecord | None:
    """The reply of an exchange, unless it was an apology (it says nothing about the user)."""
    assistant = get_turn(conn, int(assistant_turn_id)) if assistant_turn_id else None
    return None if assistant is None or assistant.degraded else assistant


def take_along(conn: Any, leader: Job, user: TurnRecord) -> list[Exchange] | None:
    """None when another extract job, still at work, took `leader` along (its facts are
    coming). Else mark `leader` as leading, and mark and return the extract jobs of `user`'s
    session that no leader at work took (pending, or claimed by another worker and still
    waiting for the lane; a mark left by a crash counts for nothing), oldest first, as many as
    fit one call beside the leader's own exchange."""
    if conn.execute(
        "SELECT 1 FROM jobs j JOIN jobs l ON l.id = json_extract(j.payload, '$.batch')"
        " WHERE j.id = ? AND l.id != j.id AND l.state = 'running'",
        (leader.id,),
    ).fetchone():
        return None
    _set(conn, {leader.id: leader.id}, "$.batch")
    rows = conn.execute(
        "SELECT j.id, j.payload FROM jobs j"
        " JOIN turns t ON t.id = json_extract(j.payload, '$.user_turn_id')"
        " WHERE j.kind = ? AND j.state IN ('pending', 'running') AND j.id != ?"
        " AND t.session_id = ?"
        " AND json_extract(j.payload, '$.refine') IS NULL"
        " AND NOT EXISTS (SELECT 1 FROM jobs l WHERE l.state = 'running'"
        " AND l.id = json_extract(j.payload, '$.batch'))"  # none, or a leader no longer at work
        " AND json_extract(j.payload, '$.facts') IS NULL"
        " ORDER BY t.id LIMIT ?",
        (enqueue.EXTRACT, leader.id, user.session_id, MAX_EXCHANGES - 1),
    ).fetchall()
    chars = len(user.text)
    taken: list[Exchange] = []
    for row in rows:
        payload = json.loads(row["payload"])
        said = get_turn(conn, int(payload["user_turn_id"]))
        if said is None:
            continue
        reply = assistant_of(conn, payload.get("assistant_turn_id"))
        chars += len(said.text) + len(reply.text if reply else "")
        if taken and chars > MAX_CHARS:
            break
        taken.append(Exchange(int(row["id"]), said, reply))
    _set(conn, {e.job_id: leader.id for e in taken}, "$.batch")
    return taken


def hand_out(conn: Any, facts: dict[int, list[extraction.Extracted]]) -> None:
    """Each taken-along job's facts into its payload (it may have been claimed meanwhile: a
    running job asked for itself, and the facts are left unread)."""
    _set(
        conn,
        {
            job_id: [{"fact": c.content, "type": c.category} for c in found]
            for job_id, found in facts.items()
        },  # fmt: skip
        "$.facts",
    )


def handed(conn: Any, job_id: int) -> list[extraction.Extracted] | None:
    """The facts a leader handed `job_id` since it stepped back (None: none yet)."""
    row = conn.execute("SELECT payload FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return given(json.loads(row["payload"])) if row else None


def release(conn: Any, job_ids: Sequence[int]) -> None:
    """The leader failed before handing out: a later leader may take these jobs (and the
    leader's own) along, or they ask for themselves."""
    for job_id in job_ids:
        conn.execute(
            "UPDATE jobs SET payload = json_remove(payload, '$.batch') WHERE id = ?"
            " AND json_extract(payload, '$.facts') IS NULL",
            (job_id,),
        )


def clear(conn: Any, job_id: int) -> None:
    """Drop the handed-out facts from a job that is done with them: the memories hold what was
    kept, and a purged turn leaves no copy of its words in the queue."""
    conn.execute(
        "UPDATE jobs SET payload = json_remove(payload, '$.facts', '$.batch') WHERE id = ?",
        (job_id,),
    )


def _set(conn: Any, values: dict[int, Any], path: str) -> None:
    for job_id, value in values.items():
        conn.execute(
            "UPDATE jobs SET payload = json_set(payload, ?, json(?)) WHERE id = ?",
            (path, json.dumps(value), job_id),
        )


def attribute(
    found: Sequence[extraction.Extracted], exchanges: Sequence[tuple[str, str | None]]
) -> tuple[list[list[extraction.Extracted]], int]:
    """Each fact to the exchange the model numbered it with (issue 38: a paraphrase, "The user
    is vegetarian." for "I don't eat meat any more.", shares no word with what was said).
    A fact without a valid number goes to the exchange whose user's words it shares most
    (facts come from what the user said); the reply's words break a tie, then the later
    exchange wins (a later one restates, corrects or completes); one sharing no word with any
    goes to the last. Returns the facts by exchange and how many went by words (the caller
    logs and counts them: a fact is never placed or dropped silently)."""
    out: list[list[extraction.Extracted]] = [[] for _ in exchanges]
    guessed = 0
    for fact in found:
        if fact.exchange is not None and 1 <= fact.exchange <= len(exchanges):
            out[fact.exchange - 1].append(fact)
            continue
        guessed += 1
        # The fact's words found in each exchange as the search finds them (`lexical.matcher`:
        # one tokeniser, a prefix for 4+ letters, a verb's irregular forms).
        holds = matcher([fold(t) for t in query_tokens(fact.content)])
        best = max(
            range(len(exchanges)),
            key=lambda i: (holds(exchanges[i][0]), holds(exchanges[i][1] or ""), i),
        )
        out[best].append(fact)
    return out, guessed
