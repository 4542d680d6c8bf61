"""Bulk import of conversation turns from JSONL: validate each line, store, enqueue the work.

A line is `{"session_id": "...", "role": "user"|"assistant", "text": "...", "ts"?: number or
ISO 8601, "ref"?: "...", "speaker"?: "..."}` (speaker: who said it by name, e.g. in an imported
conversation between two people; questions that name them prefer their turns). Bad lines are
reported by number and skipped; a line whose (session_id, ref) is already stored is skipped
too, so re-running an import is harmless.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from lobug.conversation import insert_turn, resolve_session
from lobug.memory import enqueue
from lobug.memory.summaries.cascades import short_cascade_due

MAX_ID_CHARS = 128
MAX_REF_CHARS = 256
DEVICE_ID = "import"
BATCH = 500  # lines per transaction


class LineError(ValueError):
    """One line of the file is not a valid turn."""


@dataclass(frozen=True)
class ImportLine:
    lineno: int
    session_id: str
    role: str
    text: str
    ts: float | None
    ref: str | None
    speaker: str | None = None


@dataclass
class ImportResult:
    stored: int = 0
    skipped: int = 0
    extract_jobs: int = 0
    embed_jobs: int = 0
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def parse_line(raw: str, lineno: int, *, max_chars: int) -> ImportLine:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise LineError(f"not JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise LineError("not a JSON object")
    session_id = _text(value, "session_id", MAX_ID_CHARS)
    role = value.get("role")
    if role not in ("user", "assistant"):
        raise LineError('\'role\' must be "user" or "assistant"')
    text = _text(value, "text", max_chars)
    ref = value.get("ref")
    if ref is not None:
        ref = _text(value, "ref", MAX_REF_CHARS)
    speaker = value.get("speaker")
    if speaker is not None:
        speaker = _text(value, "speaker", MAX_ID_CHARS)
    return ImportLine(lineno, session_id, role, text, _ts(value.get("ts")), ref, speaker)


def read_lines(lines: Iterable[str], *, max_chars: int) -> tuple[list[ImportLine], list[str]]:
    good, errors = [], []
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            good.append(parse_line(raw, lineno, max_chars=max_chars))
        except LineError as exc:
            errors.append(f"line {lineno}: {exc}")
    return good, errors


def plan(lines: list[ImportLine]) -> tuple[dict[int, int], list[list[ImportLine]]]:
    """Exchanges (a user line and the next line of its session, when that is the reply) and
    batches that never split an exchange, so a turn and its extract job commit together.

    Returns {user line number: reply line number} and the batches.
    """
    partner: dict[int, int] = {}  # index of a user line -> index of its reply
    last_user: dict[str, int] = {}
    for i, line in enumerate(lines):
        if line.role == "assistant" and line.session_id in last_user:
            partner[last_user.pop(line.session_id)] = i
        elif line.role == "user":
            last_user[line.session_id] = i
    batches: list[list[ImportLine]] = []
    current: list[ImportLine] = []
    open_until = -1
    for i, line in enumerate(lines):
        current.append(line)
        open_until = max(open_until, partner.get(i, -1))
        if len(current) >= BATCH and open_until <= i:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    by_lineno = {lines[u].lineno: lines[a].lineno for u, a in partner.items()}
    return by_lineno, batches


def existing_refs(conn: Any) -> set[tuple[str, str]]:
    rows = conn.execute("SELECT session_id, ref FROM turns WHERE ref IS NOT NULL").fetchall()
    return {(r[0], r[1]) for r in rows}


def store_batch(
    conn: Any,
    batch: list[ImportLine],
    *,
    partners: dict[int, int],
    now: float,
    user_id: str,
    threshold: int,
    max_attempts: int,
    result: ImportResult,
) -> None:
    """One transaction: the turns, their embed jobs, and the extract jobs of whole exchanges.

    `partners` maps a user line's number to its reply's line number (both in this batch).
    """
    ids: dict[int, int] = {}
    for line in batch:
        ts = line.ts if line.ts is not None else now
        sid = resolve_session(
            conn,
            device_id=DEVICE_ID,
            session_id=line.session_id,
            now=ts,
            idle_s=0,
            user_id=user_id,
        )
        turn = insert_turn(
            conn,
            session_id=sid,
            role=line.role,
            text=line.text,
            ts=ts,
            device_id=DEVICE_ID,
            user_id=user_id,
            ref=line.ref,
            action="RESPOND",  # a finished conversation: nothing is in flight
            speaker=line.speaker,
        )
        ids[line.lineno] = turn.id
        enqueue.embed_turn(conn, turn.id, now=now, max_attempts=max_attempts)
        result.stored += 1
        result.embed_jobs += 1
    for line in batch:
        if line.role != "user":
            continue
        reply = partners.get(line.lineno)
        enqueue.extract(
            conn,
            user_id=user_id,
            user_turn_id=ids[line.lineno],
            assistant_turn_id=ids.get(reply) if reply is not None else None,
            now=now,
            max_attempts=max_attempts,
        )
        result.extract_jobs += 1
    if short_cascade_due(conn, user_id, threshold):
        enqueue.cascade(
            conn, enqueue.CASCADE_SHORT, user_id=user_id, now=now, max_attempts=max_attempts
        )


def _text(value: dict[str, Any], key: str, limit: int) -> str:
    text = value.get(key)
    if not isinstance(text, str) or not text.strip():
        raise LineError(f"'{key}' must be a non-empty string")
    text = text.strip()
    if len(text) > limit:
        raise LineError(f"'{key}' is {len(text)} characters; the limit is {limit}")
    if key != "text" and any(ord(ch) < 32 for ch in text):
        raise LineError(f"'{key}' has control characters")
    return text


def _ts(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise LineError("'ts' must be a number or an ISO 8601 string")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    raise LineError("'ts' must be a number (Unix seconds) or an ISO 8601 string")


def memory_counts(conn: Any, user_id: str) -> tuple[int, int]:
    """(facts, summaries) of the user, any status: what an import added is the difference."""

    def count(kind: str) -> int:
        sql = "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = ?"
        return int(conn.execute(sql, (user_id, kind)).fetchone()[0])

    return count("fact"), count("summary")
