"""Import an export file (`export_file`) losslessly, in one write transaction (docs/memory-api.md,
"Export and import"): a table's rows keep their ids when none is taken in the target, else they
get new ids and every reference is rewritten; rows already present are matched and skipped, so
importing the same file twice adds nothing. Columns the target does not have are dropped (an
older schema); `user_id` is the target's. A row whose values the schema would take but the code
could not read (a number column holding "high", JSON columns holding "not json"), or that a
CHECK or NOT NULL refuses, is not imported and is reported by line (issue 38): a tampered file
must not make every read of the memory fail.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lobug.memory import enqueue
from lobug.memory.transfer.export_file import TYPES
from lobug.memory.vectors.knn import VECTOR_KINDS
from lobug.storage.sqlite import placeholders, storable_text

ID_TABLES = {"turn": "turns", "memory": "memories", "entity": "entities"}
# Columns holding JSON text, by name in every table, and what the code reads them as.
JSON_COLUMNS: dict[str, type] = {
    "tags": list,
    "pii": list,
    "rules": list,
    "aliases": list,
    "turn_ids": list,
    "decisions": list,
    "open_items": list,
    "attributes": dict,
    "meta": dict,
}
OWN_ID_TABLES = {**ID_TABLES, "relation": "relations", "history": "history"}


class RecordError(ValueError):
    """One line of an export file is not a usable record."""


@dataclass
class RecordReport:
    added: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    remapped: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    turn_ids: list[int] = field(default_factory=list)
    memory_ids: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": dict(self.added),
            "skipped": dict(self.skipped),
            "remapped_ids": self.remapped,
            "errors": self.errors,
        }


def parse_record(value: Any) -> tuple[str, dict[str, Any]]:
    kind, data = value.get("type"), value.get("data")
    if kind not in TYPES:
        raise RecordError(f"unknown record type {kind!r} (known: {', '.join(TYPES)})")
    if not isinstance(data, dict):
        raise RecordError("'data' must be an object")
    if kind in OWN_ID_TABLES and (
        isinstance(data.get("id"), bool) or not isinstance(data.get("id"), int)
    ):
        raise RecordError(f"a {kind} record needs an integer 'id'")
    for key, item in data.items() if kind != "meta" else ():  # meta is not stored
        problem = _unstorable(item)
        if problem:
            raise RecordError(f"'data.{_printable(key)}' {problem}")
    return kind, data


def _unstorable(value: Any) -> str | None:
    """Why SQLite cannot take this column value as it is, or None (export values are scalars:
    JSON columns stay JSON text)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if -(2**63) <= value < 2**63 else "is an integer out of range"
    if isinstance(value, float):
        return None if math.isfinite(value) else "is not a finite number"
    if isinstance(value, str):
        return None if storable_text(value) else "is not valid Unicode (a lone surrogate)"
    return "must be a string, a number or null"


def _printable(key: str) -> str:
    return key.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")[:64]


