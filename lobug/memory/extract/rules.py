"""The heuristic extractor's rules (seed 000): patterns and their third-person rewrites."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

Rewrite = Callable[[re.Match[str]], str | None]

_I = r"\bI"
_IM = r"\bI(?:'m| am)"
_ADV = r"(?:really |just |absolutely |totally |kind of |kinda |still |also |actually )*"
_NAME = r"(?-i:[A-Z][\w'-]*)"
_REL = (
    r"wife|husband|partner|boyfriend|girlfriend|fianc[ée]e?|son|daughter|kid|child|baby|mom|"
    r"mum|mother|dad|father|brother|sister|grandma|grandmother|grandpa|grandfather|aunt|uncle|"
    r"cousin|niece|nephew|friend|best friend|boss|colleague|coworker|dog|cat|puppy|kitten|"
    r"doctor|dentist|vet|neighbou?r|roommate|flatmate|landlord|teacher|coach"
)
_ATTR = (
    r"name|birthday|email|email address|phone number|number|address|job|car|"
    r"favou?rite [a-z]+(?: [a-z]+)?"
)
_TRAIT = (
    r"vegetarian|vegan|pescatarian|allergic to .+|lactose intolerant|gluten intolerant|"
    r"left-handed|right-handed|married|single|divorced|widowed|retired|pregnant|diabetic|"
    r"colou?r ?blind|deaf|hard of hearing"
)
# Present-tense habits and belongings worth keeping: "I drive a Honda", "I drink oolong tea".
_HABIT = r"drive|drink|eat|own|speak|cook|bake|collect|grow|wear|practi[cs]e|play|knit|paint"
_EVENT = (
    r"meeting|appointment|interview|call|exam|test|class|lesson|game|match|party|dinner|lunch|"
    r"flight|trip|concert|recital|surgery|check-?up|date|wedding|conference|deadline|shift"
)


def _third(verb: str) -> str:
    """Third-person singular present of a verb (a past tense or modal stays as it is)."""
    low = verb.lower()
    irregular = {"am": "is", "be": "is", "have": "has", "do": "does", "go": "goes", "'m": "is"}
    if low in irregular:
        return irregular[low]
    if low in _UNCHANGED or low.endswith("ed"):
        return verb
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


_UNCHANGED = frozenset(
    "can could will would shall should may might must went was were had got saw made took met "
    "bought sold left found gave told ate drank ran began came became felt kept lost paid sent "
    "spent thought brought built heard held read said sat slept stood taught won wrote".split()
)
_OBJECT_PRONOUNS = [
    (r"\bmyself\b", "themselves"),
    (r"\bmy\b", "their"),
    (r"\bmine\b", "theirs"),
    (r"\bme\b", "them"),
    (r"\byourself\b", "the assistant"),
    (r"\byour\b", "the assistant's"),
    (r"\byou\b", "the assistant"),
    (r"\bour\b", "the household's"),
    (r"\bus\b", "the household"),
]
_FILLER = re.compile(
    r"(?<!\s)(?:\s*+,)?\s++(?:too|as well|lol|haha|btw|though|actually|by the way|ok|okay)\s*$",
    re.I,
)


def _tidy(value: str) -> str | None:
    """Object-position pronouns to third person; None when a clause still speaks as I/we."""
    value = _FILLER.sub("", value.strip(" ,;:-"))
    for pattern, replacement in _OBJECT_PRONOUNS:
        value = re.sub(pattern, replacement, value, flags=re.I)
    if re.search(r"\b(?:I|I'm|I've|I'll|I'd|we|we're|we've)\b", value, re.I):
        return None
    return value


def _fact(template: str, **parts: str) -> str | None:
    tidy = {key: _tidy(value) for key, value in parts.items()}
    if any(value is None for value in tidy.values()):
        return None
    return " ".join(template.format(**tidy).split()).replace(" .", ".")


def _verb(m: re.Match[str], prefix: str) -> str | None:
    return _fact(prefix + " {verb} {rest}.", verb=_third(m["verb"]), rest=m["rest"])


def _cap(name: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in name.split())


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    category: str
    importance: float
    rewrite: Rewrite
    needs_time: bool = False  # plans only count when they say when


def _rule(
    rule_id: str,
    regex: str,
    category: str,
    importance: float,
    rewrite: Rewrite,
    needs_time: bool = False,
) -> Rule:
    return Rule(rule_id, re.compile(regex, re.I), category, importance, rewrite, needs_time)


# One rule per entry, most specific first: the first rule that matches a clause wins.
# fmt: off
RULES: list[Rule] = [
    _rule("identity.name", rf"\b(?:my name is|call me|I go by)\s+(?P<v>[a-z][\w'-]*"
          rf"(?:\s+{_NAME}){{0,2}})\s*$", "profile", 0.9,
          lambda m: f"The user's name is {_cap(m['v'])}."),
    _rule("state.no_longer", rf"{_IM} no longer (?P<v>.+)", "state", 0.7,
          lambda m: _fact("The user is no longer {v}.", v=m["v"])),
    _rule("state.no_longer", rf"{_I} no longer (?P<verb>\w+)(?P<rest>.*)", "state", 0.7,
          lambda m: _verb(m, "The user no longer")),
    _rule("state.anymore", rf"{_I} (?:don't|do not|dont) (?P<verb>\w+)(?P<rest>.*?)"
          r"\s*\bany ?more\b.*", "state", 0.7, lambda m: _verb(m, "The user no longer")),
    _rule("state.anymore", rf"{_IM} not (?P<v>.+?)\s*\bany ?more\b.*", "state", 0.7,
          lambda m: _fact("The user is no longer {v}.", v=m["v"])),
    _rule("state.moved_to", r"\b(?:I|we)(?:'ve| have)? (?:just |recently |finally )?"
          r"(?:moved|relocated) to (?P<v>.+)", "profile", 0.8,
          lambda m: _fact("The user moved to {v}.", v=m["v"])),
    _rule("state.changed_to", r"\bmy (?P<a>[\w ]{1,30}?) (?:has |is |just )?(?:changed|switched)"
          r" to (?P<v>.+)", "state", 0.7,
          lambda m: _fact("The user's {a} changed to {v}.", a=m["a"], v=m["v"])),
    _rule("state.changed_to", rf"{_I} (?:just )?(?:changed|switched) my (?P<a>[\w ]{{1,30}}?) "
          r"to (?P<v>.+)", "state", 0.7,
          lambda m: _fact("The user's {a} changed to {v}.", a=m["a"], v=m["v"])),
    _rule("state.now", rf"{_IM} now (?P<v>.+)", "state", 0.7,
          lambda m: _fact("The user is now {v}.", v=m["v"])),
    _rule("state.now", rf"{_I} now (?P<verb>\w+)(?P<rest>.*)", "state", 0.7,
          lambda m: _verb(m, "The user now")),
    _rule("identity.work_as", rf"{_I}(?:'m| am)? work(?:ing)? as (?P<v>.+)", "work", 0.7,
          lambda m: _fact("The user works as {v}.", v=m["v"])),
    _rule("identity.work_at", rf"{_I}(?:'m| am)? (?:just started |started )?work(?:ing)? "
          r"(?P<p>at|for) (?P<v>.+)", "work", 0.7,
          lambda m: _fact("The user works {p} {v}.", p=m["p"].lower(), v=m["v"])),
    _rule("identity.live_in", rf"{_I} (?:still )?live in (?P<v>.+)", "profile", 0.8,
          lambda m: _fact("The user lives in {v}.", v=m["v"])),
    _rule("identity.live_in", rf"{_IM} (?:currently )?living in (?P<v>.+)", "profile", 0.8,
          lambda m: _fact("The user is living in {v}.", v=m["v"])),
    _rule("identity.from", rf"{_IM} (?:originally )?from (?P<v>.+)", "profile", 0.6,
          lambda m: _fact("The user is from {v}.", v=m["v"])),
    _rule("identity.age", rf"{_IM} (?P<v>\d{{1,3}})(?: years? old)?\s*$", "profile", 0.6,
          lambda m: f"The user is {m['v']} years old."),
    _rule("identity.trait", rf"{_IM} (?P<v>{_TRAIT})", "health", 0.8,
          lambda m: _fact("The user is {v}.", v=m["v"])),
    _rule("relation.named", rf"\bmy (?P<r>{_REL}) (?P<n>{_NAME}(?: {_NAME})?)(?P<rest> .+)",
          "relationships", 0.7,
          lambda m: _fact("The user's {r} {n} {rest}.", r=m["r"].lower(), n=m["n"],
                          rest=m["rest"])),
    _rule("relation.is", rf"\bmy (?P<r>{_REL}|{_ATTR})(?:'s name)? is (?:called |named )?"
          r"(?P<v>.+)", "relationships", 0.7,
          lambda m: _fact("The user's {r} is {v}.",
                          r=re.sub("favourite", "favorite", m["r"].lower()), v=m["v"])),
    _rule("preference.like", rf"{_I} {_ADV}(?P<verb>like|love|enjoy|adore|hate|dislike|prefer"
          r"|detest)\s+(?P<rest>.+)", "preference", 0.6, lambda m: _verb(m, "The user")),
    _rule("preference.like", rf"{_I} {_ADV}(?P<verb>can't stand|cannot stand|can't live "
          r"without)\s+(?P<rest>.+)", "preference", 0.6,
          lambda m: _fact("The user {verb} {rest}.", verb=m["verb"].lower(), rest=m["rest"])),
    _rule("preference.dislike", rf"{_I} (?:don't|do not|dont) {_ADV}(?P<verb>like|enjoy|eat|"
          r"drink|want)\s+(?P<rest>.+)", "preference", 0.6,
          lambda m: _fact("The user does not {verb} {rest}.", verb=m["verb"].lower(),
                          rest=m["rest"])),
    _rule("habit.does", rf"{_I} {_ADV}(?:usually |always |often |normally )?(?P<verb>{_HABIT})"
          r"\s+(?!(?:it|that|this|them|those|these|one)\b)(?P<rest>.+)", "habit", 0.6,
          lambda m: _verb(m, "The user")),
    _rule("identity.i_am_a", rf"{_IM} (?P<v>an? (?!bit\b|little\b|lot\b|mess\b|wreck\b).+)",
          "profile", 0.6, lambda m: _fact("The user is {v}.", v=m["v"])),
    _rule("plan.event", rf"\b(?:I|I've|I have) (?:got |have )?(?P<v>(?:an? |my |the )?"
          rf"(?:[\w'-]+ ){{0,3}}(?:{_EVENT})s?\b.*)", "plan", 0.5,
          lambda m: _fact("The user has {v}.", v=m["v"])),
    _rule("plan.going_to", rf"{_IM} (?:going to|gonna) (?P<v>.+)", "plan", 0.5,
          lambda m: _fact("The user is going to {v}.", v=m["v"]), needs_time=True),
    _rule("plan.going_to", r"\bwe(?:'re| are) (?:going to|gonna) (?P<v>.+)", "plan", 0.5,
          lambda m: _fact("The user's household is going to {v}.", v=m["v"]), needs_time=True),
    _rule("plan.will", rf"{_I}(?:'ll| will) (?P<v>.+)", "plan", 0.5,
          lambda m: _fact("The user will {v}.", v=m["v"]), needs_time=True),
    _rule("plan.need_to", rf"{_I} (?:need to|have to|'ve got to|must) (?P<v>.+)", "plan", 0.5,
          lambda m: _fact("The user needs to {v}.", v=m["v"]), needs_time=True),
    _rule("plan.doing", rf"{_IM} (?P<v>(?:visiting|flying|driving|meeting|seeing|taking|leaving"
          r"|heading|going|starting|hosting|picking) .+)", "plan", 0.5,
          lambda m: _fact("The user is {v}.", v=m["v"]), needs_time=True),
]
# fmt: on
