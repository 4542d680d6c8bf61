"""A database's schema against the one its own migrations create (issue 38): a backup with an
added trigger (one copied private memories to the social store), view or index, or a changed
table, is not Lo-Bug's database, and `lobug restore` refuses it."""

from __future__ import annotations

import re
from typing import Any

from lobug.memory.vectors.reembed import REPLY_STAGING, STAGING
from lobug.storage.migrations import MIGRATIONS, applied
from lobug.storage.sqlite import connect
from lobug.storage.vector_index import KEYS
from lobug.storage.vectors import create_vector_tables

# Left by an interrupted `lobug memory reembed` (dropped and rebuilt by the next run).
LEFTOVERS = (*STAGING.values(), REPLY_STAGING)
_SPACES = re.compile(r"\s+")
_DIM = re.compile(r"float\[(\d+)\]")


def schema_problems(conn: Any) -> list[str]:
    """What differs between `conn`'s schema and a fresh one migrated as far (one line each)."""
    done = [str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]
    known = [name for name, _ in MIGRATIONS]
    if done != known[: len(done)]:
        return [f"its migrations {done} are not a prefix of Lo-Bug's {known}"]
    reference = connect(":memory:")
    try:
        applied(reference)  # schema_migrations, made as every database makes it
        for _, apply in MIGRATIONS[: len(done)]:
            apply(reference)
        if dim := _vector_dim(conn):  # made at the first start, for the embedder's size
            create_vector_tables(reference, dim)
        expected = _objects(reference)
    finally:
        reference.close()
    found = _objects(conn)
    problems = []
    for key in sorted(found.keys() - expected.keys()):
        kind, name = key
        if kind == "table" and name.startswith(LEFTOVERS):
            continue
        problems.append(f"an added {kind} {name!r}: {found[key][:160]}")
    for kind, name in sorted(expected.keys() - found.keys()):
        problems.append(f"the {kind} {name!r} is missing")
    for key in sorted(found.keys() & expected.keys()):
        if found[key] != expected[key]:
            problems.append(f"the {key[0]} {key[1]!r} is not as created: {found[key][:160]}")
    return problems


def _vector_dim(conn: Any) -> int | None:
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (next(iter(KEYS)),)
    ).fetchone()
    found = _DIM.search(str(row[0])) if row is not None else None
    return int(found.group(1)) if found else None


def _objects(conn: Any) -> dict[tuple[str, str], str]:
    """(type, name) → SQL of every schema object, less what SQLite and the virtual tables'
    modules make themselves (autoindexes, statistics, shadow tables: their shape is the
    module version's, not ours)."""
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    virtual = [
        str(r[1]) for r in rows if str(r[2] or "").upper().startswith("CREATE VIRTUAL TABLE")
    ]
    shadows = tuple(f"{name}_" for name in virtual)
    objects = {}
    for kind, name, sql in rows:
        if sql is None or name.startswith("sqlite_"):
            continue
        if kind == "table" and name.startswith(shadows) and name not in virtual:
            continue
        objects[(str(kind), str(name))] = _SPACES.sub(" ", str(sql)).strip()
    return objects
