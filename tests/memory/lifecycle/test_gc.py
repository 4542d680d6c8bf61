"""The GC pass (lifecycle/gc.py) as the prompt sees it: seed 001 §7's transition shows once in
the delta header, one bullet per user and kind of change, however many memories it took."""

from __future__ import annotations

from typing import Any

from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, Script, extract_by_keyword

DAY = 86400.0
FACTS = extract_by_keyword(
    {
        "tea": ["The user drinks green tea every morning."],
        "bike": ["The user rides a blue bike to work."],
        "piano": ["The user plays the piano on Sundays."],
    }
)


async def header(mem: MemoryEnv, session_id: str, text: str) -> str | None:
    """The delta header of that session's next prompt, marked as shown as a turn marks it."""
    sections = await mem.service.prompt_sections(
        user_id="default", session_id=session_id, text=text
    )
    await mem.service.flush_hits()
    found = [s for s in sections.all() if s.startswith("Memory updates since rev")]
    return found[0] if found else None


async def test_the_gc_transition_shows_once_as_one_bullet(
    mem: MemoryEnv, ollama: tuple[FakeOllamaState, str], clock: Any
) -> None:
    ollama[0].script = Script(extract=FACTS)
    for said in ("I drink green tea every morning", "I ride my blue bike", "I play the piano"):
        await mem.exchange(said, session_id="s-1")
    await mem.run()
    assert (await header(mem, "s-1", "what about lunch")) is not None  # the three created
    assert await header(mem, "s-1", "and dinner") is None  # each shown once

    clock.advance(31 * DAY)  # idle past lifecycle.archive_idle_days (30)
    assert (await mem.service.gc(actor="scheduler"))["archived"] == 3

    shown = await header(mem, "s-1", "what about lunch")
    assert shown is not None
    bullets = [line for line in shown.splitlines() if line.startswith("- ")]
    assert len(bullets) == 1 and "3 unused memories archived" in bullets[0], shown
    assert await header(mem, "s-1", "and dinner") is None
