"""`lobug memory proposals|accept|reject`: the consent queue (seed 001 §10) from a shell.

Profile fields heard by voice wait here for the user's yes; the same code as /v1/proposals
(`lobug.memory.write.proposals`). Exit codes as every `lobug memory` command: 0 ok, 1 unknown
or already decided/expired, 2 bad usage or forbidden.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from lobug import errors
from lobug.access import CLI_AGENT, Principal, cli_principal
from lobug.cli.main import EXIT_OK
from lobug.cli.memory.session import drive, failed, output, services
from lobug.cli.tables import Column, fields, table
from lobug.config import Config
from lobug.memory import enqueue, settings
from lobug.memory.write.proposals import Proposals

COLUMNS: list[Column] = [
    ("id", "ID", 6),
    ("status", "STATUS", 9),
    ("field", "FIELD", 14),
    ("signals", "SEEN", 4),
    ("expires", "EXPIRES (UTC)", 19),
    ("content", "CONTENT", 0),
]
KEYS = ("id", "status", "field", "value", "content", "category", "sensitive", "signals",
        "session_id", "turn_ids", "memory_id", "action", "created_at", "expires_at",
        "decided_at", "decided_by")  # fmt: skip
Action = Callable[[argparse.Namespace, Proposals, Principal], Awaitable[tuple[Any, str]]]


def register(actions: Any, parents: Sequence[argparse.ArgumentParser]) -> None:
    """Add the three commands to `lobug memory` (its subparsers and common options)."""
    p = actions.add_parser("proposals", parents=parents, help="profile changes awaiting a yes")
    p.add_argument("--all", action="store_true", help="every status, not only pending")
    p.add_argument("--limit", type=int, default=100)
    p.set_defaults(func=_runner(_list, embed=False))
    for name, handler, text in (
        ("accept", _accept, "keep a proposed profile fact (a new name supersedes the old)"),
        ("reject", _reject, "drop a proposed profile fact"),
    ):
        p = actions.add_parser(name, parents=parents, help=text)
        p.add_argument("id", type=int, help="the proposal's id (see `lobug memory proposals`)")
        p.set_defaults(func=_runner(handler, embed=name == "accept"))


async def _list(args: argparse.Namespace, desk: Proposals, who: Principal) -> tuple[Any, str]:
    if not 1 <= args.limit <= 500:
        raise errors.invalid_request("--limit must be between 1 and 500", field="limit")
    found = await desk.listing(
        who, status=None if args.all else "pending", limit=args.limit, user_id=args.user
    )
    rows = [{**p, "expires": p["expires_at"]} for p in found["proposals"]]
    empty = "no proposals" if args.all else "no pending proposals"
    return found, table(rows, COLUMNS, empty)


async def _accept(args: argparse.Namespace, desk: Proposals, who: Principal) -> tuple[Any, str]:
    decided = await desk.accept(who, args.id, user_id=args.user)
    return decided, fields(decided, [k for k in KEYS if k in decided])


async def _reject(args: argparse.Namespace, desk: Proposals, who: Principal) -> tuple[Any, str]:
    decided = await desk.reject(who, args.id, user_id=args.user)
    return decided, fields(decided, [k for k in KEYS if k in decided])


def _runner(handler: Action, *, embed: bool) -> Callable[[argparse.Namespace, Config], int]:
    return lambda args, config: asyncio.run(_run(handler, args, config, embed=embed))


async def _run(handler: Action, args: argparse.Namespace, config: Config, *, embed: bool) -> int:
    principal = cli_principal(args.agent or CLI_AGENT)
    try:
        async with services(config, with_memory=embed) as (records, _):
            desk = Proposals(
                records.db,
                records.policy,
                policy=settings.write_policy(config),
                clock=time.time,
            )
            data, text = await handler(args, desk, principal)
            if records.memory is not None:
                # No daemon here: make the accepted fact's vector now.
                await drive(records.memory, config, (enqueue.EMBED_MEMORY,))(30.0)
    except errors.ApiError as exc:
        return failed(args, exc)
    output(args, data, text)
    return EXIT_OK
