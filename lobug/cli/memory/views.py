"""The `lobug memory` commands: arguments → the service layer → (JSON data, human text).

Each builds the same request body (or query parameters) the HTTP route would get and validates
it with the same `memory.shapes` models, so a bad value fails the same way (and names the field).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from lobug import errors
from lobug.access import CLI_AGENT, Principal, cli_principal
from lobug.cli.main import EXIT_OK
from lobug.cli.memory.session import output, services
from lobug.cli.tables import (
    ENTITY_COLUMNS,
    HISTORY_COLUMNS,
    MEMORY_COLUMNS,
    fields,
    table,
    when,
)
from lobug.config import Config
from lobug.memory import Recall, Records
from lobug.memory.query import QueryRequest, Timestamp
from lobug.memory.query.scalars import WRITER_KEYS, SessionIdValue
from lobug.memory.shapes import (
    MemoryCreate,
    MemoryPatch,
    TurnCreate,
    parse,
    parse_value,
)
from lobug.memory.shapes import params as q
from lobug.memory.table.dedup import content_hash
from lobug.memory.transfer.export_file import write_export

Result = tuple[Any, str]
# What the CLI prints of a memory, in this order.
SHOWN_KEYS = ("id", "kind", "content", "category", "store", "layer", "status", "importance",
              "confidence", "decay_rate", "pinned", "tags", "hits", "mention_count",
              "agent_id", "run_id", "actor_id", "created_at", "updated_at",
              "expires_at", "purge_at", "etag")  # fmt: skip
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$", re.IGNORECASE)
_UNIT_S = {"m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


def expires_at(raw: str, now: float) -> float:
    """`--expires` as Unix seconds: a duration from `now` (`30m`, `12h`, `7d`, `2w`) or an
    ISO 8601 date or date-time (UTC when it has no offset). A time already past is refused by
    the service, as over HTTP."""
    duration = _DURATION.match(raw)
    if duration:
        return now + float(duration.group(1)) * _UNIT_S[duration.group(2).lower()]
    try:
        return float(parse_value(Timestamp, raw, "expires_at"))
    except errors.ApiError:
        raise errors.invalid_request(
            f"--expires {raw!r}: give a duration (30m, 12h, 7d, 2w) or an ISO 8601 date or "
            "date-time (2030-01-31, 2030-01-31T18:00, UTC when no offset)",
            field="expires_at",
        ) from None


def memory_text(memory: dict[str, Any]) -> str:
    return fields(memory, [k for k in SHOWN_KEYS if k in memory or k == "purge_at"])


def _body(args: argparse.Namespace, keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


def _given(**values: Any) -> dict[str, Any]:
    """The options given (not None), as a route's query parameters."""
    return {k: v for k, v in values.items() if v is not None}


async def add_turn(
    args: argparse.Namespace, rec: Records, recall: Recall, who: Principal
) -> Result:
    body = {
        "session_id": args.session_id,
        "role": args.role,
        "text": args.text,
        "auto_extract": not args.no_extract,
        "ref": args.ref,
        "speaker": args.speaker,
        "ts": None if args.ts is None else parse_value(Timestamp, _number(args.ts), "ts"),
    }
    turn = parse(TurnCreate, body, max_text_chars=recall.max_text_chars)
    done = await recall.add_turn(who, turn.fields(), user_id=args.user)
    lines = [f"turn #{done['turn_id']} in session {done['session_id']}"]
    lines += [f"  {m['action']}: #{m['id']} {m['content']}" for m in done["extracted"]]
    if done["extraction"] == "pending":
        lines.append("  extraction is still pending; the daemon finishes it")
    return done, "\n".join(lines)


async def session_summary(
    args: argparse.Namespace, rec: Records, recall: Recall, who: Principal
) -> Result:
    """GET /v1/sessions/{id}/summary: seed 002's record of an ended session."""
    session_id = str(parse_value(SessionIdValue, args.session_id, "session_id"))
    found = await rec.session_summary(who, session_id, user_id=args.user)
    lines = [f"session {found['session_id']} ({found['turn_count']} turns, "
             f"{found['observation_count']} memories; summarised {when(found['updated_at'])} UTC)",
             f"request: {found['request']}", f"outcome: {found['outcome'] or '-'}"]  # fmt: skip
    for key, title in (("decisions", "decisions"), ("open_items", "open items")):
        lines.append(f"{title}:" + ("" if found[key] else " -"))
        lines += [f"  - {item}" for item in found[key]]
    return found, "\n".join(lines)


