"""What background thinking adds to the prompt: the latest weekly reflection, and the user's
procedures for the task they ask about. Theory-of-mind insights are not here: they are searched
with the facts, at low weight, and shown only when they rank for the turn (seed 001 §3).

Read in the turn's existing reader round trip (`MemoryService.prompt_sections`): a few
indexed rows, never an LLM call, so it cannot block a turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lobug.memory.reflect import procedures, reflection

REFLECTION_TITLE = "[Weekly reflection]"
PROCEDURES_TITLE = "[How the user likes this done]"


@dataclass(frozen=True)
class Notes:
    reflection: str | None = None
    procedures: list[str] = field(default_factory=list)

    def stable(self) -> list[str]:
        """What changes only when background thinking runs: the reflection."""
        return [f"{REFLECTION_TITLE}\n{self.reflection}"] if self.reflection else []

    def for_turn(self) -> list[str]:
        """What this turn's words chose: the procedures for the task at hand."""
        bullets = "".join(f"\n- {text}" for text in self.procedures)
        return [PROCEDURES_TITLE + bullets] if bullets else []


def read(conn: Any, *, user_id: str, text: str) -> Notes:
    latest = reflection.latest(conn, user_id)
    return Notes(
        reflection=latest.content if latest is not None else None,
        procedures=procedures.for_task(conn, user_id, text),
    )
