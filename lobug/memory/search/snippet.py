"""A past exchange as the prompt shows it: the sentences that match the question, dated.

A turn found by the prompt's search is shown as "On 8 May 2023 the user said: …" ("Today",
"Yesterday" for the last two days) with only its sentences that share a word of the question
(the search's own word matching: whole word, prefix or another form of it), in the order said;
a turn that matched by meaning or as the reply to a question shares none, and shows its first
statements. A sentence that asks ("What did you cook?") brings the one after it, the answer;
so does one the next goes on about ("My sister visits. She is allergic to peanuts.":
`GOES_ON`). Longer than `MAX_TOKENS`, it is cut at a word. Every memory token costs the user
~33 ms of prefill on a Pi (issue 39): a whole turn of small talk would spend them on nothing.

Who said it is told in the prompt's own voice: the model is "you", the person it talks to
"the user", as in the extracted facts ("The user drinks green tea"). A summary keeps its
matching sentences, undated (it spans many days).
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from lobug.memory.query import cut_to_tokens, tokens_of
from lobug.memory.search.asking import SENTENCE
from lobug.memory.search.fts import fold, query_tokens
from lobug.memory.search.lexical import matcher

# A sentence that goes on about the one before ("My sister visits. She is allergic to
# peanuts."): shown with it when that one matches.
GOES_ON = re.compile(r"(?:she|he|it|they|that|this|so|but|and|also)\b", re.I)
MAX_TOKENS = 40  # of one snippet's words; the prompt's budget bounds them all
SAID_BY = {"user": "the user said", "assistant": "you said"}


def said_on(ts: float, role: str, now: float | None = None, zone: tzinfo | None = None) -> str:
    """ "On 8 May 2023 the user said:", or "Today …", "Yesterday …" when it was said on
    `now`'s day or the day before (the household's calendar: `zone` None is local; fewer
    tokens, and no date for the model to work out)."""
    day = datetime.fromtimestamp(ts, zone).date()
    who = SAID_BY.get(role, "the user said")
    if now is not None:
        back = (datetime.fromtimestamp(now, zone).date() - day).days
        if back in (0, 1):
            return f"{'Today' if back == 0 else 'Yesterday'} {who}:"
    return f"On {day.day} {day:%B %Y} {who}:"


def matching(text: str, question: str, max_tokens: int | None = None) -> str:
    """The sentences of `text` that share a word of `question`, in order (none share one: the
    first ones that state something), at most about `max_tokens` (None: `MAX_TOKENS`)."""
    max_tokens = MAX_TOKENS if max_tokens is None else max_tokens
    sentences = [s.strip() for s in SENTENCE.findall(text) if s.strip()]
    if not sentences:
        return text.strip()
    count = matcher([fold(t) for t in query_tokens(question)])
    hits = [count(s) for s in sentences]
    picked: list[int] = []
    if max(hits) > 0:
        for i, n in enumerate(hits):
            if n > 0:
                picked.append(i)
                # What it asks is answered, and what it says is gone on with, in the next one.
                after = i + 1
                while after < len(sentences) and (
                    sentences[after - 1].endswith("?") or GOES_ON.match(sentences[after])
                ):
                    picked.append(after)
                    after += 1
    else:
        picked = [i for i, s in enumerate(sentences) if not s.endswith("?")] or [0]
    return _within(
        [sentences[i] for i in dict.fromkeys(picked)],
        max_tokens,
        by_match=[hits[i] for i in dict.fromkeys(picked)],
    )


def _within(sentences: list[str], max_tokens: int, by_match: list[int]) -> str:
    """The sentences in order, the best matching kept first when they do not all fit; the
    first cut at a word when it alone is too long."""
    order = sorted(range(len(sentences)), key=lambda i: (-by_match[i], i))
    kept: set[int] = set()
    used = 0
    for i in order:
        cost = tokens_of(sentences[i])
        if kept and used + cost > max_tokens:
            continue
        kept.add(i)
        used += cost
    return cut_to_tokens(" ".join(sentences[i] for i in sorted(kept)), max_tokens)


def exchange(
    text: str,
    question: str,
    *,
    ts: float,
    role: str,
    now: float | None = None,
    zone: tzinfo | None = None,
) -> str:
    """A turn as the prompt shows it: `said_on` and its `matching` sentences."""
    return f"{said_on(ts, role, now, zone)} {matching(text, question)}"
