"""Seed 003: entity enrichment runs before consolidation. The schedule enqueues it first, and
a consolidation job waits (not ready, no attempt spent) while the user's enrichment is pending."""

from __future__ import annotations

from typing import Any

from memory_kit import MemoryEnv

from lobug.memory.table import rows as store
from lobug.memory.upkeep.jobs import CONSOLIDATE, ENRICH, ENRICH_WAIT_S

DAY = 86400.0


async def test_consolidation_waits_for_the_users_enrichment(mem: MemoryEnv, clock: Any) -> None:
    await mem.db.write(
        lambda c: store.insert_memory(
            c, user_id="default", kind="fact", content="Jen lives in Lisbon.", now=clock(),
            actor="test",
        )
    )  # fmt: skip
    await mem.service.periodic.run_due()
    clock.advance(DAY + 1)
    ran = await mem.service.periodic.run_due()
    assert [n for n in ran if n in (ENRICH, CONSOLIDATE)] == [ENRICH, CONSOLIDATE]
    (enrich,) = mem.jobs(ENRICH)
    (consolidate,) = mem.jobs(CONSOLIDATE)
    assert enrich["id"] < consolidate["id"]
    # The enrichment is held back (as a preempted or backed-off job would be).
    held = "UPDATE jobs SET run_after = ? WHERE id = ?"
    await mem.db.write(lambda c: c.execute(held, (clock() + 600, enrich["id"])))
    await mem.run()
    (consolidate,) = mem.jobs(CONSOLIDATE)
    assert consolidate["state"] == "pending" and consolidate["attempts"] == 0
    assert "entity enrichment" in consolidate["last_error"]
    clock.advance(601)
    await mem.run()
    assert mem.jobs(ENRICH)[0]["state"] == "done"
    clock.advance(ENRICH_WAIT_S)  # the consolidation's next look
    await mem.run()
    (enrich,) = mem.jobs(ENRICH)
    (consolidate,) = mem.jobs(CONSOLIDATE)
    assert enrich["state"] == consolidate["state"] == "done"
    assert consolidate["attempts"] <= 1  # waiting spent none
    assert enrich["updated_at"] < consolidate["updated_at"]