async def context(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    given = parse(q.ContextParams, _given(session_id=args.session_id, q=args.q, k=args.k))
    data = await recall.context(who, given.session_id, q=given.q, k=given.k, user_id=args.user)
    parts = []
    if data["delta_header"]:
        parts.append(data["delta_header"])
    if data["base_memory"]:
        parts.append("[Long-term memory]\n" + data["base_memory"])
    if data["memories"]:
        parts.append(
            "[Relevant memories]\n" + "\n".join(f"- {m['text']}" for m in data["memories"])
        )
    if data["short_term"]:
        parts.append("\n".join(f"{t['role']}: {t['text']}" for t in data["short_term"]))
    return data, "\n\n".join(parts) or "(nothing for this session yet)"


async def remember(
    args: argparse.Namespace, rec: Records, recall: Recall, who: Principal
) -> Result:
    body = {"content": args.content, "kind": args.kind, "pinned": args.pinned}
    body.update(_body(args, ("category", "importance", "tags", "store", *WRITER_KEYS)))
    if args.session is not None:
        body["session_id"] = args.session
    if args.expires is not None:
        body["expires_at"] = expires_at(args.expires, rec.clock())
    memory = await rec.create(who, parse(MemoryCreate, body).fields(), user_id=args.user)
    return memory, f"{memory['action']}: #{memory['id']}\n{memory_text(memory)}"


async def listing(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    keys = ("q", "kind", "layer", "category", "store", "pii", "sort", "limit", "offset",
            *WRITER_KEYS)  # fmt: skip
    given = parse(q.MemoryListParams, _body(args, keys))
    found = await rec.list_memories(
        who,
        **given.model_dump(exclude={"status", *WRITER_KEYS}),
        status=args.status,  # --all: every status (None), which HTTP does not offer
        writers=given.writers(),
        user_id=args.user,
    )
    return found, table(found["memories"], MEMORY_COLUMNS, "(no memories)")


async def get(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    memory = await rec.get(who, args.id, user_id=args.user)
    return memory, memory_text(memory)


async def update(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    body = _body(args, ("content", "category", "importance", "tags", "pinned", "store", "status"))
    if args.no_category:
        body["category"] = None
    if args.no_tags:
        body["tags"] = []
    if args.expires is not None and args.no_expires:
        raise errors.invalid_request("give --expires or --no-expires, not both", field="expires_at")
    if args.expires is not None:
        body["expires_at"] = expires_at(args.expires, rec.clock())
    if args.no_expires:
        body["expires_at"] = None
    changes = parse(MemoryPatch, body).fields()
    memory = await rec.update(who, args.id, changes, if_match=args.if_match, user_id=args.user)
    return memory, memory_text(memory)


async def forget(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    if (args.id is None) == (args.text is None):
        raise errors.invalid_request("give a memory id or --text, one of them", field="id")
    target = args.id if args.text is None else await _by_text(args.text, rec, who, args.user)
    done = await rec.delete(who, target, purge=args.purge, user_id=args.user)
    if done["status"] == "purged":
        return done, f"memory #{target} purged for good"
    return done, f"memory #{target} soft-deleted; restorable until {when(done['purge_at'])} UTC"


async def _by_text(text: str, rec: Records, who: Principal, user_id: str) -> int:
    """The one live memory saying `text` (seed 000's `forget --text`), compared as the writer
    compares duplicates (`content_hash`); else an error naming the closest, to pick by id."""
    wanted = content_hash(text)
    found = (await rec.list_memories(who, q=text, limit=20, user_id=user_id))["memories"]
    same = [m for m in found if content_hash(m["content"]) == wanted]
    if len(same) == 1:
        return int(same[0]["id"])
    shown = "; ".join(f"#{m['id']} {m['content'][:70]!r}" for m in (same or found)[:5])
    if same:
        raise errors.conflict(f"{len(same)} memories say that: {shown}; forget one by its id")
    raise errors.not_found(
        "no memory says that" + (f"; the closest: {shown}; forget one by its id" if shown else "")
    )


async def restore(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    memory = await rec.restore(who, args.id, user_id=args.user)
    return memory, memory_text(memory)


async def confirm(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    memory = await rec.confirm(who, args.id, user_id=args.user)
    head = f"memory #{args.id} confirmed: full confidence, and it never fades"
    return memory, f"{head}\n{memory_text(memory)}"


async def why(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    text = parse(q.WhyParams, _given(q=args.q)).q
    data = await rec.why(who, args.id, q=text, user_id=args.user)
    rank = f" (rank {data['rank']} of {data['candidates']})" if data.get("rank") else ""
    lines = [f"#{data['id']} {data.get('content', '')}", f"score {data['score']:.4f}{rank}"]
    lines += [f"  {name:<22} {value:.4g}" for name, value in data["terms"].items()]
    lines.append(f"hits {data.get('hits')}, age {data.get('age_days', 0):.1f} days")
    lines.append(f"rules: {', '.join(data.get('matched_rules') or []) or '-'}")
    lines += [f"  {when(d['ts'])} {d['event']} by {d['actor']}" for d in data["decisions"]]
    return data, "\n".join(lines)


async def history(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    limit = parse(q.HistoryParams, {"limit": args.limit}).limit
    data = await rec.history(who, args.id, limit=limit, user_id=args.user)
    rows = [{**e, "when": when(e["ts"])} for e in data["events"]]
    return data, table(rows, HISTORY_COLUMNS, "(no history)")


async def query(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    body: dict[str, Any] = {
        "query": args.text,
        "top_k": args.top_k,
        "return": "full" if args.full else "bullets",
        "filters": {
            **dict(_filter(item) for item in args.filter),
            **_body(args, WRITER_KEYS),
        }
        or None,
    }
    body.update(_body(args, ("categories", "kinds", "stores", "threshold", "min_score")))
    if args.include_superseded:
        body["include_superseded"] = True
    if args.budget is not None:
        body["budget_tokens"] = args.budget
    if args.session is not None:
        body["session_id"] = args.session
    data = await recall.query(who, parse(QueryRequest, body), user_id=args.user)
    lines = [f"{r['score']:7.3f}  #{r['id']:<6} {r['text']}" for r in data["results"]]
    lines += [f"delta: {d['summary']}" for d in data["delta"]]
    return data, "\n".join(lines) or "(nothing found)"


async def base(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    content = await rec.base(who, user_id=args.user)
    return {"user_id": args.user, "content": content}, content or "(no base memory yet)"


async def gc(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    data = await rec.gc(who)
    return data, "\n".join(f"{k}: {v}" for k, v in data.items())


async def entities(
    args: argparse.Namespace, rec: Records, recall: Recall, who: Principal
) -> Result:
    if args.id is not None:
        data = await rec.entity(who, args.id, user_id=args.user)
        head = f"#{data['id']} {data['canonical_name']} ({data['type']}), {data['mention_count']}×"
        return data, head + "\n" + table(data["memories"], MEMORY_COLUMNS, "(no memories)")
    given = parse(q.EntityListParams, _given(q=args.q, type=args.type, limit=args.limit))
    data = await rec.entities(who, q=given.q, type=given.type, limit=given.limit, user_id=args.user)
    return data, table(data["entities"], ENTITY_COLUMNS, "(no entities)")


async def timeline(
    args: argparse.Namespace, rec: Records, recall: Recall, who: Principal
) -> Result:
    given = parse(
        q.TimelineParams, _given(anchor=args.anchor, before=args.before, after=args.after)
    )
    data = await rec.timeline(
        who, given.anchor, before=given.before, after=given.after, user_id=args.user
    )
    rows = [{**m, "created": when(m["created_at"]), "at": "→" if m["id"] == args.anchor else ""}
            for m in data["items"]]  # fmt: skip
    columns = [("at", "", 1), ("created", "CREATED (UTC)", 19), *MEMORY_COLUMNS]
    return data, table(rows, columns, "(nothing)")


async def export(args: argparse.Namespace, rec: Records, recall: Recall, who: Principal) -> Result:
    rec.scope(who).require_unrestricted("an export")
    now = rec.clock()
    if args.output is None:
        try:
            lines = await rec.db.read(write_export, args.user, now, sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # `lobug memory export | head`: the reader has had enough
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return None, ""
        print(f"exported {lines} line(s)", file=sys.stderr)
        return None, ""
    with open(args.output, "w", encoding="utf-8") as out:
        lines = await rec.db.read(write_export, args.user, now, out)
    return {"file": args.output, "lines": lines}, f"exported {lines} line(s) to {args.output}"


def _number(raw: str) -> Any:
    try:
        return float(raw)
    except ValueError:
        return raw


def _filter(item: str) -> tuple[str, Any]:
    key, sep, raw = item.partition("=")
    if not sep:
        raise errors.invalid_request(
            f"'filters' --filter takes KEY=VALUE, got {item!r}", field="filters"
        )
    value: Any = raw
    if key == "pinned":
        value = {"true": True, "false": False}.get(raw.lower(), raw)
    elif key.startswith("importance_") or (key.startswith("updated_") and _number(raw) != raw):
        value = _number(raw)
    return key, value


async def run_stats(args: argparse.Namespace, config: Config) -> int:
    """`stats`: the /v1 counts plus the machinery (it needs the configured embedder's name)."""
    async with services(config, with_memory=False) as (rec, _):
        data = await rec.upkeep_stats(
            cli_principal(args.agent or CLI_AGENT),
            model=config.embedding.model,
            dim=config.embedding.dim,
            user_id=args.user,
        )
    output(args, data, "\n".join(f"{k}: {json.dumps(v)}" for k, v in data.items()))
    return EXIT_OK
