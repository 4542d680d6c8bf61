"""Lexical ranked lists: FTS5 BM25, or LIKE where this SQLite has no FTS5 (seed 000)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from lobug.memory.query import Reach
from lobug.memory.search.corpus import MEMORIES, Corpus, Reads, where_clause
from lobug.memory.search.fts import (
    MIN_PREFIX_CHARS,
    among,
    common_words,
    fold,
    found_words,
    fts_available,
    like_patterns,
    min_match_query,
    query_tokens,
    scan_words,
    stem,
    token_matches,
)
from lobug.memory.search.wordforms import forms
from lobug.storage.vector_index import wider

MAX_FETCH = 4096


def bm25_ranks(
    conn: Any,
    fts_query: str | None,
    k: int,
    *,
    corpus: Corpus = MEMORIES,
    flt: Reach | None = None,
    reads: Reads | None = None,
) -> list[int]:
    """Ids by FTS5 bm25 for a query from `build_fts_query` (None → no list), newest first
    among equals.

    Ranked in the FTS index alone, then filtered: joining every match to its row to test the
    filter costs more than the ranking when a query word is common. Like the vector list, the
    net widens while invisible rows (archived, other stores) crowd out the rest
    (`vector_index.wider`). A narrow filter (`Reads.every`: a person, a session, a period)
    ranks among its rows, read first, in one query (`fts.among`): filtering the best of all,
    a person in a tenth of the turns widened four times, each time ranking every match. When
    the table holds another user's rows, ranked within the user (`Reads.shared`: the user's
    filter inside the FTS5 query, each match's row looked up by rowid), so another user's rows
    never crowd this user's out, however many there are (issue 43's growth test).
    """
    if not fts_query:
        return []
    flt = flt or Reach()
    reads = reads or Reads()
    fts = corpus.fts
    if (every := reads.every(conn, corpus, flt)) is not None:
        return [i for i, _ in among(conn, fts, fts_query, every, k, newest_first=True)]
    if reads.shared(conn, corpus, flt.user_id):
        rank = (
            f"SELECT {fts}.rowid FROM {fts} CROSS JOIN {corpus.table} d ON d.id = {fts}.rowid"
            f" WHERE {fts} MATCH ? AND d.user_id = ?"
        )
        params: tuple[Any, ...] = (fts_query, flt.user_id)
    else:
        rank, params = f"SELECT rowid FROM {fts} WHERE {fts} MATCH ?", (fts_query,)
    fetch = min(MAX_FETCH, 2 * k)
    while True:
        rows = conn.execute(
            f"{rank} ORDER BY bm25({fts}), {fts}.rowid DESC LIMIT ?", (*params, fetch)
        ).fetchall()
        ids = [int(r[0]) for r in rows]
        visible = reads.visible(conn, corpus, flt, ids)
        found = [i for i in ids if i in visible]
        if len(found) >= k or len(ids) < fetch or fetch >= MAX_FETCH:
            return found[:k]
        fetch = min(MAX_FETCH, fetch + wider(k, len(found), fetch))


def text_ranks(
    conn: Any,
    text: str,
    k: int,
    *,
    corpus: Corpus = MEMORIES,
    flt: Reach | None = None,
    min_words: int = 1,
    reads: Reads | None = None,
) -> list[int]:
    """BM25 when FTS5 is there; otherwise LIKE (seed 000), most matched words first.

    min_words: a hit must contain at least this many of the query's words (all of them if the
    query has fewer), like Lucene's minimum-should-match. In fusion a row sharing only "kids"
    with "which of the kids can't have nuts?" is noise the vector list has already judged,
    and RRF would reward it merely for appearing in a second list.
    """
    reads = reads or Reads()
    fts = fts_available(conn, corpus.fts)
    tokens = query_tokens(text)
    need = min(max(1, min_words), len(tokens))
    if fts:  # the words some row holds: the rest cannot be shared
        tokens = found_words(conn, corpus.fts, tokens)
        if len(tokens) < need:
            return []
    fetch = k if need <= 1 else min(MAX_FETCH, k * 4)
    common = common_words(conn, corpus.fts, tokens) if fts else set()
    if fts and (expression := min_match_query(tokens, need, common)) is not None:
        # The index itself keeps only rows with enough of the words: no row is ranked, joined
        # or scanned in Python only to be dropped (the common case; long queries fall back).
        return bm25_ranks(conn, expression, k, corpus=corpus, flt=flt, reads=reads)
    if fts:
        ids = bm25_ranks(
            conn, min_match_query(tokens, 1, common), fetch, corpus=corpus, flt=flt, reads=reads
        )
    else:
        ids = _like_ranks(conn, text, fetch, corpus, flt or Reach())
    if need > 1 and ids:
        matched = matcher([fold(t) for t in tokens])
        texts = reads.texts(conn, corpus, ids)
        ids = [i for i in ids if matched(texts.get(i, "")) >= need]
    return ids[:k]


def matcher(tokens: Sequence[str]) -> Callable[[str], int]:
    """A function counting how many of the query's words a text holds, as FTS5 matches them
    (whole word, or prefix for 4+ letters). ASCII text — nearly every memory — is searched
    with one compiled pattern per word; anything else goes through the exact scanner."""
    ascii_patterns = [_pattern(t) for t in tokens if t.isascii()]

    def count(text: str) -> int:
        if text.isascii() and len(ascii_patterns) == len(tokens):
            low = text.lower()
            return sum(1 for pattern in ascii_patterns if pattern.search(low))
        words = set(scan_words(text))
        return sum(1 for t in tokens if any(token_matches(t, w) for w in words))

    return count


def _pattern(token: str) -> re.Pattern[str]:
    """The token as build_fts_query matches it: a prefix for 4+ letters, else the whole word,
    and its other forms (`wordforms`) as whole words."""
    own = re.escape(stem(token)) + ("" if len(token) >= MIN_PREFIX_CHARS else r"(?![a-z0-9])")
    others = "".join(f"|{re.escape(f)}(?![a-z0-9])" for f in forms(token)[1:])
    return re.compile(rf"(?<![a-z0-9])(?:{own}{others})")


def _like_ranks(conn: Any, text: str, k: int, corpus: Corpus, flt: Reach) -> list[int]:
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
