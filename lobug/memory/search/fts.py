"""Safe FTS5 MATCH expressions (and the LIKE fallback) built from arbitrary user text."""

from __future__ import annotations

import itertools
import time
import unicodedata
from collections.abc import Collection, Sequence
from typing import Any

from lobug.memory.search.wordforms import forms
from lobug.storage.sqlite import escape_like, has_table, placeholders

# Small on purpose: FTS5's bm25 already discounts common words; these only keep a spoken
# question ("what's the name of the…") from matching every turn through its glue words.
# "user": every stored fact is written about "the user" (seed 001 §9), so the word tells no
# memory from another, and as a query word it made BM25 rank the whole store.
STOPWORDS = frozenset(
    """
    a about after again all also am an and any are as at be been before being but by can could
    did do does doing don for from had has have having he her here hers him his how i if in into
    is it its just me more most my no nor not of off on once only or other our ours out over own
    same she should so some such than that the their theirs them then there these they this
    those through to too under until up very was we were what when where which while who whom
    why will with would you your yours s t d ll m re ve didn doesn isn wasn aren weren won user
    now still currently nowadays
    """.split()
)
MAX_TOKENS = 32
# AND groups in a minimum-should-match expression: 6 words, 2 needed, make 15. Past that FTS5
# spends longer evaluating the groups than ranking an OR and filtering it (measured).
MAX_GROUPS = 15
# A "word" longer than this is a paste or an attack, not a search term; dropping it keeps the
# expression small without changing what an ordinary question matches.
MAX_TOKEN_CHARS = 64
MIN_PREFIX_CHARS = 4
# A word in more rows than this cannot drive a lexical search: ranking every row that holds it
# costs more than the word tells (100k turns from a small vocabulary: 20–40 ms per query). Like
# a search engine's "common terms" cut-off, such a word still counts toward a row's score, but
# only in rows that share an uncommon word with the question too; a question of common words
# only needs all of them. An absolute count, since what it bounds is the work of one query.
COMMON_WORD_ROWS = 1000
WORD_ROWS_TTL_S = 60.0
MEMO_MAX = 2_000  # entries a reader connection's memo holds before it starts over (~0.3 MB)


def query_tokens(text: str, *, max_tokens: int = MAX_TOKENS) -> list[str]:
    """The distinct, case-folded search words of text, stopwords dropped, in order."""
    seen: dict[str, None] = {}
    for token in _scan(text):
        if len(seen) >= max_tokens:
            break
        if token in STOPWORDS or len(token) > MAX_TOKEN_CHARS:
            continue
        seen.setdefault(token, None)
    return list(seen)


def build_fts_query(text: str, *, max_tokens: int = MAX_TOKENS, prefix: bool = True) -> str | None:
    """An FTS5 MATCH expression that ORs the quoted words of text; None when none are left."""
    tokens = query_tokens(text, max_tokens=max_tokens)
    if not tokens:
        return None
    return " OR ".join(fts_term(token, prefix=prefix) for token in tokens)


def min_match_query(
    tokens: Sequence[str], need: int, common: Collection[str] = frozenset()
) -> str | None:
    """An FTS5 expression for rows holding at least `need` of the tokens (Lucene's minimum
    should match), or None when it would need more than MAX_GROUPS groups.

    An OR of every `need`-sized AND group. Each token appears in equally many groups, so
    bm25 — a sum over the expression's phrases — scales every row's score by the same factor
    and orders the rows exactly as for the plain OR of the tokens.

    `common` words (see COMMON_WORD_ROWS) only join groups that hold an uncommon word too;
    when every word is common, a row must hold all of them.
    """
    if not tokens:
        return None
    rare = [t for t in tokens if t not in common]
    if not rare:
        return " AND ".join(fts_term(t) for t in tokens)
    need = max(1, min(need, len(tokens)))
    if need == 1:
        return " OR ".join(fts_term(t) for t in rare)
    groups = [g for g in itertools.combinations(tokens, need) if any(t in rare for t in g)]
    if len(groups) > MAX_GROUPS:
        return None
    return " OR ".join("(" + " AND ".join(fts_term(t) for t in g) + ")" for g in groups)


