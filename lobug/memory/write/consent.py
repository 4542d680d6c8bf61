"""Consent for profile fields heard by voice (seed 001 §10): proposals, not silent writes
(docs/memory.md, "Consent").

A spoken fact that sets a profile field is held in `proposals`: a sensitive field
(`profile_fields.SENSITIVE`) waits up to `memory.consent_days` for an explicit yes (the API, the
CLI, or "yes, remember that": `consent_chat`), asked about by the prompt (`to_confirm`) and
expired by the GC (`expire_due`); a benign one is applied once `SIGNALS` separate turns said
it, or a confident insight did (`from_insight`). Typed words and values already held are
written as usual. Every decision is in `history` (PROPOSE, ACCEPT, REJECT, EXPIRE); an accepted
proposal goes through `reconcile` (source `consent`), so a new name supersedes the old one.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from lobug import errors
from lobug.config import MemoryConfig
from lobug.memory import enqueue
from lobug.memory.settings import WritePolicy
from lobug.memory.table import rows as store
from lobug.memory.table.dedup import content_hash
from lobug.memory.vectors.knn import VECTOR_KINDS
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.fact_keys import key_string
from lobug.memory.write.profile_fields import MULTI, Field, detect, norm
from lobug.memory.write.reconcile import Origin, reconcile

STATUSES = ("pending", "accepted", "rejected", "expired")
IMPORTANCE = {"preferred_name": 0.9, "pronouns": 0.8, "city": 0.8, "language": 0.7,
              "tone": 0.6, "goals": 0.6}  # fmt: skip
STORE = "private"  # profile facts are the owner's
AUTO = "consent"  # the actor of an automatic decision (auto-apply, expiry)
CONFIRM_MAX = 2  # pending proposals the prompt asks about at once
ASKED_KEPT = 4096  # (session, proposal) pairs remembered as asked about
SIGNALS = 2  # a benign profile field (tone, goals) heard this often is applied without a "yes"
DAY_S = 86400.0
USER = "default"

INSIGHT_CONFIDENCE = 0.8  # an insight's importance (4 of 5) that applies a benign field


def mentions(text: str, value: str) -> bool:
    """Whether `text` names `value` as words ("Al" is not in "shall")."""
    wanted = norm(value)
    return bool(wanted) and re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", norm(text)) is not None


# -- the extract job's door --------------------------------------------------------------------
def intercept(
    conn: Any,
    cand: Candidate,
    vector: Sequence[float] | None = None,
    *,
    origin: Origin,
    voice: bool,
    cfg: MemoryConfig,
    policy: WritePolicy,
    now: float,
    auto: bool = True,
) -> bool:
    """Called on each extracted candidate before `reconcile`. True: consent took it (held as a
    proposal, or — a benign field corroborated often enough — written here); do not reconcile
    it again. False: write it as usual (typed, no profile field, or nothing would change).
    auto False (said by someone other than the owner): a proposal at most, never applied without
    the owner's yes; it neither replaces nor corroborates a pending one."""
    if not voice or cand.kind != "fact":
        return False
    found = detect(cand.content)
    if found is None or _known(conn, cand.content, found, origin.user_id):
        return False
    turn = origin.turn_ids[0] if origin.turn_ids else None
    if turn is not None and _decided(conn, origin.user_id, found, turn):
        return True  # a re-run for this turn (the LLM pass after an outage): already decided
    row = _open(conn, origin.user_id, found, now)
    if row is None:
        if auto and found.name not in MULTI:  # below the owner: never displaces a proposal
            _replace_older(conn, origin.user_id, found, now)
        row = _propose(conn, cand, found, origin, cfg, now)
    elif not auto:
        return True  # below the owner: no corroboration either
    else:
        seen = json.loads(row["turn_ids"])
        if turn is None or turn in seen:
            return True  # the same turn said it twice (model and rules): one signal
        conn.execute(
            "UPDATE proposals SET signals = signals + 1, turn_ids = ?, updated_at = ?,"
            " expires_at = MAX(expires_at, ?) WHERE id = ?",
            (json.dumps(seen + [t for t in origin.turn_ids if t not in seen]), now,
             now + cfg.consent_days * DAY_S, row["id"]),
        )  # fmt: skip
        row = proposal_row(conn, row["id"])
    if auto and not found.sensitive and row["signals"] >= SIGNALS:
        _apply(conn, row, vector, actor=AUTO, decision="auto_applied", policy=policy, now=now,
               job_id=origin.job_id)  # fmt: skip
    return True


