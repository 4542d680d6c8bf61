"""The daily consolidation's pairs (seed 001 §4): candidate pool, similarity band, fingerprints.

No LLM here. The pool is the active facts new or changed in the last `POOL_HOURS`, those of
importance ≥ `POOL_IMPORTANCE`, and the most retrieved tenth. Each is paired with its nearest
stored facts (vectors; BM25 and word overlap when sqlite-vec is absent) in the same store, and a
pair is kept when its similarity is ≥ `BAND_LOW`, its older fact changed within `RECENCY_DAYS`,
and the two share a content word or both carry a number (a "numeric step": 2 kids, 3 kids).
A pair judged in the last `FINGERPRINT_DAYS` (same ids, same similarity to 2 decimals) is not
offered again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lobug.memory.query import Reach
from lobug.memory.search.lexical import text_ranks
from lobug.memory.table import rows as store
from lobug.memory.table.dedup import jaccard, tokens
from lobug.memory.table.rows import MemoryRow
from lobug.memory.upkeep.events import DAY_S
from lobug.memory.write.judge import FUNCTION_WORDS, MARKER_WORDS
from lobug.storage.sqlite import has_table

NEIGHBOURS = 5  # stored facts each pool fact is paired with
POOL_MAX = 300  # pool facts per run; the rest wait for tomorrow
POOL_HOURS = 72.0  # facts new or changed this recently are checked for duplicates...
POOL_IMPORTANCE = 0.6  # ...and facts at least this important, and the most retrieved
BAND_LOW = 0.6  # similarity from which a pair is worth a look
RECENCY_DAYS = 90.0  # pairs whose older fact changed longer ago are left alone
FINGERPRINT_DAYS = 14.0  # a judged pair is not judged again for this long
_NUMBER = re.compile(r"\d")


@dataclass(frozen=True)
class Pair:
    """Two active facts of one user and store; `newer` is the later written."""

    older: MemoryRow
    newer: MemoryRow
    similarity: float

    @property
    def fingerprint(self) -> str:
        key = f"{self.older.id}:{self.newer.id}:{round(self.similarity, 2):.2f}"
        return hashlib.sha256(key.encode()).hexdigest()[:32]


def pool(conn: Any, user_id: str, *, now: float) -> list[MemoryRow]:
    """The facts worth a look today: recent, important, or among the most retrieved."""
    facts = "user_id = ? AND kind = 'fact' AND status = 'active'"
    count = conn.execute(f"SELECT COUNT(*) FROM memories WHERE {facts}", (user_id,)).fetchone()[0]
    decile = conn.execute(
        f"SELECT hits FROM memories WHERE {facts} ORDER BY hits DESC LIMIT 1 OFFSET ?",
        (user_id, max(0, int(count) // 10 - 1)),
    ).fetchone()
    hits_floor = max(1, int(decile[0])) if decile else 1
    rows = conn.execute(
        f"SELECT * FROM memories WHERE {facts} AND (updated_at >= ? OR importance >= ?"
        " OR hits >= ?) ORDER BY updated_at DESC LIMIT ?",
        (user_id, now - POOL_HOURS * 3600.0, POOL_IMPORTANCE, hits_floor, POOL_MAX),
    ).fetchall()
    return [MemoryRow.from_row(r) for r in rows]


def candidate_pairs(conn: Any, facts: list[MemoryRow], *, now: float, vectors: bool) -> list[Pair]:
    """The pool's pairs in the band, most similar first, each once, none judged lately."""
    found: dict[tuple[int, int], Pair] = {}
    for fact in facts:
        near = _vector_neighbours(conn, fact) if vectors else _word_neighbours(conn, fact)
        for other, similarity in near:
            if other.id == fact.id or other.store != fact.store:
                continue
            older, newer = sorted((fact, other), key=lambda r: (r.created_at, r.id))
            pair = Pair(older, newer, round(similarity, 4))
            if (older.id, newer.id) not in found and _worth_a_look(pair, now=now):
                found[(older.id, newer.id)] = pair
    recent = judged_since(conn, now - FINGERPRINT_DAYS * DAY_S)
    fresh = [p for p in found.values() if p.fingerprint not in recent]
    return sorted(fresh, key=lambda p: -p.similarity)


