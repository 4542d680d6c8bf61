"""`lobug memory facts|search|base|summaries|stats|import|reembed`: the memory from a shell.

The /v1 operations (add-turn, query, list, update, export, …) are in `memory_api_cmd`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

from lobug.access import CategoryPolicy, cli_principal
from lobug.app import make_database
from lobug.cli.progress import ProgressBar
from lobug.config import Config
from lobug.llm.embedders import EmbeddingUnavailable, make_embedder
from lobug.memory.jobs import enqueue
from lobug.memory.records import views as records_views
from lobug.memory.records.rows import Scope
from lobug.memory.service import MemoryService
from lobug.memory.store import rows as store
from lobug.memory.summaries import base_memory
from lobug.memory.summaries.cascades import count_unincorporated, count_unsummarized
from lobug.memory.vectors.reembed import reembed
from lobug.storage.database import Database
from lobug.storage.migrations import migrate
from lobug.storage.vectors import embedding_state, has_vector_tables

EXIT_OK, EXIT_PROBLEM = 0, 1


def register(sub: Any) -> None:
    memory = sub.add_parser("memory", help="long-term memory: facts, summaries, base memory")
    actions = memory.add_subparsers(dest="memory_command", required=True, metavar="ACTION")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument("--user", default="default", help="user id (default: default)")

    facts = actions.add_parser("facts", parents=[common], help="list facts, newest first")
    facts.add_argument("--all", action="store_true", help="include archived (superseded) facts")
    facts.add_argument("--limit", type=int, default=50)
    facts.set_defaults(func=_run(_facts))
    search = actions.add_parser("search", parents=[common], help="semantic search over facts")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=10, help="how many results (default 10)")
    search.set_defaults(func=_run(_search))
    actions.add_parser(
        "base", parents=[common], help="print the base memory document"
    ).set_defaults(func=_run(_base))
    summaries = actions.add_parser("summaries", parents=[common], help="conversation summaries")
    summaries.add_argument("--limit", type=int, default=20)
    summaries.set_defaults(func=_run(_summaries))
    actions.add_parser(
        "stats", parents=[common], help="counts, counters, vector state"
    ).set_defaults(func=_run(_stats))
    imp = actions.add_parser(
        "import", parents=[common], help="import turns from JSONL and extract their memories"
    )
    imp.add_argument("file", type=Path, help="lines of {session_id, role, text, ts?, ref?}")
    imp.set_defaults(func=_run(_import))
    re_ = actions.add_parser(
        "reembed", parents=[common], help="rebuild all vectors with the configured embedder"
    )
    re_.add_argument("--force", action="store_true", help="even when the model already matches")
    re_.set_defaults(func=_run(_reembed))
    from lobug.cli import memory_api_cmd  # the /v1 operations; it imports helpers from here

    memory_api_cmd.register(actions, common)


def _run(coro: Any) -> Any:
    def func(args: argparse.Namespace, config: Config) -> int:
        return int(asyncio.run(coro(args, config)))

    return func


@contextlib.asynccontextmanager
async def _database(config: Config) -> AsyncIterator[Database]:
    db = make_database(config)
    await db.open()
    try:
        await db.write_raw(migrate)
        yield db
    finally:
        await db.close()


@contextlib.asynccontextmanager
async def open_service(config: Config) -> AsyncIterator[tuple[Database, MemoryService]]:
    async with _database(config) as db:
        service = MemoryService.create(config, db=db)
        try:
            await service.start()
            yield db, service
        finally:
            await service.close()


def output(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False) if args.json else text)


# -- read-only views ----------------------------------------------------------------------------
async def _facts(args: argparse.Namespace, config: Config) -> int:
    async with _database(config) as db:
        rows = await db.read(
            partial(
                store.list_memories,
                user_id=args.user,
                kind="fact",
                status=None if args.all else "active",
                limit=args.limit,
            )
        )
    lines = [
        f"#{m.id:<6} {m.category or '-':<10} {m.content}"
        + (f"  [{m.status}; superseded]" if m.status != "active" else "")
        for m in rows
    ]
    output(args, [m.to_dict() for m in rows], "\n".join(lines) or "(no facts yet)")
    return EXIT_OK


async def _base(args: argparse.Namespace, config: Config) -> int:
    async with _database(config) as db:
        content = await db.read(base_memory.get_base, args.user)
    output(args, {"user_id": args.user, "content": content}, content or "(no base memory yet)")
    return EXIT_OK


async def _summaries(args: argparse.Namespace, config: Config) -> int:
    async with _database(config) as db:
        rows = await db.read(
            partial(
                store.list_memories,
                user_id=args.user,
                kind="summary",
                status=None,
                limit=args.limit,
            )
        )
    text = "\n\n".join(
        f"#{m.id} turns {m.source_from}..{m.source_to}"
        f"{' (in the base memory)' if m.incorporated else ''}\n{m.content}"
        for m in rows
    )
    output(args, [m.to_dict() for m in rows], text or "(no summaries yet)")
    return EXIT_OK


async def _stats(args: argparse.Namespace, config: Config) -> int:
    scope = Scope.of(cli_principal(), CategoryPolicy.load(config.api.categories_file))
    async with _database(config) as db:
        data = await db.read(_collect_stats, args.user, config)
        data = {**await db.read(records_views.stats, scope, args.user), **data}
    text = "\n".join(f"{k}: {json.dumps(v)}" for k, v in data.items())
    output(args, data, text)
    return EXIT_OK


def _collect_stats(conn: Any, user_id: str, config: Config) -> dict[str, Any]:
    def count(sql: str, *params: Any) -> int:
        return int(conn.execute(sql, params).fetchone()[0])

    state = embedding_state(conn, config.embedding.model, config.embedding.dim)
    fact_sql = "SELECT COUNT(*) FROM memories WHERE user_id = ? AND kind = 'fact' AND status = ?"
    return {
        "facts_active": count(fact_sql, user_id, "active"),
        "facts_archived": count(fact_sql, user_id, "archived"),
        "summaries_unincorporated": count_unincorporated(conn, user_id),
        "turns_unsummarized": count_unsummarized(conn, user_id),
        "base_memory_words": len(base_memory.get_base(conn, user_id).split()),
        "counters": store.counters(conn),
        "embedding": {
            "stored_model": state.stored_model,
            "stored_dim": state.stored_dim,
            "config": f"{state.model} ({state.dim}-d)",
            "mismatch": state.mismatch,
        },
        "jobs": job_counts(conn),
    }


def job_counts(conn: Any) -> dict[str, dict[str, int]]:
    marks = ",".join("?" * len(enqueue.KINDS))
    rows = conn.execute(
        f"SELECT kind, state, COUNT(*) FROM jobs WHERE kind IN ({marks})"
        " AND state != 'done' GROUP BY kind, state",
        enqueue.KINDS,
    ).fetchall()
    result: dict[str, dict[str, int]] = {}
    for kind, state, n in rows:
        result.setdefault(state, {})[kind] = int(n)
    return result


# -- search --------------------------------------------------------------------------------------
async def _search(args: argparse.Namespace, config: Config) -> int:
    async with open_service(config) as (db, service):
        mode = "vector"
        try:
            hits = [
                (h.memory_id, round(h.similarity, 4), h.content)
                for h in await service.search(args.query, user_id=args.user, k=args.k)
            ]
        except Exception as exc:  # noqa: BLE001 - e.g. the embedder is down: say so, fall back
            print(f"lobug: vector search failed ({exc}); using full-text search", file=sys.stderr)
            hits = []
        if not service.gate.enabled or not hits:
            mode = "fulltext"
            hits = await db.read(_fulltext, args.query, args.user, args.k)
        problem = service.gate.problem
    if problem and not args.json:
        print(f"note: {problem}", file=sys.stderr)
    data = {"mode": mode, "results": [{"id": i, "score": s, "content": c} for i, s, c in hits]}
    text = "\n".join(f"{s:6.3f}  #{i:<6} {c}" for i, s, c in hits) or "(nothing found)"
    output(args, data, text)
    return EXIT_OK


def _fulltext(conn: Any, query: str, user_id: str, k: int) -> list[tuple[int, float, str]]:
    words = re.findall(r"\w+", query.lower())[:16]
    if not words:
        return []
    match = " OR ".join(f'"{w}"' for w in words)
    try:
        rows = conn.execute(
            "SELECT m.id, bm25(memories_fts) AS rank, m.content FROM memories_fts"
            " JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH ?"
            " AND m.user_id = ? AND m.kind = 'fact' AND m.status = 'active'"
            " ORDER BY rank LIMIT ?",
            (match, user_id, k),
        ).fetchall()
    except Exception:  # noqa: BLE001 - no FTS5 in this SQLite
        return []
    return [(r[0], round(-float(r[1]), 4), r[2]) for r in rows]


# -- import --------------------------------------------------------------------------------------
async def _import(args: argparse.Namespace, config: Config) -> int:
    from lobug.cli.memory_import import run_import

    return await run_import(args, config)


# -- reembed -------------------------------------------------------------------------------------
async def _reembed(args: argparse.Namespace, config: Config) -> int:
    embedder = make_embedder(config.embedding, config.ollama.host)
    async with _database(config) as db:
        state = await db.read(embedding_state, embedder.name, embedder.dim)
        tables = await db.read(has_vector_tables)
        if tables and not state.mismatch and state.stored_dim is not None and not args.force:
            output(
                args,
                {"reembedded": False, "model": embedder.name, "dim": embedder.dim},
                f"vectors already match {state.describe()}; nothing to do (--force rebuilds)",
            )
            return EXIT_OK
        bar = ProgressBar("re-embedding")
        try:
            result = await reembed(
                db, embedder, batch_size=config.embedding.batch_size, progress=bar.update
            )
        except EmbeddingUnavailable as exc:
            bar.close()
            print(
                f"lobug: cannot embed with {embedder.name}: {exc}; the vectors are unchanged",
                file=sys.stderr,
            )
            return EXIT_PROBLEM
        finally:
            client = getattr(getattr(embedder, "client", None), "_client", None)
            if client is not None:
                await client.aclose()
        bar.close()
    output(
        args,
        {"reembedded": True, **result.to_dict()},
        f"re-embedded {result.memories} fact(s) and {result.turns} turn(s) with {result.model} "
        f"({result.dim}-d) in {result.seconds:.1f}s; a running daemon switches vector search "
        f"back on within a minute",
    )
    return EXIT_OK
