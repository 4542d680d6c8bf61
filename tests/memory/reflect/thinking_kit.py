"""Helpers for the background-thinking tests: facts written as extraction would, canned answers."""

from __future__ import annotations

import json
from typing import Any

from memory_kit import MemoryEnv

from lobug.memory.table import rows as store

REFLECTION = (
    "This week the user focused on the garden and on training for the Seattle half marathon. "
    "Running seems to matter most to the user right now."
)
INSIGHTS = json.dumps(
    {
        "insights": [
            {"summary": "The user prefers short, direct answers.", "tags": ["style"]},
            {"summary": "The user cares a lot about running.", "importance": 4},
        ]
    }
)


def canned(reflect: str = REFLECTION, insight: str = INSIGHTS) -> Any:
    """A `thinking` script for the fake Ollama: one answer per task."""

    def answer(body: dict[str, Any]) -> str:
        system = body["messages"][0]["content"]
        return insight if "observe how the user talks" in system else reflect

    return answer


async def add_facts(mem: MemoryEnv, *facts: str, user_id: str = "default") -> list[int]:
    def write(conn: Any) -> list[int]:
        return [
            store.insert_memory(
                conn, user_id=user_id, kind="fact", content=f, now=mem.clock(), actor="test"
            )
            for f in facts
        ]

    return await mem.db.write(write)


async def prompt(mem: MemoryEnv, text: str = "hello there") -> str:
    found = (
        await mem.service.prompt_sections(user_id="default", session_id="s-other", text=text)
    ).all()
    return "\n\n".join(found)