def import_records(
    conn: Any, records: Sequence[tuple[int, str, dict[str, Any]]], *, user_id: str
) -> RecordReport:
    """Insert the records (lineno, type, data) in the caller's write transaction."""
    report = RecordReport()
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {kind: [] for kind in TYPES}
    for lineno, kind, data in records:
        groups[kind].append((lineno, data))
    keep = {}
    for kind, table in OWN_ID_TABLES.items():
        keep[kind] = _ids_free(conn, table, [d["id"] for _, d in groups[kind]])
        if not keep[kind]:
            report.remapped.append(table)
    maps: dict[str, dict[int, int]] = {kind: {} for kind in ID_TABLES}
    columns = _Columns(conn)

    def insert(kind: str, table: str, lineno: int, data: dict[str, Any], **fixed: Any) -> int:
        """The new row's id; 0 when it is already here (skipped) or refused (an error)."""
        row = {k: v for k, v in data.items() if k in columns[table] and k != "user_id"}
        if kind in OWN_ID_TABLES and not keep[kind]:
            row.pop("id", None)
        row.update(fixed)
        if "user_id" in columns[table]:
            row["user_id"] = user_id
        for name, value in row.items():
            if problem := _column_problem(name, value, columns[table][name]):
                report.errors.append(f"line {lineno}: {kind} '{name}' {problem}; not imported")
                return 0
        names = list(row)
        # DO NOTHING covers a row already here (a unique key) only: a CHECK or NOT NULL that
        # refuses the row is an error, not "skipped" (OR IGNORE counted it so).
        try:
            cur = conn.execute(
                f"INSERT INTO {table} ({', '.join(names)})"
                f" VALUES ({placeholders(names)}) ON CONFLICT DO NOTHING",
                [row[n] for n in names],
            )
        except Exception as exc:  # noqa: BLE001 - the driver's IntegrityError, either driver
            report.errors.append(f"line {lineno}: {kind} refused by the schema: {exc}")
            return 0
        if cur.rowcount:
            report.added[kind] += 1
        else:
            report.skipped[kind] += 1
        return int(cur.lastrowid or 0) if cur.rowcount else 0

    def add_unless_found(kind: str, lineno: int, data: dict[str, Any], found: Any) -> int:
        """The new row's id; 0 when `found` (already here: mapped to it) or on an error."""
        if found is not None:
            maps[kind][data["id"]] = found[0]
            report.skipped[kind] += 1
            return 0
        fixed = {"supersedes": None} if kind == "memory" else {}
        new = insert(kind, ID_TABLES[kind], lineno, data, **fixed)
        if new:
            maps[kind][data["id"]] = new
        return new

    for lineno, data in groups["session"]:
        insert("session", "sessions", lineno, data)
    for lineno, data in groups["turn"]:
        found = conn.execute(
            "SELECT id FROM turns WHERE user_id = ? AND session_id IS ? AND role IS ? AND ts IS ?"
            " AND text IS ?",
            (user_id, data.get("session_id"), data.get("role"), data.get("ts"), data.get("text")),
        ).fetchone()
        if new := add_unless_found("turn", lineno, data, found):
            report.turn_ids.append(new)
    superseding: list[tuple[int, int]] = []
    for lineno, data in groups["memory"]:
        found = conn.execute(
            "SELECT id FROM memories WHERE user_id = ? AND created_at IS ? AND content IS ?",
            (user_id, data.get("created_at"), data.get("content")),
        ).fetchone()
        if new := add_unless_found("memory", lineno, data, found):
            report.memory_ids.append(new)
            if data.get("supersedes") is not None:
                superseding.append((new, data["supersedes"]))
    for new, old in superseding:  # after every row exists: supersedes is a foreign key
        if old in maps["memory"]:
            conn.execute(
                "UPDATE memories SET supersedes = ? WHERE id = ?", (maps["memory"][old], new)
            )
    for lineno, data in groups["memory_source"]:
        ids = _mapped(maps, memory=data.get("memory_id"), turn=data.get("turn_id"))
        if ids is None:
            report.skipped["memory_source"] += 1
            continue
        insert("memory_source", "memory_sources", lineno, data, memory_id=ids[0], turn_id=ids[1])
    for lineno, data in groups["base_memory"]:
        current = conn.execute(
            "SELECT updated_at FROM base_memory WHERE user_id = ?", (user_id,)
        ).fetchone()
        if current is not None and current[0] >= (data.get("updated_at") or 0):
            report.skipped["base_memory"] += 1
            continue
        conn.execute("DELETE FROM base_memory WHERE user_id = ?", (user_id,))
        insert("base_memory", "base_memory", lineno, data)
    for lineno, data in groups["entity"]:
        found = conn.execute(
            "SELECT id FROM entities WHERE user_id = ? AND canonical_name = ? AND type = ?",
            (user_id, data.get("canonical_name"), data.get("type")),
        ).fetchone()
        add_unless_found("entity", lineno, data, found)
    for kind, table, owner in (
        ("memory_entity", "memory_entities", "memory"),
        ("turn_entity", "turn_entities", "turn"),
    ):
        for lineno, data in groups[kind]:
            linked = maps[owner].get(data.get(f"{owner}_id"))  # type: ignore[arg-type]
            entity = maps["entity"].get(data.get("entity_id"))  # type: ignore[arg-type]
            if linked is None or entity is None:
                report.skipped[kind] += 1
                continue
            insert(kind, table, lineno, data, **{f"{owner}_id": linked, "entity_id": entity})
    for lineno, data in groups["relation"]:
        ends = _mapped(maps, memory=data.get("from_id"), other=data.get("to_id"))
        if ends is None:
            report.skipped["relation"] += 1
            continue
        insert("relation", "relations", lineno, data, from_id=ends[0], to_id=ends[1])
    for lineno, data in groups["history"]:
        original = data.get("memory_id")
        target: int | None = maps["memory"].get(original) if original is not None else None
        if original is not None and target is None:
            target = original if keep["memory"] else None  # e.g. a purged memory's PURGE event
        if conn.execute(
            "SELECT 1 FROM history WHERE user_id = ? AND (memory_id IS ? OR memory_id IS ?)"
            " AND event IS ? AND ts IS ? AND actor IS ? AND old_value IS ? AND new_value IS ?"
            " LIMIT 1",
            (user_id, target, original, data.get("event"), data.get("ts"), data.get("actor"),
             data.get("old_value"), data.get("new_value")),
        ).fetchone():  # fmt: skip
            # Already here: a memory imported before, or (same file again) a purged one's event.
            report.skipped["history"] += 1
            continue
        insert("history", "history", lineno, data, memory_id=target)
    return report