def common_words(conn: Any, table: str, tokens: Sequence[str]) -> set[str]:
    """The tokens found in more than COMMON_WORD_ROWS rows of the FTS `table` (counting every
    word a prefix token matches); none without the table's fts5vocab companion."""
    vocab = f"{table}_vocab"
    if not tokens or not has_table(conn, vocab):
        return set()
    return {t for t in tokens if word_rows(conn, vocab, t) > COMMON_WORD_ROWS}


def found_words(conn: Any, table: str, tokens: Sequence[str]) -> list[str]:
    """The tokens some row of the FTS `table` holds (every token without its fts5vocab
    companion). A word no row holds ranks nothing, and as the rarest word of the question it
    would make `min_match_query` ask for it in every group: "Where was the kayak in March
    2025?" found nothing at all in a store that never says "march"."""
    vocab = f"{table}_vocab"
    if not tokens or not has_table(conn, vocab):
        return list(tokens)
    return [t for t in tokens if word_rows(conn, vocab, t) > 0]


def word_rows(conn: Any, vocab: str, token: str) -> int:
    """Rows of the FTS table behind `vocab` holding the token (or, for a prefix token, any
    word it matches). A daemon reader connection remembers the count for WORD_ROWS_TTL_S:
    counts move slowly, and asking fts5vocab each time cost a tenth of a turn's search. A word
    no row holds is asked again each time (`found_words` leaves it out of the match)."""
    memo = getattr(conn, "memo", None)
    key = ("word_rows", vocab, token)
    now = time.monotonic()
    if (
        memo is not None
        and (known := memo.get(key)) is not None
        and now - known[0] < WORD_ROWS_TTL_S
    ):
        return int(known[1])
    if _stems(token):
        root = stem(token)
        row = conn.execute(
            f"SELECT sum(doc) FROM {vocab} WHERE term >= ? AND term < ?",
            (root, root + "\U0010ffff"),
        ).fetchone()
    else:
        row = conn.execute(f"SELECT doc FROM {vocab} WHERE term = ?", (token,)).fetchone()
    count = int(row[0] or 0) if row is not None else 0
    if others := forms(token)[1:]:  # rows holding any form: at most the sum of the counts
        marks = placeholders(others)
        row = conn.execute(
            f"SELECT sum(doc) FROM {vocab} WHERE term IN ({marks})", others
        ).fetchone()
        count += int(row[0] or 0) if row is not None else 0
    if memo is not None and count > 0:  # a word no row held may be written the next moment
        if len(memo) > MEMO_MAX:
            memo.clear()
        memo[key] = (now, count)
    return count


def among(
    conn: Any,
    table: str,
    match: str,
    rows: Collection[int],
    k: int | None = None,
    *,
    newest_first: bool = False,
) -> list[tuple[int, float]]:
    """(rowid, −bm25) of the rows of `rows` (ids) that `match` holds, best first, the first
    `k` (None: all, unordered); `newest_first`: ties by the higher rowid. The match is read
    once and its rows kept by id (`+rowid IN`): a bare `rowid IN` has FTS5 evaluate the query
    once per id, each time with bm25's statistics over the whole index (10k turns, 30 ids:
    5.7 ms, here 0.7; 100 ids: 18 ms, here 0.8; the same scores)."""
    if not rows:
        return []
    sql = (
        f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ?"
        f" AND +rowid IN ({placeholders(rows)})"
    )
    params: tuple[Any, ...] = (match, *rows)
    if k is not None:
        sql += f" ORDER BY bm25({table}){', rowid DESC' if newest_first else ''} LIMIT ?"
        params += (k,)
    return [(int(i), float(s)) for i, s in conn.execute(sql, params)]


