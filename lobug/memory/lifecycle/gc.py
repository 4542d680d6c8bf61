"""The GC pass as the daemon runs it: lifecycle.run_gc, plus delta bullets for what vanished.

Decay, rescoring, promotion and demotion change no memory's visibility and are not news. An
archive or a decay/TTL soft delete removes a memory from retrieval, so the delta header says
so once (seed 001 §7): one bullet per user and kind of change per pass ("deleted" for
archived, "soft_deleted" for soft-deleted), with counts and reasons but no text — a memory
that left retrieval must not come back into the prompt through the header, and a pass that
archives hundreds must not fill it. A purge of an already soft-deleted memory is not news
again. The pass and its bumps are one transaction.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from lobug.memory.lifecycle.policies import GcParams, run_gc
from lobug.memory.store import delta

GC_KEYS = ("rescored", "decayed", "promoted", "demoted", "archived", "soft_deleted", "purged")
_VANISHED = {"ARCHIVE": "deleted", "SOFT_DELETE": "soft_deleted", "TTL": "soft_deleted"}
_WHAT = {"deleted": "archived", "soft_deleted": "set aside for deletion"}


def gc_pass(conn: Any, *, now: float, params: GcParams, actor: str) -> dict[str, int]:
    before = conn.execute("SELECT COALESCE(MAX(id), 0) FROM history").fetchone()[0]
    counts = run_gc(conn, now, params, actor=actor)
    rows = conn.execute(
        "SELECT user_id, event, meta FROM history"
        " WHERE id > ? AND event IN ('ARCHIVE', 'SOFT_DELETE', 'TTL') ORDER BY id",
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
        summary = f"{n} unused memor{'y' if n == 1 else 'ies'} {_WHAT[event]} ({detail})"
        delta.bump(conn, None, None, event, {"summary": summary, "count": n}, now, user_id)
    return {key: int(counts.get(key, 0)) for key in GC_KEYS}
