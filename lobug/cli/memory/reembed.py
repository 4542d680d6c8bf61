"""`lobug memory reembed`: rebuild both vector tables with the configured embedder."""

from __future__ import annotations

import argparse
import sys

from lobug.cli.main import EXIT_OK, EXIT_PROBLEM
from lobug.cli.memory.session import output
from lobug.cli.progress import ProgressBar
from lobug.config import Config
from lobug.llm.embedders import EmbeddingUnavailable
from lobug.memory.vectors.reembed import reembed
from lobug.parts import parts
from lobug.storage.vectors import embedding_state, has_vector_tables


async def run_reembed(args: argparse.Namespace, config: Config) -> int:
    async with parts(config, memory=False) as got:
        db, embedder = got.db, got.embedder
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
        bar.close()
    output(
        args,
        {"reembedded": True, **result.to_dict()},
        f"re-embedded {result.memories} fact(s) and {result.turns} turn(s) with {result.model} "
        f"({result.dim}-d) in {result.seconds:.1f}s; a running daemon switches vector search "
        f"back on within a minute",
    )
    return EXIT_OK
