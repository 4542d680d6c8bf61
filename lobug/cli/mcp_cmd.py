"""`lobug mcp`: serve the memory to one desktop agent over stdio (Model Context Protocol).

It opens the database like `lobug memory …` (the same service layer, no daemon needed; with
the daemon running both share the file). The agent acts as the owner (full trust, every
category) under the agent name `mcp`; `--agent` narrows it to an allowlist as in `lobug memory`,
and `--token` makes it exactly that token's principal (trust level, agent, allowlist).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from lobug.access import MCP_AGENT, AccessControl, Principal, cli_principal
from lobug.cli.main import EXIT_OK, EXIT_USAGE
from lobug.config import Config

EMBED_WAIT_S = 10.0  # after a write, make its vector now (no daemon may be running), this long


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve memory over MCP on stdin/stdout (for Claude Desktop and other agents)",
        description="Model Context Protocol server over stdio; see docs/mcp.md.",
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument("--token", help="act as this api.tokens entry (its trust and allowlist)")
    who.add_argument("--agent", help=f"act as this agent (default {MCP_AGENT}): its allowlist")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, config: Config) -> int:
    principal = principal_for(args, config)
    if principal is None:
        print("lobug: --token is not one of api.tokens", file=sys.stderr)
        return EXIT_USAGE
    asyncio.run(_serve(config, principal))
    return EXIT_OK


def principal_for(args: argparse.Namespace, config: Config) -> Principal | None:
    if args.token is not None:
        return AccessControl.from_config(config.api).authenticate(args.token.strip())
    return cli_principal(args.agent or MCP_AGENT)


async def _serve(config: Config, principal: Principal) -> None:
    # Here, not at the top: every `lobug` command imports this module to build its parser,
    # and the SDK (starlette, httpx, …) is only for this one.
    from lobug.cli.memory.session import drive, services
    from lobug.mcp_server.server import serve_stdio
    from lobug.mcp_server.tools import Services
    from lobug.memory import enqueue

    async with services(config, with_memory=True) as (records, recall):
        memory = records.memory
        embed = None if memory is None else drive(memory, config, (enqueue.EMBED_MEMORY,))

        async def after_write() -> None:
            if embed is not None:
                await embed(EMBED_WAIT_S)

        await serve_stdio(Services(records, recall), principal, after_write=after_write)
