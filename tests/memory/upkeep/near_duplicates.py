"""A fixture of near-duplicate facts written past the write-time checks, and its judge."""

from __future__ import annotations

from functools import partial
from typing import Any

from fake_ollama import judge_by
from memory_kit import MemoryEnv

from lobug.memory import enqueue
from lobug.memory.table import rows as store

# Each group says one thing; the fixture stores every wording as its own row.
GROUPS: list[list[str]] = [
    ["The user drinks green tea every morning.", "The user drinks green tea each morning."],
    ["The user has a dog named Biscuit.", "The user has a dog called Biscuit."],
    ["The user works as a nurse at the city hospital.", "The user works as a nurse at a hospital."],
    ["The user is allergic to peanuts.", "The user has an allergy to peanuts."],
    ["The user plays the guitar in a band.", "The user plays guitar in a local band."],
    ["The user lives in Portland, Oregon.", "The user lives in Portland."],
    ["The user's sister is named Maya.", "The user's sister is called Maya."],
    ["The user goes running on Sunday mornings.", "The user goes running every Sunday morning."],
    ["The user prefers window seats on planes."],
    ["The user is learning Japanese."],
    ["The user's favourite film is Spirited Away."],
    ["The user drives a blue bicycle to work."],
]


def group_of(text: str) -> int | None:
    return next((i for i, group in enumerate(GROUPS) if text in group), None)


def same_group(new: str, old: str) -> str:
    a, b = group_of(new), group_of(old)
    return "same" if a is not None and a == b else "unrelated"


JUDGE = judge_by(same_group)


def insert(conn: Any, texts: list[str], *, now: float) -> list[int]:
    ids = []
    for text in texts:
        memory_id = store.insert_memory(
            conn,
            user_id="default",
            kind="fact",
            content=text,
            now=now,
            actor="fixture",
            importance=0.5,
        )
        enqueue.embed_memory(conn, memory_id, now=now)
        ids.append(memory_id)
    return ids


async def load(mem: MemoryEnv) -> list[int]:
    """Every wording stored as its own active fact, with its vector (the embed jobs run)."""
    texts = [text for group in GROUPS for text in group]
    ids = await mem.db.write(partial(insert, now=mem.clock()), texts)
    await mem.run()
    return list(ids)


def duplicates(mem: MemoryEnv) -> int:
    """Active facts beyond one per group: what consolidation should bring to 0."""
    active = mem.facts()
    groups = {group_of(text) for text in active}
    return len(active) - len(groups)
