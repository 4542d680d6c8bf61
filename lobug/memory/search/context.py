"""Turns scored with their context: one more ranked list over the turns (`context`).

In a conversation the answer is often not in the turn that names the subject: "What genre is
Joanna's first screenplay?" is answered by "Thanks, Nate! It's a mix of drama and romance!",
said right after the question about the screenplay. A turn's own words and meaning are only
half of what it says; the turns beside it in its session say the rest.

So the turn list is also ranked by a score that carries the context:

    own(t)     = (1 − m)·bm25(t)/bm25_max + m·near(t)      m = 0.5: equal shares
    context(t) = own(t) + γ·own(the turn it answers)    when that turn, of the same session,
                                                   asks something (holds a "?"): t is its reply
                                                   (linked when stored: `turns.reply_to`, m015)

bm25(t) is FTS5's score of the question's words (any one of them, the speakers' names left out:
they say who, not what) in t and bm25_max the best of the question; near(t) is the turn's cosine
similarity to the question rescaled over the candidates (0 at the weakest, 1 at the best), so
both terms are on one scale whatever the embedder's similarity range. The candidates are the
deep word and meaning lists and the turns after their best rows, so a reply that shares nothing
with the question still enters.
The stored and shown text of every turn stays as it was said.

The list gives only an order, and rank fusion keeps only that; so the first results are
re-scored with the same score by its size (`context_scores`: words counted when a turn
shares two of the question's, the cosine similarity itself; `runner.lead`): a turn that
matches by far comes first, not one that every list ranks a hair higher.

Measured on LoCoMo (docs/retrieval-eval.md): crediting every neighbour both ways helped real
conversations but pushed self-contained statements down in the synthetic eval; crediting only
the reply to a question kept most of the gain at a smaller cost.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from lobug.memory.query import Reach
from lobug.memory.search import who
from lobug.memory.search.asking import statements
from lobug.memory.search.corpus import TURNS, Reads, where_clause
from lobug.memory.search.fts import (
    among,
    common_words,
    fold,
    found_words,
    fts_available,
    min_match_query,
    query_tokens,
)
from lobug.memory.search.lexical import matcher

# The first rows: of each deep list, those whose replies join the candidates
# (`context_ranks`); of the results, those the lead re-scores (`ScoringWeights.context_top`).
FIRST = 30


@dataclass(frozen=True)
class ContextWeights:
    meaning: float = 0.5  # its share of a turn's own score, the words' the rest: equal shares
    asked: float = 0.8  # γ: what the question a turn answers adds
    depth: int = 200  # candidates per list before replies (a bound of work)


WEIGHTS = ContextWeights()
PAIRED_WORDS = 6  # a longer question: one shared word of it counts (`_shared_words`)


def context_ranks(
    conn: Any,
    text: str,
    nearest: Sequence[tuple[int, float]],
    k: int,
    *,
    flt: Reach | None = None,
    outer: Reach | None = None,
    weights: ContextWeights = WEIGHTS,
    question: QuestionWords | None = None,
    reads: Reads | None = None,
) -> list[int]:
    """Turn ids by their score with context (see the module), best first. `nearest`: the
    caller's KNN of the query over the same turns, (id, cosine distance) nearest first, at
    least `weights.depth` deep when there are that many (the search runs it once for this list
    and the vector list); empty without vectors. `outer`: the reach `flt` narrows (to a
    speaker, a period): the question a reply answers counts by its words whoever asked it —
    "Can you give me the recipe?" credits the other person's "Sure thing!". `question`: the
    search's `QuestionWords` for `text`, so its lists and lead ask FTS5 once. `reads`: the
    search's rows read so far (`corpus.Reads`)."""
    flt = flt or Reach()
    question = question or QuestionWords(flt.user_id, text, reads=reads)
    reads = question.reads
    asked = question.best(conn, weights.depth, outer) if outer is not None else {}
    words = question.best(conn, weights.depth, flt)
    near = {i: 1.0 - d for i, d in nearest[: weights.depth]}
    if not words and not near:
        return []
    seeds = sorted(words, key=lambda i: -words[i])[:FIRST]
    seeds += sorted(near, key=lambda i: -near[i])[:FIRST]
    listed = set(words) | set(near)
    candidates = listed | reads.replies(conn, flt, seeds)
    answers = reads.answers(conn, candidates)
    # A row outside both deep lists scores 0 on its own (it is below every listed one).
    top = max(words.values(), default=0.0)
    lo = min(near.values(), default=0.0)
    span = max(near.values(), default=0.0) - lo

    def own(i: int) -> float:
        b = min(1.0, words.get(i, asked.get(i, 0.0)) / top) if top > 0 else 0.0
        v = (near[i] - lo) / span if span > 0 and i in near else 0.0
        return (1.0 - weights.meaning) * b + weights.meaning * v

    scored = {}
    for i in candidates:
        if (asked_by := answers.get(i)) is not None:
            scored[i] = own(i) + weights.asked * own(asked_by)
        elif i in listed:  # a reply joins only as the reply to a question
            scored[i] = own(i)
    return sorted(scored, key=lambda i: (-scored[i], -i))[:k]


