"""The entity registry (seed 003, seed 002 people): canonical names, aliases, memory links."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from lobug.memory.graph.ner import COMMON_WORDS, ENTITY_TYPES, Mention, extract_entities
from lobug.storage.sqlite import placeholders

__all__ = [
    "ENTITY_TYPES",
    "Mention",
    "create_or_get_entity",
    "entities_in_text",
    "extract_entities",
    "link_entities",
    "link_turn_entities",
]


def create_or_get_entity(conn: Any, user_id: str, entity: Mention, now: float) -> tuple[int, bool]:
    """(id, created): by canonical name and type (any case), then by alias; else a new row."""
    row = conn.execute(
        "SELECT id, canonical_name, aliases FROM entities WHERE user_id = ? AND type = ?"
        " AND canonical_name = ? COLLATE NOCASE",
        (user_id, entity.type, entity.canonical),
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT id, canonical_name, aliases FROM entities WHERE user_id = ? AND type = ?"
            " AND EXISTS"
            " (SELECT 1 FROM json_each(entities.aliases) WHERE lower(value) = lower(?))",
            (user_id, entity.type, entity.canonical),
        ).fetchone()
    if row is None:
        aliases = [entity.text] if entity.text != entity.canonical else []
        cur = conn.execute(
            "INSERT INTO entities (user_id, canonical_name, type, aliases, created_at,"
            " last_mentioned) VALUES (?, ?, ?, ?, ?, ?)",
            (user_id, entity.canonical, entity.type, json.dumps(aliases), now, now),
        )
        return int(cur.lastrowid), True
    aliases = json.loads(row["aliases"] or "[]")
    known = {a.lower() for a in aliases} | {row["canonical_name"].lower()}
    new = [a for a in dict.fromkeys((entity.text, entity.canonical)) if a.lower() not in known]
    if new:
        conn.execute(
            "UPDATE entities SET aliases = ? WHERE id = ?", (json.dumps(aliases + new), row["id"])
        )
    return int(row["id"]), False


def link_entities(
    conn: Any, memory_id: int, entities: Iterable[Mention], user_id: str, now: float
) -> list[int]:
    """Register entities and link them to a memory; each new link counts one mention."""
    return _link(
        conn,
        "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id)",
        memory_id,
        entities,
        user_id,
        now,
    )


def link_turn_entities(
    conn: Any, turn_id: int, entities: Iterable[Mention], user_id: str, now: float
) -> list[int]:
    """Register entities and link them to a turn (`turn_entities`, m013), as `link_entities`
    does a memory, but without counting a mention: a turn link is derived again from the turn
    (it is not exported), so an export imported elsewhere must not count it twice; the count
    stays that of the memories that name the entity."""
    return _link(
        conn,
        "INSERT OR IGNORE INTO turn_entities (turn_id, entity_id)",
        turn_id,
        entities,
        user_id,
        now,
        mentions=False,
    )


def _link(
    conn: Any,
    insert: str,
    row_id: int,
    entities: Iterable[Mention],
    user_id: str,
    now: float,
    *,
    mentions: bool = True,
) -> list[int]:
    ids: list[int] = []
    for entity in entities:
        entity_id, created = create_or_get_entity(conn, user_id, entity, now)
        if entity_id in ids:
            continue
        ids.append(entity_id)
        cur = conn.execute(f"{insert} VALUES (?, ?)", (row_id, entity_id))
        # Re-linking the same row (a retried job) must not inflate the count.
        if mentions and cur.rowcount and not created:
            conn.execute(
                "UPDATE entities SET mention_count = mention_count + 1, last_mentioned = ?"
                " WHERE id = ?",
                (now, entity_id),
            )
    return ids


def entities_in_text(conn: Any, user_id: str, text: str, max_words: int = 4) -> list[int]:
    """Known entities named in text (any case, whole words), e.g. "where does jen live"."""
    words = re.findall(r"[\w'’@.-]+", text.lower())
    every = {
        " ".join(words[i : i + n]).strip(".'’")
        for n in range(1, max_words + 1)
        for i in range(len(words) - n + 1)
    }
    grams = sorted(g for g in every if g and g not in COMMON_WORDS)
    if not grams:
        return []
    found: list[int] = []
    for chunk in _chunks(grams, 400):  # stay under SQLite's bound-parameter limit
        marks = placeholders(chunk)
        rows = conn.execute(
            f"SELECT id FROM entities WHERE user_id = ? AND (lower(canonical_name) IN ({marks})"
            f" OR EXISTS (SELECT 1 FROM json_each(entities.aliases) WHERE lower(value)"
            f" IN ({marks}))) ORDER BY mention_count DESC, id",
            (user_id, *chunk, *chunk),
        ).fetchall()
        found += [r[0] for r in rows if r[0] not in found]
    return found


def _chunks(items: Sequence[str], size: int) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
