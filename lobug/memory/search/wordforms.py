"""The forms of a word that a prefix cannot find: irregular verbs and plurals.

A question asks with the base form ("What did John's team win?", "What did Melanie buy?"),
and what was said tells it in the past ("We even won a trophy!", "I bought these figurines
yesterday"): no prefix of "win" is "won", and no prefix of "make" is "making". A search word
that is one of these forms also finds the others, each as the whole word (`fts.fts_term`,
`fts.token_matches`); every other word keeps the prefix rule of `fts.stem`.

The table leaves out verbs whose forms are all alike ("put", "cut") or whose past is mostly
another word ("fall"/"fell" and "spring"/"sprang" against the seasons, "rise"/"rose",
"lie"/"lay", "wind"/"wound", "bear"/"bore"), and "be", "do" and "have", whose forms are
stop words. English only, as the stop words are.
"""

from __future__ import annotations

# base, past, participle (when it differs): the -s and -ing forms are made by `_inflect`.
_VERBS = """
arise arose arisen; awake awoke awoken; beat beaten; become became; begin began begun;
bend bent; bite bit bitten; bleed bled; blow blew blown; break broke broken; breed bred;
bring brought; build built; burn burnt; buy bought; catch caught; choose chose chosen;
come came; creep crept; deal dealt; dig dug; draw drew drawn; dream dreamt; drink drank drunk;
drive drove driven; eat ate eaten; feed fed; feel felt; fight fought; find found; flee fled;
fly flew flown; forbid forbade forbidden; forget forgot forgotten; forgive forgave forgiven;
freeze froze frozen; get got gotten; give gave given; go went gone; grow grew grown;
hang hung; hear heard; hide hid hidden; hold held; keep kept; kneel knelt; know knew known;
lead led; leap leapt; learn learnt; leave left; lend lent; light lit; lose lost; make made;
mean meant; meet met; pay paid; ride rode ridden; ring rang rung; run ran; say said;
see saw seen; seek sought; sell sold; send sent; shake shook shaken; shine shone; shoot shot;
show shown; shrink shrank shrunk; sing sang sung; sink sank sunk; sit sat; sleep slept;
slide slid; speak spoke spoken; spend spent; spin spun; stand stood; steal stole stolen;
stick stuck; sting stung; strike struck; swear swore sworn; sweep swept; swim swam swum;
swing swung; take took taken; teach taught; tear tore torn; tell told; think thought;
throw threw thrown; understand understood; wake woke woken; wear wore worn; weave wove woven;
weep wept; win won; withdraw withdrew withdrawn; write wrote written
"""
_NOUNS = """
child children; person people; man men; woman women; foot feet; tooth teeth; mouse mice;
goose geese; wife wives; knife knives
"""
_VOWELS = frozenset("aeiou")


def _inflect(base: str) -> tuple[str, str]:
    """The -s and -ing forms of a verb ("flies", "flying"; "wins", "winning"; "makes",
    "making"), as English spells them for the verbs of the table."""
    if base.endswith(("s", "sh", "ch", "x", "o")):
        third = base + "es"
    elif base.endswith("y") and base[-2] not in _VOWELS:
        third = base[:-1] + "ies"
    else:
        third = base + "s"
    if base.endswith("ee") or base.endswith("ye"):
        ing = base + "ing"
    elif base.endswith("e"):
        ing = base[:-1] + "ing"
    elif (
        len(base) >= 3
        and base[-1] not in _VOWELS | {"w", "x", "y"}
        and base[-2] in _VOWELS
        and base[-3] not in _VOWELS
    ):
        ing = base + base[-1] + "ing"  # one short vowel before one consonant: "winning"
    else:
        ing = base + "ing"
    return third, ing


def _table() -> dict[str, tuple[str, ...]]:
    """Each form of the table -> every form of its word, that form first."""
    table: dict[str, tuple[str, ...]] = {}
    groups = [(g.split(), True) for g in _VERBS.split(";")]
    groups += [(g.split(), False) for g in _NOUNS.split(";")]
    for words, verb in groups:
        group = tuple(dict.fromkeys(words + (list(_inflect(words[0])) if verb else [])))
        for form in group:
            table[form] = (form, *(f for f in group if f != form))
    return table


FORMS = _table()


def forms(word: str) -> tuple[str, ...]:
    """Every form of `word` (itself first) when it has forms a prefix cannot find; else
    just the word."""
    return FORMS.get(word, (word,))
