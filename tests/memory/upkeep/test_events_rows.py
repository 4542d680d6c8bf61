"""Seed 001 §14's per-event rows (`memory_events`), written by the real paths on a real DB:
an extraction job's writes (node `hotpath`), the prompt's memory search (`context`, written
with the retrieval hits), the GC and the daily consolidation (`worker`); pruned by the GC;
counted in `/v1/stats`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from api_kit import make_app
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script, drain, extract_by_keyword
from near_duplicates import JUDGE, load

from lobug.memory.table.memory_events import RETENTION_DAYS

DAY = 86400.0
TEA = "The user drinks green tea every morning."
COFFEE = "The user drinks black coffee every evening."
FACTS = extract_by_keyword({"tea": [TEA], "coffee": [COFFEE]})


def events(mem: MemoryEnv, node: str | None = None) -> list[dict[str, Any]]:
    sql = "SELECT * FROM memory_events" + (" WHERE node = ?" if node else "") + " ORDER BY id"
    return [dict(r) for r in mem.rows(sql, *([node] if node else []))]


def fact_id(mem: MemoryEnv, content: str) -> int:
    return int(mem.value("SELECT id FROM memories WHERE content = ?", content))


async def test_an_extraction_writes_hotpath_rows_with_the_best_neighbours_similarity(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].script = Script(extract=FACTS)
    await mem.exchange("I drink green tea every morning", session_id="s-1")
    await mem.run()
    (created,) = events(mem)
    tea = fact_id(mem, TEA)
    assert created == {
        **created,
        "user_id": "default",
        "thread_id": "s-1",
        "node": "hotpath",
        "op": "create",
        "status": "ok",
        "memory_id": tea,
        "category": "personal",
        "sim": None,  # the first fact: no neighbour to compare with
        "ts": clock(),
    }

    clock.advance(60)
    await mem.exchange("And black coffee every evening", session_id="s-1")
    await mem.run()
    near = events(mem)[-1]
    assert (near["op"], near["memory_id"]) == ("create", fact_id(mem, COFFEE))
    assert near["sim"] is not None and 0.0 < near["sim"] < 1.0  # the tea fact, by meaning

    await mem.exchange("Green tea every morning, as I said", session_id="s-2")
    await mem.run()
    again = events(mem)[-1]
    # The same fact said again: merged into it (an exact duplicate: similarity 1).
    assert (again["op"], again["status"], again["memory_id"]) == ("merge", "ok", tea)
    assert (again["thread_id"], again["sim"]) == ("s-2", 1.0)
    assert mem.value("SELECT COUNT(*) FROM memory_events") == 3


async def test_a_context_search_is_written_with_the_hits_not_on_the_turn(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any, monkeypatch: Any
) -> None:
    ollama[0].script = Script(extract=FACTS)
    await mem.exchange("I drink green tea every morning", session_id="s-1")
    await mem.run()
    clock.advance(60)
    await mem.service.prompt_sections(user_id="default", session_id="s-2", text="green tea")
    assert events(mem, "context") == []  # the turn wrote nothing
    await mem.service.flush_hits()
    (search,) = events(mem, "context")
    tea = fact_id(mem, TEA)
    assert (search["op"], search["status"], search["thread_id"]) == ("search", "ok", "s-2")
    assert (search["memory_id"], search["category"], search["ts"]) == (tea, "personal", clock())
    # One transaction with the hit it counted.
    assert mem.value("SELECT hits FROM memories WHERE id = ?", tea) == 1

    async def unreachable(text: str) -> Any:
        raise RuntimeError("embedder gone")

    monkeypatch.setattr(mem.service.vectors, "later", unreachable)
    await mem.service.prompt_sections(user_id="default", session_id="s-2", text="green tea")
    await mem.service.flush_hits()  # no hit to write: the event alone
    failed = events(mem, "context")[-1]
    assert (failed["status"], failed["memory_id"]) == ("error", None)


async def test_the_gc_writes_its_changes_and_prunes_old_rows(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].script = Script(extract=FACTS)
    await mem.exchange("I drink green tea every morning", session_id="s-1")
    await mem.run()
    assert [e["node"] for e in events(mem)] == ["hotpath"]

    clock.advance((RETENTION_DAYS + 1) * DAY)  # idle past archive_idle_days, too
    assert (await mem.service.gc(actor="scheduler"))["archived"] == 1
    (archived,) = events(mem)  # the create, 31 days old, pruned in the same pass
    assert archived == {
        **archived,
        "node": "worker",
        "op": "archive",
        "status": "ok",
        "memory_id": fact_id(mem, TEA),
        "category": "personal",
        "ts": clock(),
    }


async def test_consolidation_writes_a_worker_row_per_merge(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].judge = JUDGE
    await load(mem)
    await mem.service.periodic.run_due()  # the schedule's first check starts its clock
    clock.advance(DAY + 1)
    assert "consolidate" in await mem.service.periodic.run_due()
    await mem.run()

    merges = [e for e in events(mem, "worker") if e["op"] != "link"]  # the edges: their test
    merged_away = mem.value("SELECT COUNT(*) FROM memories WHERE status = 'archived'")
    assert len(merges) == merged_away == 6
    metas = [
        json.loads(r["meta"]) for r in mem.rows("SELECT meta FROM history WHERE event = 'MERGE'")
    ]
    judged = [m["similarity"] for m in metas if "merged" in m]  # the kept one's MERGE
    for row in merges:
        assert (row["op"], row["status"], row["thread_id"]) == ("merge", "ok", None)
        assert mem.value("SELECT status FROM memories WHERE id = ?", row["memory_id"]) == "active"
        assert row["sim"] is not None and 0.5 < row["sim"] <= 1.0
    # Each row carries the similarity its pair was judged at.
    assert sorted(e["sim"] for e in merges) == pytest.approx(sorted(judged), abs=1e-4)


async def test_stats_count_the_events_by_node_and_operation(
    make_client: Callable[..., Any], ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].script = Script(extract=FACTS)
    app = await make_app(make_client)
    resp = await app.client.post("/chat/text", json={"text": "I drink green tea every morning"})
    assert resp.status == 200, await resp.json()
    await drain(app.db_path, clock)

    found = (await app.local.get("/v1/stats"))["operations"]["events"]
    create = found["hotpath"]["create"]
    assert (create["count"], create["by_status"], create["by_day"][-1]) == (1, {"ok": 1}, 1)
    assert app.value("SELECT thread_id FROM memory_events WHERE op = 'create'") is not None


async def test_a_stored_summary_writes_an_episodic_row(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    ollama[0].script = Script(summarize=lambda _: "The user and Lo-Bug talked about tea.")
    for i in range(15):
        await mem.exchange(f"message {i}", f"reply {i}")
    await mem.run()
    summary = mem.value("SELECT id FROM memories WHERE kind = 'summary'")
    assert [(e["op"], e["status"], e["memory_id"]) for e in events(mem, "episodic")] == [
        ("create", "ok", summary)
    ]


async def test_every_relation_edge_writes_a_link_row(
    make_client: Callable[..., Any], clock: Any
) -> None:
    """Seed 001 §14's op `link` (issue 44): each `related_to` edge `link_neighbours` makes
    when a fact's vector arrives (the embed job: node `worker`) writes one row, in the same
    transaction, with the fact, its category and the edge's strength; `/v1/stats` counts them."""
    app = await make_app(make_client)
    made = [
        await app.remember(f"The user planted {plant} by the {wall} garden wall.", category="home")
        for plant, wall in (("basil", "north"), ("mint", "south"), ("thyme", "east"))
    ]
    assert [m["action"] for m in made] == ["added"] * 3
    await drain(app.db_path, clock)
    edges = app.rows(
        "SELECT from_id, to_id, strength FROM relations WHERE relation_type = 'related_to'"
        " ORDER BY id"
    )
    assert edges, "the plantings are alike enough to link"
    links = app.rows("SELECT * FROM memory_events WHERE op = 'link' ORDER BY id")
    assert [(e["node"], e["status"], e["memory_id"], e["category"]) for e in links] == [
        ("worker", "ok", edge["from_id"], "home") for edge in edges
    ]
    assert [e["sim"] for e in links] == [round(edge["strength"], 4) for edge in edges]
    assert {e["memory_id"] for e in links} <= {m["id"] for m in made}
    found = (await app.local.get("/v1/stats"))["operations"]["events"]
    assert found["worker"]["link"]["count"] == len(edges)
