"""What can be searched (memories, turns) and who may see what: the filter every list applies."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Corpus:
    """Where one kind of searchable row lives: base table, FTS table, vector table."""

    table: str
    text: str
    fts: str
    vectors: str
    vec_key: str
    lists: tuple[str, ...]  # the ranked lists hybrid_search fuses by default


MEMORIES = Corpus(
    "memories",
    "content",
    "memories_fts",
    "memory_vectors",
    "memory_id",
    ("vector", "bm25", "entity"),
)
# Turns have no entity links: their entity list is a name match in the text, which BM25 already
# counts, so fusing it too double-weights lexical agreement (measured: docs/retrieval-eval.md).
TURNS = Corpus("turns", "text", "turns_fts", "turn_vectors", "turn_id", ("vector", "bm25"))


@dataclass(frozen=True)
class SearchFilter:
    user_id: str = "default"
    statuses: tuple[str, ...] = ("active",)  # memories only
    kinds: tuple[str, ...] | None = None  # memories only
    stores: tuple[str, ...] | None = None  # memories only: the caller's trust level
    categories: tuple[str, ...] | None = None  # memories only: the agent's allowlist
    roles: tuple[str, ...] | None = None  # turns only
    exclude_session: str | None = None


def where_clause(corpus: Corpus, flt: SearchFilter) -> tuple[str, list[Any]]:
    """SQL conditions on the base table (alias d) for the filter."""
    clauses, params = ["d.user_id = ?"], [flt.user_id]

    def one_of(column: str, values: Sequence[str] | None) -> None:
        if values is not None:
            clauses.append(f"d.{column} IN ({','.join('?' * len(values))})" if values else "0")
            params.extend(values)

    if corpus.table == "memories":
        one_of("status", flt.statuses)
        one_of("kind", flt.kinds)
        one_of("store", flt.stores)
        one_of("category", flt.categories)
    else:
        one_of("role", flt.roles)
    if flt.exclude_session is not None:
        clauses.append("(d.session_id IS NULL OR d.session_id != ?)")
        params.append(flt.exclude_session)
    return " AND ".join(clauses), params
