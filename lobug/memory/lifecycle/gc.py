"""The GC pass as the daemon runs it: lifecycle.run_gc, plus delta bullets for what vanished
(docs/memory.md, "Lifecycle").

Only an archive or a soft delete is news (seed 001 §7): one bullet per user and kind of change
per pass, with counts and reasons but no text, so a pass that archives hundreds cannot fill the
header. The pass also queues a vector, a bounded number per pass, for every live fact without
one, so an archived fact can still be found by meaning.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from lobug.config import LifecycleConfig
from lobug.memory import enqueue
from lobug.memory.lifecycle.policies import run_gc
from lobug.memory.lifecycle.strangers import prune_stranger_turns
from lobug.memory.table import delta, memory_events
from lobug.memory.vectors.knn import facts_without_vector

GC_KEYS = (
    "rescored",
    "promoted",
    "demoted",
    "archived",
    "soft_deleted",
    "expired",
    "purged",
    "stranger_turns_pruned",
)
_VANISHED = {
    "ARCHIVE": "deleted",
    "SOFT_DELETE": "soft_deleted",
    "TTL": "soft_deleted",
    "EXPIRE": "soft_deleted",  # seed 002: past its expires_at
}
_WHAT = {"deleted": "archived", "soft_deleted": "set aside for deletion"}


VECTOR_SWEEP = 500  # facts queued for a vector per pass at most


def gc_pass(conn: Any, *, now: float, cfg: LifecycleConfig, actor: str) -> dict[str, int]:
    before = conn.execute("SELECT COALESCE(MAX(id), 0) FROM history").fetchone()[0]
    counts = run_gc(conn, now, cfg, actor=actor)
    memory_events.from_history(conn, before, node=memory_events.WORKER, now=now)  # seed 001 §14
    memory_events.prune(conn, now=now)
    rows = conn.execute(
        "SELECT user_id, event, meta FROM history"
        " WHERE id > ? AND event IN ('ARCHIVE', 'SOFT_DELETE', 'TTL', 'EXPIRE') ORDER BY id",
        (before,),
    ).fetchall()
    reasons: dict[tuple[str, str], Counter[str]] = {}
    for row in rows:
        reason = json.loads(row["meta"] or "{}").get("reason") or "gc"
        key = (row["user_id"], _VANISHED[row["event"]])
        reasons.setdefault(key, Counter())[reason] += 1
    for (user_id, event), why in sorted(reasons.items()):
        n = sum(why.values())
        detail = ", ".join(f"{reason} {count}" for reason, count in sorted(why.items()))
        unused = "" if "expired" in why else "unused "
        summary = f"{n} {unused}memor{'y' if n == 1 else 'ies'} {_WHAT[event]} ({detail})"
        delta.bump(conn, None, None, event, {"summary": summary, "count": n}, now, user_id)
    for memory_id in facts_without_vector(conn, VECTOR_SWEEP):
        enqueue.embed_memory(conn, memory_id, now=now)
    counts["stranger_turns_pruned"] = prune_stranger_turns(
        conn, now=now, keep_days=cfg.stranger_turn_days
    )
    return {key: int(counts.get(key, 0)) for key in GC_KEYS}