# -- the insights job's door -------------------------------------------------------------------
def from_insight(
    conn: Any,
    text: str,
    *,
    user_id: str,
    importance: float,
    insight_id: int,
    cfg: MemoryConfig,
    policy: WritePolicy,
    now: float,
    actor: str,
) -> int | None:
    """Seed 001 §10: a benign field is applied "if corroborated by ≥ 2 signals or ToM with high
    confidence". An insight of importance ≥ INSIGHT_CONFIDENCE that sets a benign field is
    written as the fact it states, through a proposal decided at once (PROPOSE, ACCEPT
    `auto_applied`, actor `actor`, meta.insight), like a corroborated one. A sensitive field
    never: an inference is not the owner's yes. Returns the memory written, or None."""
    found = detect(text)
    if importance < INSIGHT_CONFIDENCE or found is None or found.sensitive:
        return None
    if _known(conn, text, found, user_id):
        return None
    row = _open(conn, user_id, found, now)
    if row is None:
        if found.name not in MULTI:
            _replace_older(conn, user_id, found, now)
        cand = Candidate(text, "preference", IMPORTANCE[found.name], ())
        origin = Origin(user_id=user_id, actor=actor, meta={"insight": insight_id})
        row = _propose(conn, cand, found, origin, cfg, now, insight=insight_id)
    _apply(conn, row, None, actor=actor, decision="auto_applied", policy=policy, now=now,
           insight=insight_id)  # fmt: skip
    return int(proposal_row(conn, row["id"])["memory_id"])


def _known(conn: Any, content: str, found: Field, user_id: str) -> bool:
    """The memory already holds this value (no change: reconcile counts the repeat)."""
    if store.active_by_hash(conn, user_id, content_hash(content), "fact") is not None:
        return True
    key = key_string(content)
    if key is None:
        return False
    rows = conn.execute(
        "SELECT content FROM memories WHERE user_id = ? AND fact_key = ? AND kind = 'fact'"
        " AND status = 'active' AND valid_until IS NULL",
        (user_id, key),
    ).fetchall()
    for (held,) in rows:
        other = detect(held)
        if (
            other is not None
            and other.name == found.name
            and norm(other.value) == norm(found.value)
        ):
            return True
    return False


def _open(conn: Any, user_id: str, found: Field, now: float) -> Any:
    for row in conn.execute(
        "SELECT * FROM proposals WHERE user_id = ? AND field = ? AND status = 'pending'"
        " AND expires_at > ? ORDER BY id DESC",
        (user_id, found.name, now),
    ).fetchall():
        if norm(row["value"]) == norm(found.value):
            return row
    return None


def _decided(conn: Any, user_id: str, found: Field, turn: int) -> bool:
    for value, turn_ids in conn.execute(
        "SELECT value, turn_ids FROM proposals WHERE user_id = ? AND field = ?"
        " AND status != 'pending'",
        (user_id, found.name),
    ):
        if turn in json.loads(turn_ids) and norm(value) == norm(found.value):
            return True
    return False


def _propose(
    conn: Any,
    cand: Candidate,
    found: Field,
    origin: Origin,
    cfg: MemoryConfig,
    now: float,
    **extra: Any,
) -> Any:
    cur = conn.execute(
        "INSERT INTO proposals (user_id, field, value, content, category, sensitive, signals,"
        " turn_ids, session_id, created_at, updated_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)",
        (origin.user_id, found.name, found.value, cand.content, cand.category,
         int(found.sensitive), json.dumps(list(origin.turn_ids)), origin.session_id, now, now,
         now + cfg.consent_days * DAY_S),
    )  # fmt: skip
    row = proposal_row(conn, int(cur.lastrowid))
    _history(conn, row, "PROPOSE", None, "proposed", origin.actor, now, job=origin.job_id, **extra)
    return row


def _replace_older(conn: Any, user_id: str, found: Field, now: float) -> None:
    """A newer value for a single-valued field retires the pending one (EXPIRE, replaced)."""
    for row in conn.execute(
        "SELECT * FROM proposals WHERE user_id = ? AND field = ? AND status = 'pending'",
        (user_id, found.name),
    ).fetchall():
        _decide(conn, row, "expired", AUTO, now)
        _history(conn, row, "EXPIRE", None, "replaced", AUTO, now, by_value=found.value)


# -- decisions ---------------------------------------------------------------------------------
def accept(
    conn: Any,
    proposal_id: int,
    *,
    actor: str,
    now: float,
    policy: WritePolicy | None = None,
    user_id: str | None = None,
) -> dict[str, Any]:
    """Write the proposed fact (reconcile, source `consent`: it supersedes the old value);
    404 when there is no such proposal, 409 when it is decided or expired."""
    row = _decidable(conn, proposal_id, user_id, now)
    action = _apply(conn, row, None, actor=actor, decision="accepted",
                    policy=policy or WritePolicy(), now=now)  # fmt: skip
    return {**proposal_dict(proposal_row(conn, proposal_id)), "action": action}


def reject(
    conn: Any, proposal_id: int, *, actor: str, now: float, user_id: str | None = None
) -> dict[str, Any]:
    """Drop the proposal: nothing is written (404 unknown, 409 decided or expired)."""
    row = _decidable(conn, proposal_id, user_id, now)
    _decide(conn, row, "rejected", actor, now)
    _history(conn, row, "REJECT", None, "rejected", actor, now)
    return proposal_dict(proposal_row(conn, proposal_id))


def expire_due(conn: Any, now: float) -> int:
    """Pending proposals past `expires_at` → expired (EXPIRE); for the periodic GC pass."""
    rows = conn.execute(
        "SELECT * FROM proposals WHERE status = 'pending' AND expires_at <= ?", (now,)
    ).fetchall()
    for row in rows:
        _decide(conn, row, "expired", AUTO, now)
        _history(conn, row, "EXPIRE", None, "expired", AUTO, now)
    return len(rows)


