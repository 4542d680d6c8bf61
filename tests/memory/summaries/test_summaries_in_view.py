"""Summaries are embedded and searchable, cascade summaries and base-memory rewrites are in the
delta header, and a new user's base memory is distilled from facts before the long cascade."""

from __future__ import annotations

from typing import Any

from fake_ollama import MEMORY_DEFAULTS, FakeOllamaState
from memory_kit import MemoryEnv, Script

from lobug.memory.query import QueryRequest
from lobug.memory.reflect.jobs import BASE_FROM_FACTS
from lobug.memory.table import delta
from lobug.memory.table import rows as store

SUMMARY = "The user and Lo-Bug planned the spring vegetable garden with raised beds."
FACTS = [f"The user owns {n} bicycles." for n in range(1, 9)]


async def watch(mem: MemoryEnv, session_id: str = "s-watch") -> str:
    """The prompt a session (that has seen everything so far) gets next."""
    found = (
        await mem.service.prompt_sections(user_id="default", session_id=session_id, text="hi")
    ).all()
    await mem.service.flush_hits()  # the seen mark
    return "\n\n".join(found)


async def add_facts(mem: MemoryEnv, facts: list[str]) -> None:
    def write(conn: Any) -> None:
        for fact in facts:
            store.insert_memory(
                conn, user_id="default", kind="fact", content=fact, now=mem.clock(), actor="t"
            )

    await mem.db.write(write)


async def test_a_summary_is_news_embedded_and_searchable(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str]
) -> None:
    ollama[0].script = Script(summarize=lambda _: SUMMARY)
    await watch(mem)
    for i in range(15):
        await mem.exchange(f"garden message {i}", f"reply {i}")
    await mem.run()
    (summary_id,) = [r[0] for r in mem.rows("SELECT id FROM memories WHERE kind = 'summary'")]
    (job,) = mem.rows("SELECT * FROM jobs WHERE kind = 'embed_memory'")
    assert str(summary_id) in job["payload"] and job["state"] == "done"
    header = await watch(mem)
    assert f"+created: [summary] {SUMMARY}" in header
    found = await mem.service.query(QueryRequest(query="vegetable garden beds", kinds=["summary"]))
    assert [r.id for r in found] == [summary_id]


async def test_base_memory_starts_from_facts_and_says_so(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    await watch(mem)
    await add_facts(mem, FACTS[:7])
    await mem.service._think()
    assert mem.jobs(BASE_FROM_FACTS) == []  # 7 facts: not yet
    await add_facts(mem, FACTS[7:])
    await mem.service._think()
    await mem.run()
    assert [j["state"] for j in mem.jobs(BASE_FROM_FACTS)] == ["done"]
    (call,) = ollama[0].memory_calls("distill")
    assert "The user owns 8 bicycles." in call["body"]["messages"][1]["content"]
    assert mem.value("SELECT content FROM base_memory") == MEMORY_DEFAULTS["distill"]
    text = await watch(mem)
    assert text.startswith("[Long-term memory]\nUser Profile:")
    assert "↑updated: [long-term memory] The user's long-term profile was rewritten" in text
    # Not again until the facts have doubled.
    await mem.service._think()
    assert len(mem.jobs(BASE_FROM_FACTS)) == 1
    await add_facts(mem, [f"The user has read {n} books." for n in range(8)])
    await mem.service._think()
    await mem.run()
    assert len(ollama[0].memory_calls("distill")) == 2


async def test_the_long_cascade_takes_over(mem: MemoryEnv) -> None:
    await add_facts(mem, FACTS)

    def incorporated_summary(conn: Any) -> None:
        memory_id = store.insert_memory(
            conn, user_id="default", kind="summary", content=SUMMARY, now=1.0, actor="t"
        )
        conn.execute("UPDATE memories SET incorporated = 1 WHERE id = ?", (memory_id,))

    await mem.db.write(incorporated_summary)
    await mem.service._think()
    assert mem.jobs(BASE_FROM_FACTS) == []


def test_kind_labels_in_the_header() -> None:
    change = delta.Change(1, 5, "created", "", {"kind": "summary", "content": "A talk."}, 0.0)
    assert change.summary() == "+created: [summary] A talk."
