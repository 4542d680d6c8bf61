"""The daily consolidation's candidate pairs (upkeep/pairs.py) on a real DB with sqlite-vec:
seed 001 §4's recency bound leaves pairs alone once either fact is 90 days unchanged."""

from __future__ import annotations

from functools import partial
from typing import Any

from memory_kit import MemoryEnv

from lobug.memory import enqueue
from lobug.memory.table import rows as store
from lobug.memory.upkeep.pairs import RECENCY_DAYS, candidate_pairs, pool

DAY = 86400.0
TWINS = ["The user drinks green tea every morning.", "The user drinks green tea each morning."]


def insert(conn: Any, texts: list[str], *, now: float) -> list[int]:
    ids = []
    for text in texts:  # important enough to stay in the pool however old (POOL_IMPORTANCE)
        memory_id = store.insert_memory(
            conn, user_id="default", kind="fact", content=text, now=now, actor="t", importance=0.8
        )
        enqueue.embed_memory(conn, memory_id, now=now)
        ids.append(memory_id)
    return ids


async def pairs_now(mem: MemoryEnv) -> list[tuple[int, int]]:
    def read(conn: Any) -> list[tuple[int, int]]:
        now = mem.clock()
        facts = pool(conn, "default", now=now)
        found = candidate_pairs(conn, facts, now=now, vectors=True)
        return [(p.older.id, p.newer.id) for p in found]

    return await mem.db.read(read)


async def test_a_pair_is_looked_at_until_its_facts_are_90_days_unchanged(
    mem: MemoryEnv, clock: Any
) -> None:
    ids = await mem.db.write(partial(insert, now=clock()), TWINS)
    await mem.run()  # their vectors
    clock.advance((RECENCY_DAYS - 1) * DAY)
    assert await pairs_now(mem) == [tuple(ids)]
    clock.advance(2 * DAY)
    assert await pairs_now(mem) == []
