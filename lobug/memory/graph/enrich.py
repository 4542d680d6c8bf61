"""Entity enrichment (seed 003, nightly; docs/seeds.md, rows 239-242): re-linked memories and
turns, merged aliases, profiles.

- **Re-extract** (`candidates`, `link_found`): facts and the user's own turns with at most
  `MAX_LINKS` entity links that the strategy has not looked at, newest first, through the
  `accurate` NER (asked by the job, upkeep/jobs.py, outside the writer's transaction), or the
  regexes again without an accurate provider (`relink`); each row is stamped as looked at.
- **Merge aliases**: two entities of one type that are the same name (any case, or an alias),
  and a one-word person ("Jen") when exactly one longer person name starts with it ("Jen
  Park"), become one: links, mentions and aliases move to the kept entity.
- **Profiles**: `entities.summary` of every entity with live facts: its other names and up to
  `PROFILE_FACTS` of its facts, at most `PROFILE_CHARS`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lobug.conversation import CONVERSATION_TURN, OWNER_TURN
from lobug.memory.graph.entities import (
    Mention,
    extract_entities,
    link_entities,
    link_turn_entities,
)
from lobug.memory.graph.ner import ACCURATE, FAST
from lobug.storage.sqlite import placeholders

BATCH = 200  # rows the regexes look at again a night, at most (no model: cheap)
ACCURATE_LIMIT = 50  # rows re-extracted by the accurate NER a night (seed 003)
MAX_LINKS = 2  # a row with more entity links than this is not looked at again (seed 003)
PROFILE_FACTS = 5
PROFILE_CHARS = 400
PROFILE_TYPES = ("person", "organization", "location")
FACT = "fact"
TURN = "turn"
# The turns that are entity-linked: what the user said in their own sessions. Lo-Bug's replies
# name what it talked about (a forecast's city), and a guest's words are not the owner's world:
# neither belongs in the people index (search still matches their text, search/hybrid.py).
LINKED_TURN = f"role = 'user' AND {CONVERSATION_TURN} AND {OWNER_TURN}"


@dataclass(frozen=True)
class Unlinked:
    kind: str  # FACT or TURN
    id: int
    text: str


def enrich(conn: Any, user_id: str, *, now: float, relinked: int | None = None) -> dict[str, int]:
    """The nightly pass's work in the writer's transaction: what it did. `relinked`: the links
    the accurate re-extraction made (the job, before); None: it did not run, the regexes look
    again instead."""
    if relinked is None:
        relinked = relink(conn, user_id, now=now)
    merged = merge_aliases(conn, user_id)
    return {"relinked": relinked, "merged": merged, "profiles": fill_profiles(conn, user_id)}


def candidates(conn: Any, user_id: str, *, strategy: str, limit: int) -> list[Unlinked]:
    """Facts and turns with at most MAX_LINKS links that `strategy` has not looked at, newest
    first; each kind gets half of `limit` at least when it has that many."""
    facts = _fact_candidates(conn, user_id, strategy, limit)
    turns = _turn_candidates(conn, user_id, strategy, limit)
    n_turns = min(len(turns), max(limit - len(facts), limit // 2))
    return facts[: limit - n_turns] + turns[:n_turns]


def _fact_candidates(conn: Any, user_id: str, strategy: str, limit: int) -> list[Unlinked]:
    attrs = "CASE WHEN json_valid(m.attributes) THEN m.attributes ELSE '{}' END"
    seen = (
        f"json_extract({attrs}, '$.enriched_at') IS NULL"
        if strategy == FAST
        else f"COALESCE(json_extract({attrs}, '$.enriched_by'), '') != '{ACCURATE}'"
    )
    rows = conn.execute(
        f"SELECT m.id, m.content FROM memories m WHERE m.user_id = ? AND m.kind = 'fact'"
        f" AND m.status = 'active' AND {seen}"
        " AND (SELECT COUNT(*) FROM memory_entities me WHERE me.memory_id = m.id) <= ?"
        " ORDER BY m.id DESC LIMIT ?",
        (user_id, MAX_LINKS, limit),
    ).fetchall()
    return [Unlinked(FACT, int(r[0]), str(r[1])) for r in rows]


def _turn_candidates(conn: Any, user_id: str, strategy: str, limit: int) -> list[Unlinked]:
    rows = conn.execute(
        f"SELECT id, text FROM turns WHERE user_id = ? AND {LINKED_TURN}"
        f" AND NOT EXISTS (SELECT 1 FROM turn_ner n WHERE n.turn_id = turns.id{_by(strategy)})"
        " AND (SELECT COUNT(*) FROM turn_entities te WHERE te.turn_id = turns.id) <= ?"
        " ORDER BY id DESC LIMIT ?",
        (user_id, MAX_LINKS, limit),
    ).fetchall()
    return [Unlinked(TURN, int(r[0]), str(r[1])) for r in rows]


def _by(strategy: str) -> str:
    """Which `turn_ner` stamp means "seen": any for the regexes, an accurate one for accurate."""
    return "" if strategy == FAST else f" AND n.strategy = '{ACCURATE}'"


def link_found(
    conn: Any,
    user_id: str,
    found: Sequence[tuple[Unlinked, Sequence[Mention]]],
    *,
    strategy: str,
    now: float,
) -> int:
    """Link each candidate's entities and stamp it as seen by `strategy`; new links made. A
    fact whose text changed since it was read is left for the next night."""
    made = 0
    for candidate, entities in found:
        if candidate.kind == FACT:
            row = conn.execute(
                "SELECT content FROM memories WHERE id = ? AND status = 'active'", (candidate.id,)
            ).fetchone()
            if row is None or row[0] != candidate.text:
                continue
            before = _links(conn, "memory_entities", "memory_id", candidate.id)
            link_entities(conn, candidate.id, entities, user_id, now)
            made += _links(conn, "memory_entities", "memory_id", candidate.id) - before
            conn.execute(
                "UPDATE memories SET attributes = json_set(CASE WHEN json_valid(attributes)"
                " THEN attributes ELSE '{}' END, '$.enriched_at', ?, '$.enriched_by', ?)"
                " WHERE id = ?",
                (now, strategy, candidate.id),
            )
        else:
            made += link_turn(conn, candidate.id, entities, user_id, strategy=strategy, now=now)
    return made


def link_turn(
    conn: Any,
    turn_id: int,
    entities: Sequence[Mention],
    user_id: str,
    *,
    strategy: str,
    now: float,
) -> int:
    """A turn's entities linked and the turn stamped as seen by `strategy` (an accurate look
    is never overwritten by a fast one); new links made."""
    before = _links(conn, "turn_entities", "turn_id", turn_id)
    link_turn_entities(conn, turn_id, entities, user_id, now)
    conn.execute(
        "INSERT INTO turn_ner (turn_id, strategy, at) VALUES (?, ?, ?) ON CONFLICT(turn_id)"
        " DO UPDATE SET strategy = excluded.strategy, at = excluded.at"
        f" WHERE turn_ner.strategy != '{ACCURATE}'",
        (turn_id, strategy, now),
    )
    return _links(conn, "turn_entities", "turn_id", turn_id) - before


def link_turns_fast(conn: Any, turn_ids: Sequence[int], *, now: float) -> int:
    """The fast strategy (the regexes) over these turns, those that are linked at all
    (`LINKED_TURN`) and not looked at yet: what `embed_turn` runs for a new turn."""
    if not turn_ids:
        return 0
    marks = placeholders(turn_ids)
    rows = conn.execute(
        f"SELECT id, user_id, text FROM turns WHERE id IN ({marks}) AND {LINKED_TURN}"
        " AND NOT EXISTS (SELECT 1 FROM turn_ner n WHERE n.turn_id = turns.id)",
        list(turn_ids),
    ).fetchall()
    return sum(
        link_turn(conn, int(r[0]), extract_entities(r[2]), r[1], strategy=FAST, now=now)
        for r in rows
    )


def relink(conn: Any, user_id: str, *, now: float, limit: int = BATCH) -> int:
    """The regexes again over facts and turns they have not looked at; new links made."""
    found = [
        (c, extract_entities(c.text)) for c in candidates(conn, user_id, strategy=FAST, limit=limit)
    ]
    return link_found(conn, user_id, found, strategy=FAST, now=now)


def _links(conn: Any, table: str, column: str, row_id: int) -> int:
    row = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (row_id,)).fetchone()
    return int(row[0])


def merge_aliases(conn: Any, user_id: str) -> int:
    """Entities merged into another."""
    merged = 0
    while (pair := _same_pair(conn, user_id)) is not None:
        merge_entities(conn, *pair)
        merged += 1
    return merged


def _same_pair(conn: Any, user_id: str) -> tuple[int, int] | None:
    """(kept, merged away): the first two entities that name the same thing, if any."""
    rows = conn.execute(
        "SELECT * FROM entities WHERE user_id = ? ORDER BY id", (user_id,)
    ).fetchall()
    by_type: dict[str, list[Any]] = {}
    for row in rows:
        by_type.setdefault(row["type"], []).append(row)
    for kind, group in by_type.items():
        owner: dict[str, Any] = {}  # a name (any case) -> the first entity that has it
        for row in group:
            for name in _names(row):
                other = owner.setdefault(name, row)
                if other["id"] != row["id"]:
                    return _kept(other, row)
        if kind == "person":
            pair = _first_name_pair(group)
            if pair is not None:
                return pair
    return None


def _first_name_pair(people: list[Any]) -> tuple[int, int] | None:
    """A one-word person and the only longer person name that starts with that word."""
    longer = [p for p in people if len(p["canonical_name"].split()) > 1]
    for person in people:
        name = person["canonical_name"]
        if len(name.split()) != 1:
            continue
        starts = [p for p in longer if p["canonical_name"].split()[0].lower() == name.lower()]
        if len(starts) == 1:
            return int(starts[0]["id"]), int(person["id"])
    return None


def _names(row: Any) -> set[str]:
    aliases = json.loads(row["aliases"] or "[]")
    return {row["canonical_name"].lower(), *(str(a).lower() for a in aliases)}


def _kept(a: Any, b: Any) -> tuple[int, int]:
    keep = max(
        (a, b),
        key=lambda r: (len(r["canonical_name"].split()), r["mention_count"], -r["id"]),
    )
    gone = b if keep is a else a
    return int(keep["id"]), int(gone["id"])


def merge_entities(conn: Any, kept_id: int, gone_id: int) -> None:
    """`gone` into `kept`: its memory and turn links, mentions and names; `gone` is deleted."""
    kept = conn.execute("SELECT * FROM entities WHERE id = ?", (kept_id,)).fetchone()
    gone = conn.execute("SELECT * FROM entities WHERE id = ?", (gone_id,)).fetchone()
    aliases = json.loads(kept["aliases"] or "[]")
    known = {kept["canonical_name"].lower(), *(a.lower() for a in aliases)}
    for name in [gone["canonical_name"], *json.loads(gone["aliases"] or "[]")]:
        if name.lower() not in known:
            aliases.append(name)
            known.add(name.lower())
    conn.execute(
        "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id)"
        " SELECT memory_id, ? FROM memory_entities WHERE entity_id = ?",
        (kept_id, gone_id),
    )
    conn.execute(
        "UPDATE entities SET aliases = ?, mention_count = mention_count + ?,"
        " last_mentioned = MAX(last_mentioned, ?), created_at = MIN(created_at, ?) WHERE id = ?",
        (
            json.dumps(aliases),
            gone["mention_count"],
            gone["last_mentioned"],
            gone["created_at"],
            kept_id,
        ),
    )
    conn.execute(
        "INSERT OR IGNORE INTO turn_entities (turn_id, entity_id)"
        " SELECT turn_id, ? FROM turn_entities WHERE entity_id = ?",
        (kept_id, gone_id),
    )
    conn.execute("DELETE FROM memory_entities WHERE entity_id = ?", (gone_id,))
    conn.execute("DELETE FROM turn_entities WHERE entity_id = ?", (gone_id,))
    conn.execute("DELETE FROM entities WHERE id = ?", (gone_id,))


def fill_profiles(conn: Any, user_id: str) -> int:
    """Profiles (re)written; an unchanged one is not written again."""
    marks = placeholders(PROFILE_TYPES)
    entities = conn.execute(
        f"SELECT * FROM entities WHERE user_id = ? AND type IN ({marks}) ORDER BY id",
        (user_id, *PROFILE_TYPES),
    ).fetchall()
    written = 0
    for entity in entities:
        profile = profile_of(conn, entity)
        if profile is not None and profile != entity["summary"]:
            conn.execute("UPDATE entities SET summary = ? WHERE id = ?", (profile, entity["id"]))
            written += 1
    return written


def profile_of(conn: Any, entity: Any) -> str | None:
    """The entity's other names and its facts, within PROFILE_CHARS; None without facts."""
    facts = conn.execute(
        "SELECT m.content FROM memories m JOIN memory_entities me ON me.memory_id = m.id"
        " WHERE me.entity_id = ? AND m.kind = 'fact' AND m.status = 'active'"
        " AND m.valid_until IS NULL ORDER BY m.pinned DESC, m.importance DESC,"
        " m.updated_at DESC, m.id DESC LIMIT ?",
        (entity["id"], PROFILE_FACTS),
    ).fetchall()
    if not facts:
        return None
    aliases = [a for a in json.loads(entity["aliases"] or "[]") if a != entity["canonical_name"]]
    text = f"{entity['canonical_name']} ({entity['type']})"
    if aliases:
        text += ", also called " + ", ".join(aliases)
    text += "."
    for (content,) in facts:
        line = " " + str(content).strip()
        if len(text) + len(line) > PROFILE_CHARS:
            break
        text += line
    return text
