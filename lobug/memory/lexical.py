"""Lexical ranked lists: FTS5 BM25, or LIKE where this SQLite has no FTS5 (seed 000)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lobug.memory.corpus import MEMORIES, Corpus, SearchFilter, where_clause
from lobug.memory.fts_query import (
    build_fts_query,
    fold,
    fts_available,
    like_patterns,
    query_tokens,
    scan_words,
    token_matches,
)

MAX_FETCH = 4096


def bm25_ranks(
    conn: Any,
    fts_query: str | None,
    k: int,
    *,
    corpus: Corpus = MEMORIES,
    flt: SearchFilter | None = None,
) -> list[int]:
    """Ids by FTS5 bm25 for a query from `build_fts_query` (None → no list)."""
    if not fts_query:
        return []
    where, params = where_clause(corpus, flt or SearchFilter())
    rows = conn.execute(
        f"SELECT d.id FROM {corpus.fts} f JOIN {corpus.table} d ON d.id = f.rowid"
        f" WHERE {corpus.fts} MATCH ? AND {where} ORDER BY bm25({corpus.fts}), d.id DESC"
        f" LIMIT ?",
        (fts_query, *params, k),
    ).fetchall()
    return [int(r[0]) for r in rows]


def text_ranks(
    conn: Any,
    text: str,
    k: int,
    *,
    corpus: Corpus = MEMORIES,
    flt: SearchFilter | None = None,
    min_words: int = 1,
) -> list[int]:
    """BM25 when FTS5 is there; otherwise LIKE (seed 000), most matched words first.

    min_words: a hit must contain at least this many of the query's words (all of them if the
    query has fewer), like Lucene's minimum-should-match. In fusion a row sharing only "kids"
    with "which of the kids can't have nuts?" is noise the vector list has already judged,
    and RRF would reward it merely for appearing in a second list.
    """
    tokens = query_tokens(text)
    need = min(max(1, min_words), len(tokens))
    fetch = k if need <= 1 else min(MAX_FETCH, k * 4)
    if fts_available(conn, corpus.fts):
        ids = bm25_ranks(conn, build_fts_query(text), fetch, corpus=corpus, flt=flt)
    else:
        ids = _like_ranks(conn, text, fetch, corpus, flt or SearchFilter())
    if need > 1 and ids:
        folded = [fold(t) for t in tokens]
        texts = _texts(conn, corpus, ids)
        ids = [i for i in ids if _matched(folded, texts.get(i, "")) >= need]
    return ids[:k]


def _matched(tokens: Sequence[str], text: str) -> int:
    words = set(scan_words(text))
    return sum(1 for t in tokens if any(token_matches(t, w) for w in words))


def _texts(conn: Any, corpus: Corpus, ids: Sequence[int]) -> dict[int, str]:
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        f"SELECT id, {corpus.text} FROM {corpus.table} WHERE id IN ({marks})", tuple(ids)
    )
    return {int(r[0]): str(r[1]) for r in rows}


def _like_ranks(conn: Any, text: str, k: int, corpus: Corpus, flt: SearchFilter) -> list[int]:
    patterns = like_patterns(text)
    if not patterns:
        return []
    where, params = where_clause(corpus, flt)
    hits = " + ".join(f"(d.{corpus.text} LIKE ? ESCAPE '\\')" for _ in patterns)
    rows = conn.execute(
        f"SELECT d.id, {hits} AS n FROM {corpus.table} d WHERE {where} AND n > 0"
        f" ORDER BY n DESC, d.id DESC LIMIT ?",
        (*patterns, *params, k),
    ).fetchall()
    return [int(r[0]) for r in rows]