def _worth_a_look(pair: Pair, *, now: float) -> bool:
    if pair.similarity < BAND_LOW:
        return False
    if now - min(pair.older.updated_at, pair.newer.updated_at) > RECENCY_DAYS * DAY_S:
        return False
    if pair.older.pinned and pair.newer.pinned:
        return False  # both are the user's word: neither is ever retired
    shared = tokens(pair.older.content) & tokens(pair.newer.content)
    numbers = _NUMBER.search(pair.older.content) and _NUMBER.search(pair.newer.content)
    return bool(shared - FUNCTION_WORDS - MARKER_WORDS) or bool(numbers)


def _vector_neighbours(conn: Any, fact: MemoryRow) -> list[tuple[MemoryRow, float]]:
    if not has_table(conn, "memory_vectors"):
        return []
    rows = conn.execute(
        "SELECT m.*, v.distance AS distance FROM (SELECT memory_id, distance FROM memory_vectors"
        " WHERE embedding MATCH (SELECT embedding FROM memory_vectors WHERE memory_id = ?)"
        " AND k = ?) v JOIN memories m ON m.id = v.memory_id WHERE m.user_id = ?"
        " AND m.kind = 'fact' AND m.status = 'active' ORDER BY v.distance LIMIT ?",
        (fact.id, NEIGHBOURS * 4, fact.user_id, NEIGHBOURS + 1),
    ).fetchall()
    # A zero vector has no cosine distance (NULL): it is near nothing.
    found = [r for r in rows if r["distance"] is not None]
    return [(MemoryRow.from_row(r), 1.0 - float(r["distance"])) for r in found]


def _word_neighbours(conn: Any, fact: MemoryRow) -> list[tuple[MemoryRow, float]]:
    """Without sqlite-vec: BM25 neighbours, their word overlap standing in for similarity."""
    flt = Reach(user_id=fact.user_id, kinds=("fact",), stores=(fact.store,), statuses=("active",))
    found = []
    for memory_id in text_ranks(conn, fact.content, NEIGHBOURS + 1, flt=flt):
        row = store.get_memory(conn, memory_id)
        if row is not None and row.status == "active":
            found.append((row, jaccard(fact.content, row.content)))
    return found


def judged_since(conn: Any, since: float) -> set[str]:
    rows = conn.execute("SELECT fingerprint FROM pair_checks WHERE checked_at >= ?", (since,))
    return {r[0] for r in rows}


def remember_judged(conn: Any, pair: Pair, label: str, judge: str, *, now: float) -> None:
    conn.execute(
        "INSERT INTO pair_checks (fingerprint, user_id, a_id, b_id, label, judge, checked_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(fingerprint) DO UPDATE SET"
        " label = excluded.label, judge = excluded.judge, checked_at = excluded.checked_at",
        (pair.fingerprint, pair.older.user_id, pair.older.id, pair.newer.id, label, judge, now),
    )


def forget_judged(conn: Any, before: float) -> int:
    """Fingerprints older than the window go (the pair may be offered again)."""
    return int(conn.execute("DELETE FROM pair_checks WHERE checked_at < ?", (before,)).rowcount)


def judged_by_llm_since(conn: Any, user_id: str, since: float) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM pair_checks WHERE user_id = ? AND judge = 'llm' AND checked_at >= ?",
        (user_id, since),
    ).fetchone()
    return int(row[0])


def rows(conn: Any, ids: Sequence[int]) -> list[MemoryRow]:
    """The active facts among `ids`."""
    found = [store.get_memory(conn, i) for i in ids]
    return [r for r in found if r is not None and r.status == "active" and r.kind == "fact"]
