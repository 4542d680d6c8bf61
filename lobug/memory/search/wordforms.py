"""The forms of a word that a prefix cannot find, from lemminflect's English tables.

A question asks with the base form ("What did John's team win?", "What did Melanie buy?"),
and what was said tells it in the past ("We even won a trophy!", "I bought these figurines
yesterday"): no prefix of "win" is "won", and no prefix of "make" is "making". A search word
that is a form of a verb or a noun also finds its other forms, each as the whole word
(`fts.fts_term`, `fts.token_matches`); every other word keeps the prefix rule of `fts.stem`.

The forms come from lemminflect (`getAllLemmas`: the lemmas of a word, `getAllInflections`:
every form of a lemma; its dictionary only, no guessing for unknown words), not from a table
kept here: it holds every English verb and noun, regular ones too ("city" finds "cities",
"box" "boxes"). Left out as before: verbs whose past is mostly another word ("fall"/"fell"
and "spring"/"sprang" against the seasons, "rise"/"rose", "lie"/"lay", "wind"/"wound",
"bear"/"bore"), and "be", "do" and "have", whose forms are stop words. English only, as the
stop words are. Why lemminflect and what it costs: docs/search.md.
"""

from __future__ import annotations

from functools import lru_cache

from lemminflect import getAllInflections, getAllLemmas

# Verbs whose forms are mostly other words, and the stop-word verbs: a lemma of these links
# nothing (the word keeps its other lemmas: "fell" the verb is still "felled").
EXCLUDED = frozenset({"fall", "spring", "rise", "lie", "wind", "bear", "be", "do", "have"})
PARTS = ("VERB", "NOUN")  # adjectives' forms ("better", "best") are other words to a search
# fts.MIN_PREFIX_CHARS (fts imports this module): from this length a word's own prefix finds
# the forms that begin with it ("swim"* finds "swims" and "swimming"), shorter ones only itself.
PREFIX_CHARS = 4


@lru_cache(maxsize=4096)
def forms(word: str) -> tuple[str, ...]:
    """`word` first, then its other forms that its own prefix cannot find; just the word
    when it has none. `word` is a search token: case-folded, as `fts.query_tokens` gives it."""
    lemmas = getAllLemmas(word)
    found: dict[str, None] = {}
    for part in PARTS:
        for lemma in lemmas.get(part, ()):
            if lemma in EXCLUDED:
                continue
            found[lemma] = None
            for inflected in getAllInflections(lemma, upos=part).values():
                found.update(dict.fromkeys(inflected))
    prefix = len(word) >= PREFIX_CHARS
    others = [f for f in found if f != word and not (prefix and f.startswith(word))]
    return (word, *others)


def warm() -> None:
    """Load lemminflect's tables (about 1 s and 50 MB), so the first question does not wait."""
    forms("won")
