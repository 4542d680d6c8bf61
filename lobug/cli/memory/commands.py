"""`lobug memory ACTION`: every /v1 memory operation from a shell, on the same services.

The CLI acts as `cli_principal()` (full trust, every category); `--agent NAME` narrows it to
that agent's category allowlist, enforced by the same service layer as HTTP. Exit codes: 0 ok;
1 not found, a conflict or another problem; 2 bad usage, bad input or forbidden.

`facts` and `summaries` are `list --kind fact|summary`; `search` is `query`: one way each.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from lobug import errors
from lobug.access import CLI_AGENT, Principal, cli_principal
from lobug.cli.main import EXIT_OK
from lobug.cli.memory import proposals, views
from lobug.cli.memory.importing import run_import
from lobug.cli.memory.reembed import run_reembed
from lobug.cli.memory.session import drive, failed, output, services
from lobug.config import Config
from lobug.memory import Recall, Records, enqueue
from lobug.memory.query import scalars as f
from lobug.memory.shapes import params as q

TURN_KINDS = (enqueue.EXTRACT, enqueue.EMBED_TURN, enqueue.EMBED_MEMORY)
EMBED_KINDS = (enqueue.EMBED_MEMORY,)
Command = Callable[[argparse.Namespace, Records, Recall, Principal], Awaitable[tuple[Any, str]]]
# Commands that need the memory service (embedder, LLM client, jobs); the rest only read rows.
NEEDS_SERVICE = {"add-turn", "context", "remember", "update", "forget", "restore", "confirm",
                 "why", "query", "gc"}  # fmt: skip


def register(sub: Any) -> None:
    memory = sub.add_parser("memory", help="long-term memory: the /v1 operations from a shell")
    actions = memory.add_subparsers(dest="memory_command", required=True, metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--user", default="default", help="user id (default: default)")
    agent = argparse.ArgumentParser(add_help=False)
    agent.add_argument("--agent", help="act as this agent: its category allowlist applies")
    parents = [common, agent]

    def add(name: str, handler: Command, help: str, **kw: Any) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, parents=parents, help=help, **kw)
        parser.set_defaults(func=_runner(name, handler))
        return parser

    p = add("add-turn", views.add_turn, "log a conversation turn and extract its memories")
    p.add_argument("session_id")
    p.add_argument("role", choices=f.ROLES)
    p.add_argument("text")
    p.add_argument("--ts", help="when it was said: Unix seconds or ISO 8601 (default: now)")
    p.add_argument("--ref", help="your own id for the turn, returned in sources")
    p.add_argument("--speaker", help="who said it, by name (questions naming them prefer it)")
    p.add_argument("--no-extract", action="store_true", help="store only; extract nothing")
    p.add_argument("--wait", type=float, default=10.0, help="seconds to wait for extraction")
    p = add("session-summary", views.session_summary,
            "what an ended session was about: request, outcome, decisions, open items")  # fmt: skip
    p.add_argument("session_id")
    p = add("context", views.context, "what a prompt for the session would get")
    p.add_argument("session_id")
    p.add_argument("-q", help="text to retrieve for (default: the session's last user turn)")
    p.add_argument("-k", type=int, default=5, help="how many memories (default 5)")
    p = add("remember", views.remember, "store a memory directly")
    p.add_argument("content")
    _memory_options(p)
    p.add_argument("--kind", choices=f.KINDS, default="fact")
    _list_options(add("list", views.listing, "list memories, or full-text search them with -q"))
    for kind, plural in (("fact", "facts"), ("summary", "summaries")):
        p = add(plural, views.listing, f"list {plural}: `list --kind {kind}`")
        _list_options(p, kind=kind)
    for name, handler, text in (
        ("get", views.get, "one memory"),
        ("restore", views.restore, "undo a soft delete (or an archive)"),
        ("confirm", views.confirm, "protect a memory for good: full confidence, no decay"),
    ):
        add(name, handler, text).add_argument("id", type=int)
    p = add("update", views.update, "change a memory (only the options given)")
    p.add_argument("id", type=int)
    p.add_argument("--content")
    _memory_options(p, update=True)
    p.add_argument("--status", choices=f.PATCH_STATUSES)
    p.add_argument("--if-match", help="the ETag you read; refuse (exit 1) if it changed since")
    p = add("forget", views.forget, "soft-delete a memory (restorable), or --purge it for good")
    p.add_argument("id", type=int, nargs="?")
    p.add_argument("--text", help="the memory whose text this is (case and punctuation aside)")
    p.add_argument("--purge", action="store_true", help="remove it and everything derived")
    p = add("why", views.why, "why a memory ranks where it does")
    p.add_argument("id", type=int)
    p.add_argument("-q", help="explain its rank for this query")
    p = add("history", views.history, "a memory's audit events, newest first")
    p.add_argument("id", type=int)
    p.add_argument("--limit", type=int, default=100)
    p = add("query", views.query, "the single retrieval tool (POST /v1/query)", aliases=["search"])
    p.add_argument("text")
    p.add_argument("--category", action="append", dest="categories")
    p.add_argument("--kind", action="append", dest="kinds", choices=f.QUERY_KINDS)
    p.add_argument(
        "--store", action="append", dest="stores", choices=f.STORES, help="only this store"
    )
    p.add_argument(
        "--include-superseded",
        action="store_true",
        help="also facts a newer statement replaced (history)",
    )
    p.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE")
    _writer_options(p, "only memories written by")
    p.add_argument("-k", "--top-k", type=int, default=5, dest="top_k")
    p.add_argument(
        "--threshold", type=float, help="drop results less similar to the query (cosine, 0-1)"
    )
    p.add_argument("--min-score", type=float, dest="min_score", help="drop lower final scores")
    p.add_argument("--full", action="store_true", help="whole memories instead of bullets")
    p.add_argument("--budget", type=int, help="about this many tokens at most")
    p.add_argument("--session", help="report this session's memory delta")
    add("gc", views.gc, "run decay, promotion, archive, TTL and purge now")
    p = add("entities", views.entities, "people, places and things; one with its memories")
    p.add_argument("id", type=int, nargs="?")
    p.add_argument("-q", help="name or alias")
    p.add_argument("--type", help="only this type (person: the people index)")
    p.add_argument("--limit", type=int, default=50)
    p = add("timeline", views.timeline, "memories around one, in time order")
    p.add_argument("anchor", type=int)
    p.add_argument("--before", type=int, default=5)
    p.add_argument("--after", type=int, default=5)
    p = add("export", views.export, "everything of the user as JSON lines (see `import`)")
    p.add_argument("-o", "--output", help="file to write (default: standard output)")
    add("base", views.base, "print the base memory document")
    p = actions.add_parser(
        "stats", parents=parents, help="counts, counters, vector state, memory jobs"
    )
    p.set_defaults(func=_plain(views.run_stats))

    imp = actions.add_parser(
        "import", parents=[common], help="import turns (or an export) from JSONL"
    )
    imp.add_argument(
        "file",
        type=Path,
        help="lines of {session_id, role, text, ts?, ref?, speaker?} (or an export); bad lines"
        " are reported and skipped (exit 1), and a re-run stores nothing twice",
    )
    imp.set_defaults(func=_plain(run_import))
    re_ = actions.add_parser(
        "reembed", parents=[common], help="rebuild all vectors with the configured embedder"
    )
    re_.add_argument("--force", action="store_true", help="even when the model already matches")
    re_.set_defaults(func=_plain(run_reembed))
    proposals.register(actions, parents)  # proposals, accept, reject (seed 001 §10)


def _list_options(p: argparse.ArgumentParser, *, kind: str | None = None) -> None:
    p.add_argument("-q", help="full-text query")
    if kind is None:
        p.add_argument("--kind", choices=f.KINDS)
    else:
        p.set_defaults(kind=kind)
    p.add_argument("--layer", choices=f.LAYERS)
    p.add_argument("--status", choices=f.STATUSES, default="active")
    p.add_argument("--all", action="store_const", const=None, dest="status", help="every status")
    p.add_argument("--category")
    p.add_argument("--store", choices=f.STORES)
    _writer_options(p, "only memories written by")
    p.add_argument("--pii", choices=q.PII_FILTERS,
                   help="only memories with personal data (any, or one kind), or none")  # fmt: skip
    p.add_argument("--sort", choices=("created", "score"), default="created",
                   help="score: by the score the daily upkeep keeps, highest first")  # fmt: skip
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--offset", type=int, default=0)


def _writer_options(p: argparse.ArgumentParser, what: str) -> None:
    """--agent-id, --run-id, --actor-id: who wrote a memory (seed 001 §6.1)."""
    p.add_argument("--agent-id", dest="agent_id", help=f"{what} this agent")
    p.add_argument("--run-id", dest="run_id", help=f"{what} this run of an agent")
    p.add_argument("--actor-id", dest="actor_id", help=f"{what} this person (who spoke)")


def _memory_options(p: argparse.ArgumentParser, *, update: bool = False) -> None:
    p.add_argument("--category")
    p.add_argument("--importance", type=float)
    p.add_argument("--tag", action="append", dest="tags", help="repeat for several")
    p.add_argument("--store", choices=f.STORES)
    p.add_argument(
        "--expires",
        metavar="WHEN",
        help="keep it until then, hidden after: a duration from now (30m, 12h, 7d, 2w) or an "
        "ISO 8601 date or date-time (UTC when no offset)",
    )
    if update:
        p.add_argument("--no-expires", action="store_true", help="keep it for good")
        p.add_argument("--no-category", action="store_true", help="clear the category")
        p.add_argument("--no-tags", action="store_true", help="clear the tags")
        p.add_argument("--pin", action="store_true", default=None, dest="pinned")
        p.add_argument("--unpin", action="store_false", dest="pinned")
    else:
        p.add_argument("--pinned", action="store_true")
        p.add_argument("--session", help="the session the delta header credits")
        _writer_options(p, "record it as written by")  # agent default: --agent, else cli


def _plain(
    command: Callable[[argparse.Namespace, Config], Coroutine[Any, Any, int]],
) -> Callable[[argparse.Namespace, Config], int]:
    return lambda args, config: asyncio.run(command(args, config))


def _runner(name: str, handler: Command) -> Callable[[argparse.Namespace, Config], int]:
    return lambda args, config: asyncio.run(_run(name, handler, args, config))


async def _run(name: str, handler: Command, args: argparse.Namespace, config: Config) -> int:
    principal = cli_principal(args.agent or CLI_AGENT)
    try:
        async with services(config, with_memory=name in NEEDS_SERVICE) as (records, recall):
            if records.memory is not None:
                recall.drive = drive(records.memory, config, TURN_KINDS)
            if name == "add-turn":
                recall.extract_wait_s = max(0.0, args.wait)
            data, text = await handler(args, records, recall, principal)
            if name in ("remember", "update", "restore") and records.memory is not None:
                # No daemon here: make the vector now rather than leave its job pending.
                await drive(records.memory, config, EMBED_KINDS)(30.0)
    except errors.ApiError as exc:
        return failed(args, exc)
    if data is not None:
        output(args, data, text)
    return EXIT_OK
