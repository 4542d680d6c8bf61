"""The base memory's shape (seed 004 §4.2): the four headings, at most `base_memory_max_words`.

The document is in every owner prompt, so its cap is the prompt's cost: what is stored is held
to it. An answer without the four headings is no document (the reminder asks again, then the
job fails); one over the cap is trimmed rather than asked for again — a second long generation
costs a Pi minutes and a small model often overshoots again. Trimming takes the last bullet of
the longest section that has several, so each heading keeps its first (most important) bullets
and none (Key History, last in the document) is dropped whole; only a one-bullet document loses
sentences, then words. Text before the first heading
("Here is the updated document:") is left out; headings are written the prompt's way.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lobug.llm.ask import InvalidOutput, plain_text
from lobug.memory.instructions import DISTILL_HEADINGS

_NAMES = "|".join(re.escape(h) for h in DISTILL_HEADINGS)
# "User Profile:", "## User Profile", "**Preferences:**", "Key History: moved to Seattle"
_HEADING = re.compile(rf"^[#*_\s]*({_NAMES})\s*[*_]*\s*(?::\s*[*_]*\s*(.*))?$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def distill_parser(max_words: int) -> Callable[[str], str]:
    """The parser for `llm.ask.ask`: all four headings, at most `max_words` words."""

    def parse(raw: str) -> str:
        sections = _sections(plain_text(raw))
        missing = [h for h in DISTILL_HEADINGS if h not in sections]
        if missing:
            raise InvalidOutput(f"not a base memory document (no {', '.join(missing)})", raw)
        return _render(_trim(sections, max_words))

    return parse


def words(text: str) -> int:
    """Words as a reader counts them: a bullet's "-" is none."""
    return sum(1 for w in text.split() if any(c.isalnum() for c in w))


def _sections(text: str) -> dict[str, list[str]]:
    canonical = {h.lower(): h for h in DISTILL_HEADINGS}
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None  # None: before the first heading
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = sections.setdefault(canonical[heading[1].lower()], [])
            line = heading[2] or ""
        if current is not None and line.strip():
            current.append(line.rstrip())
    return sections


def _trim(sections: dict[str, list[str]], max_words: int) -> dict[str, list[str]]:
    def size(body: list[str]) -> int:
        return sum(words(line) for line in body)

    while (over := sum(words(h) + size(b) for h, b in sections.items()) - max_words) > 0:
        several = [b for b in sections.values() if len(b) > 1]
        if several:  # a whole bullet, from the longest section that has more than one
            max(several, key=size).pop()
            continue
        body = max(sections.values(), key=size)
        if not body:
            break  # the headings alone are over the cap: nothing left to take
        body[0] = _shorten(body[0], over)
        if not words(body[0]):
            body.pop()
    return sections


def _shorten(line: str, over: int) -> str:
    """The line `over` words shorter: whole sentences off its end, else its last words."""
    sentences = _SENTENCE_END.split(line)
    while len(sentences) > 1 and over > 0:
        over -= words(sentences.pop())
    kept = " ".join(sentences)
    if over <= 0:
        return kept
    tokens = kept.split()
    while tokens and over > 0:
        over -= 1 if any(c.isalnum() for c in tokens.pop()) else 0
    return " ".join(tokens) + (" …" if tokens else "")


def _render(sections: dict[str, list[str]]) -> str:
    return "\n".join(
        line for h in DISTILL_HEADINGS for line in (f"{h}:", *sections.get(h, []))
    ).strip()
