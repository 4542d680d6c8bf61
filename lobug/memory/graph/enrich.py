"""Entity enrichment (seed 003, nightly): re-linked memories, merged aliases, filled profiles.

No LLM: the registry is the regex NER's (graph/ner.py), so enrichment is what a look at the
whole registry adds to what each write saw alone.

- **Re-link**: active facts not yet enriched (`attributes.enriched_at` unset) with at most
  `MAX_LINKS` entity links are run through the NER again and linked (a fact written by a path
  or an NER version that missed a name), then stamped; `BATCH` a night.
- **Merge aliases**: two entities of one type that are the same name (a canonical name equal
  to the other's, any case, or to one of its aliases), and a one-word person ("Jen") when
  exactly one person of several words starts with it ("Jen Park"), become one: links,
  mentions and aliases move to the kept entity (the longer name, then the more mentioned).
- **Profiles**: `entities.summary` of every entity with live facts: its other names and up to
  `PROFILE_FACTS` of its facts (pinned, important, recent first), at most `PROFILE_CHARS`;
  `entity_profile` and the people index show it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from lobug.memory.graph.entities import extract_entities, link_entities

BATCH = 200  # facts re-linked per night, at most
MAX_LINKS = 2  # a fact with more entity links than this is not re-linked (seed 003)
PROFILE_FACTS = 5
PROFILE_CHARS = 400
PROFILE_TYPES = ("person", "organization", "location")


def enrich(conn: Any, user_id: str, *, now: float) -> dict[str, int]:
    """One nightly pass for `user_id` (in the writer's transaction): what it did."""
    report: Counter[str] = Counter()
    report["relinked"] = relink(conn, user_id, now=now)
    report["merged"] = merge_aliases(conn, user_id)
    report["profiles"] = fill_profiles(conn, user_id)
    return dict(report)


def relink(conn: Any, user_id: str, *, now: float, limit: int = BATCH) -> int:
    """New links made for facts not enriched yet; each is stamped `enriched_at`."""
    rows = conn.execute(
        "SELECT m.id, m.content FROM memories m WHERE m.user_id = ? AND m.kind = 'fact'"
        " AND m.status = 'active' AND json_extract(CASE WHEN json_valid(m.attributes)"
        " THEN m.attributes ELSE '{}' END, '$.enriched_at') IS NULL"
        " AND (SELECT COUNT(*) FROM memory_entities me WHERE me.memory_id = m.id) <= ?"
        " ORDER BY m.id LIMIT ?",
        (user_id, MAX_LINKS, limit),
    ).fetchall()
    made = 0
    for memory_id, content in rows:
        before = _links(conn, memory_id)
        link_entities(conn, memory_id, extract_entities(content), user_id, now)
        made += _links(conn, memory_id) - before
        conn.execute(
            "UPDATE memories SET attributes = json_set(CASE WHEN json_valid(attributes)"
            " THEN attributes ELSE '{}' END, '$.enriched_at', ?) WHERE id = ?",
            (now, memory_id),
        )
    return made


def _links(conn: Any, memory_id: int) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM memory_entities WHERE memory_id = ?", (memory_id,)
    ).fetchone()
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
    """`gone` into `kept`: its memory links, mentions and names; `gone` is deleted."""
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
    conn.execute("DELETE FROM memory_entities WHERE entity_id = ?", (gone_id,))
    conn.execute("DELETE FROM entities WHERE id = ?", (gone_id,))


def fill_profiles(conn: Any, user_id: str) -> int:
    """Profiles (re)written; an unchanged one is not written again."""
    marks = ",".join("?" * len(PROFILE_TYPES))
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
