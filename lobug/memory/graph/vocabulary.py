"""The household's words for the speech recogniser: the user's own name, then the names of the
people, pets and places the memory knows, only from the stores the speaker may read.

`MemoryVocabulary` is the `VocabularySource` lobug/app.py hands the SpeechService
(lobug.speech.hints). It answers from a per-trust cache and reads the entities again only when
a fingerprint of the memory has changed (or after REFRESH_S, for the entity enrichment job's
aliases), so a transcription pays a few index lookups, not a scan of the graph.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from lobug.access import STORES_BY_TRUST
from lobug.storage.database import Database
from lobug.storage.sqlite import placeholders

DEFAULT_USER = "default"
MAX_TERMS = 64  # more than any hint can hold: speech bounds them by its token budget
REFRESH_S = 300.0  # enrichment merges aliases without a memory write: seen within 5 minutes
# Entities whose names are words a recogniser might miss; dates, tags, emails and URLs are not.
SPOKEN_TYPES = ("person", "location", "organization", "other")
_MAX_TERM_CHARS = 40
# "The user's name is Alex.", "The user goes by Sam.", "The user prefers to be called Jo."
_USER_NAME = re.compile(
    r"^The user(?:'s (?:full |first |preferred |nick)?name is| goes by| is called|"
    r" (?:prefers|wants|likes) to be called) (?P<name>[A-Z][\w'’ -]{0,38}?)\s*[.;!]?$"
)

_UNEXPIRED = "(m.expires_at IS NULL OR m.expires_at > ?)"

Stamp = tuple[Any, ...]
Cached = tuple[Stamp, float, list[str]]  # fingerprint, when read (monotonic), terms


class MemoryVocabulary:
    """trust → the names a caller of that trust may hear about, most important first."""

    def __init__(
        self,
        db: Database,
        *,
        user_id: str = DEFAULT_USER,
        monotonic: Callable[[], float] = time.monotonic,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self._user_id = user_id
        self._monotonic = monotonic
        self._clock = clock  # wall time: a memory past its `expires_at` names no one
        self._cache: dict[str, Cached] = {}

    async def __call__(self, trust: str) -> list[str]:
        stores = STORES_BY_TRUST[trust]
        if not stores:
            return []  # a caller who may read no store is told no names at all
        cached = self._cache.get(trust)
        if cached is not None and self._monotonic() - cached[1] > REFRESH_S:
            cached = None
        fresh = await self._db.read(self._read, stores, cached)
        self._cache[trust] = fresh
        return fresh[2]

    def _read(self, conn: Any, stores: Sequence[str], cached: Cached | None) -> Cached:
        now = self._clock()
        stamp = fingerprint(conn, self._user_id, now)
        if cached is not None and cached[0] == stamp:
            return cached
        return stamp, self._monotonic(), household_terms(conn, self._user_id, stores, now=now)


def fingerprint(conn: Any, user_id: str, now: float) -> Stamp:
    """Changes whenever a memory is added, edited, moved between stores, forgotten or restored
    (each logs a change for the delta header), whenever an entity is added, and when a memory's
    `expires_at` passes (before any GC pass notices). Index lookups only: it runs before every
    utterance. Retrieval hits log no change, so a conversation keeps the cache."""
    row = conn.execute(
        "SELECT (SELECT max(id) FROM change_log), (SELECT max(id) FROM memories),"
        " (SELECT max(updated_at) FROM memories WHERE user_id = :u),"
        " (SELECT max(id) FROM entities),"
        " (SELECT count(*) FROM memories WHERE expires_at IS NOT NULL AND expires_at <= :now)",
        {"u": user_id, "now": now},
    ).fetchone()
    return tuple(row)


def household_terms(
    conn: Any, user_id: str, stores: Sequence[str], limit: int = MAX_TERMS, *, now: float
) -> list[str]:
    """The user's own name first, then entity names and their aliases by how often the memory
    mentions them. Only entities linked to a live memory in `stores` count: a name the owner
    told in private is never suggested to a guest's microphone, and one from a memory forgotten
    or past its `expires_at` to no one."""
    terms = user_names(conn, user_id, stores, now=now)
    marks = placeholders(stores)
    types = placeholders(SPOKEN_TYPES)
    # Ranked first, then checked in order until `limit` pass: the visibility test runs on the
    # top of the list, not on every entity of a large graph. (`LIMIT -1` keeps SQLite from
    # flattening the ranked list into the filter: 4x faster at 20k entities.)
    rows = conn.execute(
        f"SELECT e.canonical_name, e.aliases FROM (SELECT id, canonical_name, aliases"
        f" FROM entities WHERE user_id = ? AND type IN ({types})"
        f" ORDER BY mention_count DESC, last_mentioned DESC, id LIMIT -1) e"
        f" WHERE EXISTS (SELECT 1 FROM memory_entities me JOIN memories m ON m.id = me.memory_id"
        f" WHERE me.entity_id = e.id AND m.status = 'active' AND m.store IN ({marks})"
        f" AND {_UNEXPIRED}) LIMIT ?",
        (user_id, *SPOKEN_TYPES, *stores, now, limit),
    ).fetchall()
    for row in rows:
        terms.append(row[0])
        terms.extend(a for a in json.loads(row[1] or "[]") if isinstance(a, str))
    return _clean(terms)[:limit]


def user_names(conn: Any, user_id: str, stores: Sequence[str], *, now: float) -> list[str]:
    """The names the user goes by, newest fact first, from live facts in `stores`."""
    marks = placeholders(stores)
    rows = conn.execute(  # the full-text index finds the candidates; the pattern decides
        f"SELECT m.content FROM memories_fts f JOIN memories m ON m.id = f.rowid"
        f" WHERE memories_fts MATCH 'user AND (name OR called OR goes)' AND m.user_id = ?"
        f" AND m.status = 'active' AND m.store IN ({marks}) AND {_UNEXPIRED}"
        f" ORDER BY m.updated_at DESC, m.id DESC LIMIT 5",
        (user_id, *stores, now),
    ).fetchall()
    found = (_USER_NAME.match(row[0].strip()) for row in rows)
    return [match["name"].strip() for match in found if match]


def _clean(terms: list[str]) -> list[str]:
    """Once each (any case), without blanks, numbers or over-long phrases."""
    kept: dict[str, str] = {}
    for term in terms:
        term = " ".join(term.split()).strip(".,;:!?'’\"")
        if term and len(term) <= _MAX_TERM_CHARS and not term.isdigit():
            kept.setdefault(term.lower(), term)
    return list(kept.values())