def fts_term(token: str, *, prefix: bool = True) -> str:
    """One query word as an FTS5 string (with `*` for a prefix match on 4+ letters)."""
    # Every token becomes an FTS5 string, so AND/OR/NOT/NEAR, `*`, `^`, `:` and column names
    # in the user's text are words, never syntax. Tokens never contain '"', but doubling keeps
    # the quoting correct should the scanner ever change.
    # "win" also finds "won" and "winning", each as the whole word (wordforms), but for the
    # forms its own prefix finds ("swim"* finds "swims" and "swimming").
    root = stem(token) if prefix and _stems(token) else None
    others = [f for f in forms(token)[1:] if root is None or not f.startswith(root)]
    if not others:
        return _term(token, prefix=prefix)
    return "(" + " OR ".join([_term(token, prefix=prefix), *map(_term, others)]) + ")"


def _term(word: str, *, prefix: bool = False) -> str:
    if prefix and _stems(word):
        return '"' + stem(word).replace('"', '""') + '"*'
    return '"' + word.replace('"', '""') + '"'


def token_matches(token: str, word: str, *, prefix: bool = True) -> bool:
    """Whether `word` (from a document) matches query `token` the way build_fts_query does."""
    if word == token or (prefix and _stems(token) and word.startswith(stem(token))):
        return True
    return word in forms(token)[1:]


def _stems(token: str) -> bool:
    # The tables use unicode61 without a stemmer; a prefix query on words of 4+ letters is a
    # cheap stand-in ("lesson" finds "lessons", "live" finds "lives"), shorter ones stay exact.
    return len(token) >= MIN_PREFIX_CHARS


# An inflection the prefix drops first, so "adoption" finds "adopted" and "camping" "camp":
# only where at least MIN_PREFIX_CHARS letters remain ("games" keeps "game"); "-er" and "-ly"
# are left alone ("career" is not "care", "family" not "familiar").
SUFFIXES = ("ings", "ing", "ions", "ion", "ied", "ies", "ed", "es", "s")


def stem(token: str) -> str:
    """What a prefix query on `token` looks for: the token without its inflection."""
    for suffix in SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= MIN_PREFIX_CHARS:
            return token[: -len(suffix)]
    return token


def like_patterns(text: str, *, max_tokens: int = 8) -> list[str]:
    """One LIKE pattern per search word (ORed by the caller) for the no-FTS5 fallback."""
    return ["%" + escape_like(token) + "%" for token in query_tokens(text, max_tokens=max_tokens)]


_FTS5_COMPILED: dict[int, bool] = {}  # per SQLite library: asked on every search


def fts_available(conn: Any, table: str = "memories_fts") -> bool:
    """True when this SQLite has FTS5 and the migration created `table`."""
    library = id(type(conn))
    if library not in _FTS5_COMPILED:
        options = {row[0] for row in conn.execute("PRAGMA compile_options")}
        _FTS5_COMPILED[library] = "ENABLE_FTS5" in options
    if not _FTS5_COMPILED[library]:
        return False
    return has_table(conn, table)


def scan_words(text: str) -> list[str]:
    """All words of text as FTS5's unicode61 (remove_diacritics 2) would index them."""
    return [fold(word) for word in _scan(text, limit=None)]


def fold(word: str) -> str:
    """A word without diacritics, as `remove_diacritics 2` indexes it (café → cafe)."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _scan(text: str, limit: int | None = MAX_TOKENS * 16) -> list[str]:
    """Split text into runs of letters, digits and combining marks (what unicode61 indexes).

    Marks stay inside a word so scripts such as Devanagari are not cut mid-word; everything
    else (punctuation, symbols, emoji, controls, NUL) separates words.
    """
    tokens: list[str] = []
    current: list[str] = []
    for char in text:
        if unicodedata.category(char)[0] in "LNM":
            current.append(char)
            continue
        if current:
            tokens.append("".join(current).casefold())
            current = []
            # A huge input cannot make us build a huge list: far more words than we keep.
            if limit is not None and len(tokens) >= limit:
                return tokens
    if current:
        tokens.append("".join(current).casefold())
    return tokens
