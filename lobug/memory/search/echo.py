"""The words of the first answers, asked again: one more ranked list over the turns (`echo`).

Pseudo-relevance feedback (Rocchio; RM3 in search engines): the turns that best answer a
question say more about its subject than the question does. "What activities does Melanie
partake in?" finds "I took the kids camping"; the rarer words of the best few turns ("camping",
"pottery") then find the other turns about them, which share no word with the question. The
question's own words stay in the query; the speakers' names stay out (they say who, not what).

    echo = BM25 over the turns of: the question's words + the ECHO_WORDS words of the first
           ECHO_SEEDS turns of the context list with the highest  n(w) / ln(1 + rows(w))
    n(w): how many of those turns hold w; rows(w): how many turns of the store hold it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from lobug.memory.query import Reach
from lobug.memory.search.corpus import TURNS
from lobug.memory.search.fts import (
    MIN_PREFIX_CHARS,
    fold,
    fts_available,
    fts_term,
    query_tokens,
    scan_words,
    word_rows,
)
from lobug.memory.search.lexical import bm25_ranks
from lobug.memory.search.who import speakers
from lobug.storage.sqlite import has_table

ECHO_SEEDS = 3  # the first turns whose words are asked again
ECHO_WORDS = 5  # their words added to the question's


def echo_ranks(conn: Any, question: str, ranked: Sequence[int], k: int, flt: Reach) -> list[int]:
    """Turn ids by BM25 of the question widened with the words of `ranked`'s first turns
    (the context list: best first), best first; empty without FTS5 or first turns."""
    seeds = list(ranked[:ECHO_SEEDS])
    vocab = f"{TURNS.fts}_vocab"
    if not seeds or not fts_available(conn, TURNS.fts) or not has_table(conn, vocab):
        return []
    marks = ",".join("?" * len(seeds))
    texts = [
        str(r[0]) for r in conn.execute(f"SELECT text FROM turns WHERE id IN ({marks})", seeds)
    ]
    names = {fold(w) for name in speakers(conn, flt.user_id) for w in scan_words(name)}
    asked = [t for t in (fold(t) for t in query_tokens(question)) if t not in names]
    seen: Counter[str] = Counter()
    for text in texts:
        seen.update({fold(t) for t in query_tokens(text)} - set(asked) - names)
    weight = {}
    for word, n in seen.items():
        if len(word) >= MIN_PREFIX_CHARS and (rows := word_rows(conn, vocab, word)):
            weight[word] = n / math.log1p(rows)
    words = asked + sorted(weight, key=lambda w: (-weight[w], w))[:ECHO_WORDS]
    if not words:
        return []
    return bm25_ranks(conn, " OR ".join(fts_term(w) for w in words), k, corpus=TURNS, flt=flt)