def context_scores(
    conn: Any,
    user_id: str,
    text: str,
    ids: Collection[int],
    similarity: Callable[[int], float | None],
    weights: ContextWeights = WEIGHTS,
    question: QuestionWords | None = None,
    reads: Reads | None = None,
) -> dict[int, float]:
    """The context score of each of the turns `ids` (see the module) by its size: bm25 over
    the best of these turns and the questions they answer, the cosine similarity itself
    (`similarity`: a turn id's, None without a vector; rescaled over a few turns, a hair's
    difference would count fully). What the re-score adds to the first results
    (`runner.lead`): RRF keeps only each list's order, so "the best by far" and "the best by
    a hair" rank alike there."""
    if not ids:
        return {}
    question = question or QuestionWords(user_id, text, reads=reads)
    reads = question.reads
    replies = reads.answers(conn, ids)
    scored = set(ids) | set(replies.values())
    asked, said = _shared_words(conn, question, scored, reads)
    top = max(asked.values(), default=0.0)

    def own(i: int, words: dict[int, float]) -> float:
        b = words.get(i, 0.0) / top if top > 0 else 0.0
        return (1.0 - weights.meaning) * b + weights.meaning * (similarity(i) or 0.0)

    # A turn by what it says, the question a reply answers by what it asks (`asking`).
    return {
        i: own(i, said) + (weights.asked * own(replies[i], asked) if i in replies else 0.0)
        for i in ids
    }


class QuestionWords:
    """A question's words over the turns, worked out once per search: the context lists (of
    the whole log, of a speaker's turns, of a period's) and the lead (`context_scores`)
    all ask FTS5 the same question, up to six times a query before; and the speakers of the
    user's turns, read once for them and for the `who` list (`speakers` may pass the caller's
    read).

    The words are the question's, any one of them (a word in very many turns only beside a
    rarer one: fts.min_match_query), without the names of the conversation's speakers: a
    speaker's name says who (the `who` list), not what, and as a rare word it would rank every
    turn that addresses them above the one that answers. Within the period the question names
    (the `when` list) they are also without the words naming it (`said_when`,
    `when.period_words`: "March", "2025"), which say when."""

    def __init__(
        self,
        user_id: str,
        text: str,
        speakers: Sequence[str] | None = None,
        said_when: Collection[str] = (),
        reads: Reads | None = None,
    ) -> None:
        self.user_id = user_id
        self.reads = reads or Reads()  # the search's (`corpus.Reads`): each turn's view once
        self.text = text
        self._when = frozenset(said_when)  # the words naming the period asked about
        self._speakers = None if speakers is None else list(speakers)  # the caller's read
        self._names: set[str] | None = None
        self._tokens: list[str] | None = None
        self._match: dict[bool, str | None] = {}  # within the period named or not
        # the reach's filter -> (rowid -> −bm25, best first; how deep it was read)
        self._best: dict[tuple[str, tuple[Any, ...]], tuple[dict[int, float], int]] = {}
        self._known: dict[int, float] = {}  # −bm25 of every turn read so far, whatever the reach

    def speakers(self, conn: Any) -> list[str]:
        """The named speakers of the user's turns (`who.speakers`), read once."""
        if self._speakers is None:
            self._speakers = who.speakers(conn, self.user_id)
        return self._speakers

    def names(self, conn: Any) -> set[str]:
        """The folded words of the speakers' names (`who.name_words`), worked out once: they
        say who, not what (the question's words)."""
        if self._names is None:
            self._names = who.name_words(self.speakers(conn))
        return self._names

    def named_speaker(self, conn: Any) -> str | None:
        """The speaker the question names, if one (`who.named_speaker`)."""
        return who.named_speaker(self.speakers(conn), self.text)

    def tokens(self, conn: Any) -> list[str]:
        if self._tokens is None:
            names = self.names(conn)
            self._tokens = [t for t in query_tokens(self.text) if fold(t) not in names]
        return self._tokens

    def match(self, conn: Any, within: bool = False) -> str | None:
        """The FTS5 query; None without words or without the index. `within`: among the turns
        of the period the question names, without the words naming it (`said_when`): every
        turn there was said then, and a month said of something else ("we march in the
        parade") would be the rarest word, asked for in every group."""
        tokens = self.tokens(conn)
        if within:
            tokens = [t for t in tokens if fold(t) not in self._when]
        if not tokens or not fts_available(conn, TURNS.fts):
            return None
        if within not in self._match:
            found = found_words(conn, TURNS.fts, tokens)
            self._match[within] = min_match_query(found, 1, common_words(conn, TURNS.fts, found))
        return self._match[within]

    def best(self, conn: Any, depth: int, flt: Reach) -> dict[int, float]:
        """The `depth` best turns `flt` sees holding any of the words, by −bm25 (higher
        better).

        A narrow filter (a period, a speaker, a person, a session: `Reads.every`, its rows
        read first) ranks among its rows (`fts.among`); a period or a speaker with more rows has
        its filter inside the FTS5 query (`_within`: the index read first, each match's row
        looked up by rowid). Either way the best of their turns are found however many turns
        of other periods, speakers or people hold the words too. Any other reach ranks
        within its user when the store holds turns of another user (`Reads.shared`; `_own`:
        the user's filter inside the FTS5 query, the rest of the reach checked after), so
        other users' turns cannot crowd the user's out (issue 43's growth test); in a
        store of one user it takes the `depth` best of every turn and keeps those it sees
        (`_narrowed`): joining every match to its row cost more than the ranking at 10k
        turns (bench_api_query)."""
        match = self.match(conn, within=flt.said_in is not None)
        if match is None:
            return {}
        where, params = where_clause(TURNS, flt)
        key = (where, tuple(params))
        found, read = self._best.get(key, ({}, 0))
        if depth > read:
            if (every := self.reads.every(conn, TURNS, flt)) is not None:
                found = dict(among(conn, TURNS.fts, match, every, depth))
            elif flt.said_in is not None or flt.speaker is not None:
                found = _within(conn, match, depth, where, params)
            elif self.reads.shared(conn, TURNS, self.user_id):
                found = _own(conn, self.reads, match, depth, flt)
            else:
                found = _narrowed(conn, self.reads, match, depth, flt)
            self._best[key] = found, depth
            if flt.said_in is None:  # scored by the question's own match (`scores`)
                self._known.update(found)
        return dict(itertools.islice(found.items(), depth))

    def scores(self, conn: Any, ids: Collection[int]) -> dict[int, float]:
        """−bm25 of the words in each of the turns `ids` that holds any: from `best` where it
        has them, one FTS5 query within the rest (`fts.among`)."""
        match = self.match(conn)
        if match is None or not ids:
            return {}
        found = {i: self._known[i] for i in ids if i in self._known}
        found.update(among(conn, TURNS.fts, match, [i for i in ids if i not in self._known]))
        return found