def to_confirm(
    conn: Any, *, user_id: str, session_id: str, now: float, limit: int = CONFIRM_MAX
) -> list[tuple[int, str]]:
    """(id, content) of the sensitive proposals of this session the prompt should ask about."""
    rows = conn.execute(
        "SELECT id, content FROM proposals WHERE user_id = ? AND session_id = ? AND sensitive = 1"
        " AND status = 'pending' AND expires_at > ? ORDER BY id DESC LIMIT ?",
        (user_id, session_id, now, limit),
    ).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]


def _apply(
    conn: Any,
    row: Any,
    vector: Sequence[float] | None,
    *,
    actor: str,
    decision: str,
    policy: WritePolicy,
    now: float,
    job_id: int | None = None,
    insight: int | None = None,
) -> str:
    cand = Candidate(row["content"], row["category"], IMPORTANCE.get(row["field"], 0.6), ())
    origin = Origin(
        user_id=row["user_id"],
        session_id=row["session_id"],
        turn_ids=json.loads(row["turn_ids"]),
        actor=actor,
        job_id=job_id,
        store=STORE,
        source="consent",
        meta={"proposal": row["id"], "field": row["field"]}
        | ({"insight": insight} if insight is not None else {}),
    )
    outcome = reconcile(conn, cand, vector, origin=origin, policy=policy, now=now)
    if vector is None and outcome.action in ("added", "superseded") and cand.kind in VECTOR_KINDS:
        enqueue.embed_memory(conn, outcome.memory_id, now=now)
    _decide(conn, row, "accepted", actor, now, memory_id=outcome.memory_id)
    _history(conn, row, "ACCEPT", outcome.memory_id, decision, actor, now,
             action=outcome.action, job=job_id, insight=insight)  # fmt: skip
    return outcome.action


def _decidable(conn: Any, proposal_id: int, user_id: str | None, now: float) -> Any:
    row = proposal_row(conn, proposal_id)
    if row is None or (user_id is not None and row["user_id"] != user_id):
        raise errors.not_found(f"no proposal {proposal_id}")
    if row["status"] != "pending":
        raise errors.conflict(f"proposal {proposal_id} is already {row['status']}")
    if row["expires_at"] <= now:
        raise errors.conflict(f"proposal {proposal_id} has expired")
    return row


def _decide(
    conn: Any, row: Any, status: str, actor: str, now: float, memory_id: int | None = None
) -> None:
    conn.execute(
        "UPDATE proposals SET status = ?, decided_at = ?, decided_by = ?, updated_at = ?,"
        " memory_id = COALESCE(?, memory_id) WHERE id = ?",
        (status, now, actor, now, memory_id, row["id"]),
    )


def _history(
    conn: Any,
    row: Any,
    event: str,
    memory_id: int | None,
    decision: str,
    actor: str,
    now: float,
    **extra: Any,
) -> None:
    meta = {"proposal": row["id"], "field": row["field"], "value": row["value"],
            "decision": decision, "actor": actor, "sensitive": bool(row["sensitive"]),
            **{k: v for k, v in extra.items() if v is not None}}  # fmt: skip
    store.add_history(conn, user_id=row["user_id"], memory_id=memory_id, event=event,
                      actor=actor, now=now, new_value=row["content"], meta=meta)  # fmt: skip


def proposal_row(conn: Any, proposal_id: int) -> Any:
    return conn.execute("SELECT * FROM proposals WHERE id = ?", (proposal_id,)).fetchone()


_KEYS = ("id", "field", "value", "content", "category", "signals", "status", "session_id",
         "memory_id", "created_at", "updated_at", "expires_at", "decided_at",
         "decided_by")  # fmt: skip


def proposal_dict(row: Any) -> dict[str, Any]:
    return {**{k: row[k] for k in _KEYS}, "sensitive": bool(row["sensitive"]),
            "turn_ids": json.loads(row["turn_ids"])}  # fmt: skip


class AskedOnce:
    """Which consent proposals the prompt already asked about, per session: each once (the
    newest ASKED_KEPT kept; a restarted daemon may ask once more)."""

    def __init__(self) -> None:
        self._asked: OrderedDict[tuple[str, int], None] = OrderedDict()

    def first_time(self, session_id: str, items: Sequence[tuple[int, str]]) -> list[str]:
        """The texts of `items` (id, text) not asked about in this session yet; now they are."""
        fresh = []
        for item_id, text in items:
            if (session_id, item_id) not in self._asked:
                self._asked[(session_id, item_id)] = None
                fresh.append(text)
        while len(self._asked) > ASKED_KEPT:
            self._asked.popitem(last=False)
        return fresh

    def not_yet(self, session_id: str, items: Sequence[tuple[int, str]]) -> list[str]:
        """What `first_time` would return now, without marking anything asked (GET
        /v1/context shows what the next prompt would ask)."""
        return [text for item_id, text in items if (session_id, item_id) not in self._asked]
