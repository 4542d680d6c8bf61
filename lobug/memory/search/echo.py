"""The words of the first answers, asked again: one more ranked list over the turns (`echo`).

Pseudo-relevance feedback (Rocchio; RM3 in search engines): the turns that best answer a
question say more about its subject than the question does. "What activities does Melanie
partake in?" finds "I took the kids camping"; the rarer words of the best few turns ("camping",
"pottery") then find the other turns about them, which share no word with the question. The
question's own words stay in the query; the speakers' names stay out (they say who, not what).

    echo = BM25 over the turns of: the question's words + the ECHO_WORDS words of the first
           ECHO_SEEDS turns of the context list with the highest  n(w) / ln(1 + rows(w))
    n(w): how many of those turns hold w; rows(w): how many turns of the store hold it
    (a word in more than fts.COMMON_WORD_ROWS turns is not added, and the question's common
    words count only beside a rarer one, as in the bm25 list). Nothing added: no list.

Measured on LoCoMo (docs/retrieval-eval.md): +0.9 points recall_any@10 on conversations 1–5,
+1.8 on 6–10; about 2 ms on /v1/query at 10k turns of a tiny vocabulary (bench_api_query).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from lobug.memory.query import Reach
from lobug.memory.search.context import QuestionWords
from lobug.memory.search.corpus import TURNS, Reads
from lobug.memory.search.fts import (
    COMMON_WORD_ROWS,
    MIN_PREFIX_CHARS,
    common_words,
    fold,
    fts_available,
    min_match_query,
    query_tokens,
    word_rows,
)
from lobug.memory.search.lexical import bm25_ranks
from lobug.storage.sqlite import has_table

ECHO_SEEDS = 3  # the first turns whose words are asked again
ECHO_WORDS = 5  # their words added to the question's


def echo_ranks(
    conn: Any,
    question: QuestionWords,
    ranked: Sequence[int],
    k: int,
    flt: Reach,
    reads: Reads | None = None,
) -> list[int]:
    """Turn ids by BM25 of the question widened with the words of `ranked`'s first turns
    (the context list: best first), best first; empty without FTS5 or first turns. `reads`:
    the search's rows read so far (`corpus.Reads`)."""
    seeds = list(ranked[:ECHO_SEEDS])
    vocab = f"{TURNS.fts}_vocab"
    if not seeds or not fts_available(conn, TURNS.fts) or not has_table(conn, vocab):
        return []
    texts = list((reads or Reads()).texts(conn, TURNS, seeds).values())
    names = question.names(conn)
    asked = [fold(t) for t in question.tokens(conn)]
    seen: Counter[str] = Counter()
    for text in texts:
        seen.update({fold(t) for t in query_tokens(text)} - set(asked) - names)
    weight = {}
    for word, n in seen.items():
        rows = word_rows(conn, vocab, word) if len(word) >= MIN_PREFIX_CHARS else 0
        if 0 < rows <= COMMON_WORD_ROWS:  # a common word cannot drive a search (fts)
            weight[word] = n / math.log1p(rows)
    added = sorted(weight, key=lambda w: (-weight[w], w))[:ECHO_WORDS]
    if not added:  # nothing to widen the question with: the bm25 list says the rest
        return []
    common = common_words(conn, TURNS.fts, asked)
    return bm25_ranks(conn, min_match_query(asked + added, 1, common), k, corpus=TURNS, flt=flt)