def _within(
    conn: Any, match: str, depth: int, where: str, params: Sequence[Any]
) -> dict[int, float]:
    rows = conn.execute(
        f"SELECT {TURNS.fts}.rowid, -bm25({TURNS.fts}) FROM {TURNS.fts}"
        f" CROSS JOIN turns d ON d.id = {TURNS.fts}.rowid"
        f" WHERE {TURNS.fts} MATCH ? AND {where} ORDER BY bm25({TURNS.fts}) LIMIT ?",
        (match, *params, depth),
    ).fetchall()
    return {int(r[0]): float(r[1]) for r in rows}


def _narrowed(conn: Any, reads: Reads, match: str, depth: int, flt: Reach) -> dict[int, float]:
    rows = conn.execute(
        f"SELECT rowid, -bm25({TURNS.fts}) FROM {TURNS.fts} WHERE {TURNS.fts} MATCH ?"
        f" ORDER BY bm25({TURNS.fts}) LIMIT ?",
        (match, depth),
    ).fetchall()
    return _seen(conn, reads, flt, {int(r[0]): float(r[1]) for r in rows})


def _own(conn: Any, reads: Reads, match: str, depth: int, flt: Reach) -> dict[int, float]:
    """The `depth` best of the user's turns (`_within` the user alone), then those the whole
    reach sees, as `_narrowed` keeps them."""
    found = _within(conn, match, depth, "d.user_id = ?", [flt.user_id])
    return _seen(conn, reads, flt, found)


def _seen(conn: Any, reads: Reads, flt: Reach, found: dict[int, float]) -> dict[int, float]:
    """The entries of `found` (best first) whose turns `flt` sees."""
    visible = reads.visible(conn, TURNS, flt, found)
    return {i: score for i, score in found.items() if i in visible}


def _shared_words(
    conn: Any, question: QuestionWords, ids: Collection[int], reads: Reads
) -> tuple[dict[int, float], dict[int, float]]:
    """−bm25 of the question's words in each of the turns `ids` that holds two of them (the
    one word of a one-word question): as the `bm25` list asks, one shared word ("big",
    "went") tells little by its size. Scored as any one of the words, the words counted in
    Python (a query of word pairs costs three times as much in FTS5's bm25 statistics).

    Twice: with the words anywhere in the turn (what it asks counts: the question a reply
    answers), and with the words it states (`asking.statements`: "What books do you enjoy?"
    says nothing of books)."""
    tokens = question.tokens(conn)
    scores = question.scores(conn, ids)
    texts = reads.texts(conn, TURNS, scores) if scores else {}
    count = matcher([fold(t) for t in tokens])
    paired = 1 < len(tokens) <= PAIRED_WORDS  # else one shared word is enough

    def shared(words_of: Callable[[str], str]) -> dict[int, float]:
        held = {i: count(words_of(texts.get(i, ""))) for i in scores}
        if not paired:
            return {i: score for i, score in scores.items() if held[i] >= 1}
        # As the query of every pair of the words would score it: each word once per pair held.
        return {i: (held[i] - 1) * score for i, score in scores.items() if held[i] >= 2}

    return (shared(str) if paired else scores), shared(statements)
