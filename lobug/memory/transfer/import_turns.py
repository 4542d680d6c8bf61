"""Bulk import of conversation turns from JSONL: validate each line, store, enqueue the work.

The line format is docs/memory-api.md, "Export and import" (turn lines); a bad line is reported
by number and skipped, the good ones still stored.

Re-running an import — the same file twice, or again after the process was killed — stores
nothing twice: a line whose (session_id, ref) is already stored is skipped, and a line without
a `ref` is matched by its content (session, role, ts, text). Identical lines are told apart
by their order: the n-th occurrence of a content in the file is already stored when the
session holds at least n such turns. A line without `ts` (stored at the import's time) is
matched by session, role and text alone. The check runs inside each batch's transaction, so a
batch is either wholly stored or wholly skipped, and a killed import resumes where it stopped.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from lobug.access import OWNER
from lobug.conversation import insert_turn, named_session, resolve_session
from lobug.memory import enqueue
from lobug.memory.summaries.cascades import short_cascade_due
from lobug.storage.sqlite import storable_text

MAX_ID_CHARS = 128
MAX_REF_CHARS = 256
DEVICE_ID = "import"
BATCH = 500  # lines per transaction
MAX_TS = 253_402_300_799.0  # 9999-12-31T23:59:59Z: what datetime (and a reader) can show


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
    # Without a ref: this is the seq-th line of the file with the same content key (see
    # content_key); 0 when unknown (lines not from read_lines: counted per batch then).
    seq: int = 0


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
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise LineError(f"not readable JSON ({_short(exc)})") from None
    except RecursionError:
        raise LineError("not readable JSON (nested too deeply)") from None
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
    """The valid lines (numbered from 1, with their `seq`) and one error per bad line."""
    good, errors = [], []
    seen: Counter[tuple[object, ...]] = Counter()
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = parse_line(raw, lineno, max_chars=max_chars)
        except LineError as exc:
            errors.append(f"line {lineno}: {exc}")
            continue
        if line.ref is None:
            seen[content_key(line)] += 1
            seen[loose_key(line)] += 1
            line = replace(line, seq=seen[match_key(line)])
        good.append(line)
    return good, errors


def content_key(line: ImportLine) -> tuple[object, ...]:
    return (line.session_id, line.role, line.ts, line.text)


def loose_key(line: ImportLine) -> tuple[object, ...]:
    return (line.session_id, line.role, None, line.text, "any ts")


def match_key(line: ImportLine) -> tuple[object, ...]:
    """A line with a ts matches stored turns of that exact time; one without, of any time."""
    return content_key(line) if line.ts is not None else loose_key(line)


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


class _Stored:
    """What the batch's sessions already hold: refs, and ref-less turns counted by content."""

    def __init__(self, conn: Any, sessions: Iterable[str], user_id: str) -> None:
        self.refs: set[tuple[str, str]] = set()
        self.count: Counter[tuple[object, ...]] = Counter()
        for session_id in sorted(set(sessions)):
            # The turns of the session this user's import lands in (another user's session of
            # that name is not it: `conversation.resolve_session`).
            target = named_session(conn, session_id, owner=OWNER, user_id=user_id, trust="full")
            rows = conn.execute(
                "SELECT role, ts, text, ref, user_id FROM turns WHERE session_id = ?",
                (target,),
            ).fetchall()
            for role, ts, text, ref, owner in rows:
                if ref is not None:
                    self.refs.add((session_id, ref))
                elif owner == user_id:
                    self.add(session_id, role, ts, text)

    def add(self, session_id: str, role: str, ts: float, text: str) -> None:
        self.count[(session_id, role, ts, text)] += 1
        self.count[(session_id, role, None, text, "any ts")] += 1


def store_batch(
    conn: Any,
    batch: list[ImportLine],
    *,
    partners: dict[int, int],
    now: float,
    user_id: str,
    result: ImportResult,
) -> None:
    """One transaction: the turns, their embed jobs, and the extract jobs of whole exchanges.

    `partners` maps a user line's number to its reply's line number (both in this batch).
    Lines already stored (see the module's docstring) are skipped and counted in `result`.
    """
    ids: dict[int, int] = {}
    stored = _Stored(conn, (line.session_id for line in batch), user_id)
    in_batch: Counter[tuple[object, ...]] = Counter()
    for line in batch:
        if line.ref is not None:
            if (line.session_id, line.ref) in stored.refs:
                result.skipped += 1
                continue
            stored.refs.add((line.session_id, line.ref))
        else:
            in_batch[content_key(line)] += 1
            in_batch[loose_key(line)] += 1
            if stored.count[match_key(line)] >= (line.seq or in_batch[match_key(line)]):
                result.skipped += 1
                continue
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
        stored.add(line.session_id, line.role, ts, line.text)
        enqueue.embed_turn(conn, turn.id, now=now)
        result.stored += 1
        result.embed_jobs += 1
    if not ids:
        return
    for line in batch:
        if line.role != "user" or line.lineno not in ids:
            continue  # a user line already stored had its exchange extracted then
        reply = partners.get(line.lineno)
        enqueue.extract(
            conn,
            user_id=user_id,
            user_turn_id=ids[line.lineno],
            assistant_turn_id=ids.get(reply) if reply is not None else None,
            now=now,
        )
        result.extract_jobs += 1
    if short_cascade_due(conn, user_id):
        enqueue.per_user(conn, enqueue.CASCADE_SHORT, user_id=user_id, now=now)


def _text(value: dict[str, Any], key: str, limit: int) -> str:
    text = value.get(key)
    if not isinstance(text, str) or not text.strip():
        raise LineError(f"'{key}' must be a non-empty string")
    text = text.strip()
    if not storable_text(text):
        raise LineError(f"'{key}' is not valid Unicode (a lone surrogate such as \\ud800)")
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
    ts: float | None = None
    if isinstance(value, int | float):
        try:
            ts = float(value)
        except OverflowError:
            ts = math.inf
    elif isinstance(value, str) and len(value) <= 64:
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except (ValueError, OverflowError):
            pass
    if ts is None:
        raise LineError("'ts' must be a number (Unix seconds) or an ISO 8601 string")
    if not math.isfinite(ts) or abs(ts) > MAX_TS:
        raise LineError("'ts' is out of range (Unix seconds up to the year 9999)")
    return ts


def _short(exc: Exception) -> str:
    text = str(exc).split(";")[0]
    return text if len(text) <= 120 else text[:117] + "..."


def memory_counts(conn: Any, user_id: str) -> tuple[int, int]:
    """(facts, summaries) of the user, any status: what an import added is the difference."""

    def count(kind: str) -> int:
        sql = "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = ?"
        return int(conn.execute(sql, (user_id, kind)).fetchone()[0])

    return count("fact"), count("summary")