def enqueue_vectors(conn: Any, report: RecordReport, *, now: float) -> int:
    """Durable embed jobs for what the import added (vectors are not exported)."""
    for turn_id in report.turn_ids:
        enqueue.embed_turn(conn, turn_id, now=now)
    active = [
        memory_id
        for memory_id in report.memory_ids
        if conn.execute(
            f"SELECT 1 FROM memories WHERE id = ? AND status = 'active'"
            f" AND kind IN ({placeholders(VECTOR_KINDS)})",
            (memory_id, *VECTOR_KINDS),
        ).fetchone()
    ]
    for memory_id in active:
        enqueue.embed_memory(conn, memory_id, now=now)
    return len(report.turn_ids) + len(active)


def _ids_free(conn: Any, table: str, ids: Iterable[int]) -> bool:
    wanted = list(ids)
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = placeholders(chunk)
        if conn.execute(f"SELECT 1 FROM {table} WHERE id IN ({marks}) LIMIT 1", chunk).fetchone():
            return False
    return True


def _mapped(maps: dict[str, dict[int, int]], **ids: Any) -> tuple[int, int] | None:
    (_, first), (name, second) = list(ids.items())
    a = maps["memory"].get(first)
    b = maps["turn" if name == "turn" else "memory"].get(second)
    return None if a is None or b is None else (a, b)


def _column_problem(name: str, value: Any, declared: tuple[str, bool]) -> str | None:
    """Why the code could not read `value` from column `name` of its declared (type, not
    null), or None. SQLite would store "high" in a REAL column; every read would then fail."""
    kind, not_null = declared
    if value is None:
        return "must not be null" if not_null else None
    if any(word in kind for word in ("INT", "REAL", "NUM")):
        if not isinstance(value, int | float):
            return f"must be a number, got {_shown(value)}"
    shape = JSON_COLUMNS.get(name)
    if shape is not None:
        what = "a JSON array" if shape is list else "a JSON object"
        try:
            parsed = json.loads(value) if isinstance(value, str) else None
        except ValueError:
            parsed = None
        if not isinstance(parsed, shape):
            return f"must be {what} (as text), got {_shown(value)}"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


class _Columns(dict[str, dict[str, tuple[str, bool]]]):
    """Each table's columns: name → (declared type, upper case; NOT NULL)."""

    def __init__(self, conn: Any) -> None:
        super().__init__()
        self.conn = conn

    def __missing__(self, table: str) -> dict[str, tuple[str, bool]]:
        names = {
            str(r[1]): (str(r[2] or "").upper(), bool(r[3]))
            for r in self.conn.execute(f"PRAGMA table_info({table})")
        }
        self[table] = names
        return names
