"""Newer wins: what a new fact is to the stored facts nearest it (docs/memory.md, "Writing a
memory").

Each (new fact, stored fact) pair gets one label: `same` (reinforce the stored row), `update`
(the situation changed), `contradiction` (the new statement is believed) or `unrelated`.
`update` and `contradiction` retire the stored fact; `same` merges into an active fact only.

The LLM judge labels one exchange's pairs in one call and leaves the unrelated ones out (issue
22: each label costs a Pi seconds); a pair it leaves out or labels with nonsense goes to the
heuristic judge, which also stands in when the LLM is down: fact-key contradictions, near
duplicates, and seed 000's state-change markers ("now", "no longer", …) turning a near or
same-predicate pair into an `update`, read in the fact or in the user's words it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import zip_longest
from typing import Any

from lobug.llm.ask import InvalidOutput, ask
from lobug.llm.client import LLMClient, OutputSchema
from lobug.memory import instructions
from lobug.memory.query import Reach
from lobug.memory.search.lexical import text_ranks
from lobug.memory.settings import WritePolicy
from lobug.memory.table import rows as store
from lobug.memory.table.dedup import content_hash, jaccard, normalize, tokens
from lobug.memory.table.rows import MemoryRow
from lobug.memory.vectors import knn
from lobug.memory.write import profile_fields
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.fact_keys import contradicts, key_string

SAME, UPDATE, CONTRADICTION, UNRELATED = "same", "update", "contradiction", "unrelated"
# A vector neighbour farther than this (cosine distance; similarity below 0.5) is about
# something else: asking the model about it costs a Pi seconds of prefill for an "unrelated"
# (issue 22). Neighbours by fact key or shared rare words are offered at any distance.
JUDGE_MAX_DISTANCE = 0.5
LABELS = (SAME, UPDATE, CONTRADICTION, UNRELATED)
REPLACING = (UPDATE, CONTRADICTION)
LLM, HEURISTIC = "llm", "heuristic"
REFINED = "refined"  # the model's pass replacing the heuristic facts of its own exchange
COVERED = 0.75  # share of a (heuristic) fact's words found in another fact that covers it

LEXICAL_POOL = 20  # BM25 neighbours the heuristic judge checks for word overlap
NEAR_K = 5  # vector neighbours the heuristic judge checks for the distance band

STATE_CHANGE = re.compile(
    r"\b(?:no longer|any ?more|no more|changed to|has changed|switched to|moved to|now|nowadays|"
    r"these days|instead)\b"
    r"|\b(?-i:new)\b",  # "a new job", not "New York"
    re.I,
)
# Stricter bands for a statement that sets a profile field (seed 001 §10, `profile_fields`):
# two values of one field differ by a word ("prefers to be called Al" / "… Alex": overlap 0.75),
# which the general bands take for a repeat, keeping the old value. Such a pair is not `same`
# unless nearly word for word; a new value of a one-value field updates the old one (newer
# wins), one of a field of several values (goals) is added beside it.
PROFILE_NEAR_JACCARD = 0.9
PROFILE_DUPLICATE_DISTANCE = 0.05
# Words the marker adds; left out when judging whether the rest says something new.
MARKER_WORDS = frozenset({"now", "nowadays", "anymore", "instead", "new", "currently"})
# Words two facts about the user share whatever they say.
FUNCTION_WORDS = frozenset(
    "the a an user users is are was were be been to of in on at for and or with their they "
    "them has have had by as it its that this from who which there does do not no s i im my "
    "me we our you".split()
)
# The user's words split where one statement ends and another may begin.
# A run of spaces is taken whole from where it starts (`(?<!\s)\s++`): linear on any text.
_CLAUSES = re.compile(r"[.!?;\n]+|,?(?<!\s)\s++\b(?:and|but|also|so)\b\s+", re.I)

Pool = Sequence[tuple[MemoryRow, float | None]]  # stored facts with their distance, if known


@dataclass(frozen=True)
class Judgement:
    """One stored fact and what the new fact is to it."""

    row: MemoryRow
    label: str
    judge: str  # llm | heuristic
    distance: float | None = None
    overlap: float = 0.0


@dataclass(frozen=True)
class Verdict:
    """What one new fact is to the stored facts it was compared with (unrelated ones may be
    left out)."""

    judgements: tuple[Judgement, ...] = ()

    def same(self) -> Judgement | None:
        """The stored fact it repeats: the most overlapping one, the nearest on a tie."""
        found = [j for j in self.judgements if j.label == SAME]
        return max(found, key=lambda j: j.overlap) if found else None

    def replacing(self) -> list[Judgement]:
        """The stored facts it updates or contradicts, in the order they were judged."""
        return [j for j in self.judgements if j.label in REPLACING]


# -- the heuristic judge -------------------------------------------------------------------------
def has_state_change(text: str) -> bool:
    return STATE_CHANGE.search(text.replace("’", "'")) is not None


def marks_change(new: str, said: str | None = None) -> bool:
    """Whether the new statement carries a state-change marker: in its own words, or in the
    user's words it was extracted from (`said`) — a model often drops the "now" of "I now
    drive a Tesla" — in a clause that shares a content word with it."""
    if has_state_change(new):
        return True
    if not said:
        return False
    words = _content(new)
    return any(
        has_state_change(clause) and words & _content(clause) for clause in _CLAUSES.split(said)
    )


def _content(text: str) -> frozenset[str]:
    return tokens(text) - FUNCTION_WORDS - MARKER_WORDS


def heuristic_label(
    new: str,
    old: str,
    *,
    distance: float | None,
    policy: WritePolicy,
    said: str | None = None,
) -> tuple[str, float]:
    """The label and the word overlap (Jaccard) of the pair. said: the user's words the new
    statement was extracted from, if any (their state-change markers count)."""
    overlap = round(jaccard(new, old), 4)
    if contradicts(new, old):
        return CONTRADICTION, overlap
    # Two facts with the same key have had their say above ("no longer lives in Denver" does
    # not update "lives in Portland"); the markers and the profile bands judge the facts the
    # keys cannot parse.
    keyed = key_string(new)
    by_keys = keyed is not None and keyed == key_string(old)
    near_jaccard, duplicate_distance = policy.near_jaccard, policy.duplicate_distance
    if not by_keys and profile_fields.detect(new) is not None:  # stricter: a profile field
        near_jaccard = max(near_jaccard, PROFILE_NEAR_JACCARD)
        duplicate_distance = min(duplicate_distance, PROFILE_DUPLICATE_DISTANCE)
        changed_field = profile_fields.other_value(new, old)
        if changed_field is not None:
            multi = changed_field.name in profile_fields.MULTI
            return (UNRELATED if multi else UPDATE), overlap
    near = overlap >= near_jaccard or (distance is not None and distance < duplicate_distance)
    if not by_keys:
        changed = near or _changed(new, old, policy)
        if changed and _says_more(new, old) and marks_change(new, said):
            return UPDATE, overlap
    return (SAME if near else UNRELATED), overlap


def _says_more(new: str, old: str) -> bool:
    return tokens(new) - MARKER_WORDS != tokens(old) - MARKER_WORDS


def _changed(new: str, old: str, policy: WritePolicy) -> bool:
    """The looser band for a statement with a state-change marker: a content word in common
    and, marker words left out, an overlap ≥ update_jaccard or the same predicate ("now
    drives a Tesla Model 3" → "drives a Honda Civic")."""
    left, right = tokens(new) - MARKER_WORDS, tokens(old) - MARKER_WORDS
    if not (left & right) - FUNCTION_WORDS:
        return False
    same_predicate = _predicate(new) is not None and _predicate(new) == _predicate(old)
    return same_predicate or len(left & right) / len(left | right) >= policy.update_jaccard


def _predicate(text: str) -> str | None:
    """The first content word: "drives" in "The user now drives a Tesla."."""
    skip = FUNCTION_WORDS | MARKER_WORDS | {"no", "longer", "not", "never", "still"}
    return next((w for w in normalize(text).split() if w not in skip), None)


def heuristic_verdict(
    conn: Any,
    cand: Candidate,
    neighbours: Pool,
    *,
    user_id: str,
    store_name: str,
    policy: WritePolicy,
    said: str | None = None,
) -> Verdict:
    """The heuristic judge over a broad pool: the active facts with the candidate's fact key,
    its BM25 neighbours (LEXICAL_POOL) and its nearest vectors (`neighbours`, NEAR_K).
    said: the user's words the candidate comes from, if any."""
    pool: dict[int, float | None] = {}
    key = key_string(cand.content) if cand.kind == "fact" else None
    if key is not None:
        pool.update(dict.fromkeys(_key_rows(conn, key, user_id, store_name)))
    for memory_id in text_ranks(conn, cand.content, LEXICAL_POOL, flt=_lexical(user_id, cand)):
        pool.setdefault(memory_id, None)
    for neighbour, distance in neighbours[:NEAR_K]:
        pool[neighbour.id] = distance
    judgements = []
    for memory_id, distance in pool.items():
        row = store.get_memory(conn, memory_id)
        if row is None or not _comparable(row, cand, store_name):
            continue
        label, overlap = heuristic_label(
            cand.content, row.content, distance=distance, policy=policy, said=said
        )
        if label != UNRELATED and _applies(label, row):
            judgements.append(Judgement(row, label, HEURISTIC, _round(distance), overlap))
    return Verdict(tuple(judgements))


# Which stored facts a new one is compared with: the active ones, and the archived ones no
# newer statement replaced yet (the GC archives what is idle; it stays findable, so an update
# must still mark it superseded). A repeat merges only into an active fact.
COMPARED = ("active", "archived")


def _lexical(user_id: str, cand: Candidate) -> Reach:
    return Reach(user_id=user_id, kinds=(cand.kind,), statuses=COMPARED, superseded=False)


def _comparable(row: MemoryRow, cand: Candidate, store_name: str) -> bool:
    return (
        row.status in COMPARED
        and (row.status == "active" or row.valid_until is None)
        and row.store == store_name
        and row.kind == cand.kind
    )


def _applies(label: str, row: MemoryRow) -> bool:
    """`same` merges into an active fact only; an archived one is only ever superseded."""
    return row.status == "active" or label in REPLACING


def _key_rows(conn: Any, key: str, user_id: str, store_name: str) -> list[int]:
    rows = conn.execute(
        "SELECT id FROM memories WHERE user_id = ? AND fact_key = ? AND kind = 'fact'"
        " AND (status = 'active' OR (status = 'archived' AND valid_until IS NULL))"
        " AND store = ? ORDER BY status = 'active' DESC, id DESC",
        (user_id, key, store_name),
    ).fetchall()
    return [int(r[0]) for r in rows]


def _round(distance: float | None) -> float | None:
    return None if distance is None else round(distance, 4)


# -- what the LLM is asked about -----------------------------------------------------------------
def offered(
    conn: Any,
    cand: Candidate,
    vector: Sequence[float] | None,
    *,
    user_id: str,
    store_name: str,
    k: int,
) -> list[tuple[MemoryRow, float | None]]:
    """The candidate's k nearest stored facts for the LLM judge: same fact key first, then
    KNN neighbours within JUDGE_MAX_DISTANCE and BM25 neighbours, interleaved. Nothing for an
    exact repeat (reconcile's first check settles it) or a non-fact."""
    if k <= 0 or cand.kind != "fact":
        return []
    if store.active_by_hash(conn, user_id, content_hash(cand.content), store=store_name):
        return []
    distances: dict[int, float] = {}
    near: list[int] = []
    if vector is not None:
        for neighbour, distance in knn.nearest_facts(conn, vector, user_id=user_id, k=k):
            distances[neighbour.id] = distance
            if distance <= JUDGE_MAX_DISTANCE:
                near.append(neighbour.id)
    lexical = text_ranks(conn, cand.content, k, flt=_lexical(user_id, cand))
    key = key_string(cand.content)
    ranked = _key_rows(conn, key, user_id, store_name) if key else []
    for pair in zip_longest(near, lexical):
        ranked.extend(i for i in pair if i is not None)
    pool: list[tuple[MemoryRow, float | None]] = []
    seen: set[int] = set()
    for memory_id in ranked:
        if memory_id in seen or len(pool) >= k:
            continue
        seen.add(memory_id)
        row = store.get_memory(conn, memory_id)
        if row is None or not _comparable(row, cand, store_name):
            continue
        pool.append((row, distances.get(memory_id)))
    return pool


def pools(
    conn: Any,
    cands: Sequence[Candidate],
    vectors: Sequence[Sequence[float]] | None,
    *,
    user_id: str,
    store_name: str,
    k: int,
) -> list[list[tuple[MemoryRow, float | None]]]:
    """`offered` for every candidate of an exchange (one read transaction)."""
    return [
        offered(
            conn,
            cand,
            vectors[i] if vectors else None,
            user_id=user_id,
            store_name=store_name,
            k=k,
        )
        for i, cand in enumerate(cands)
    ]


# -- the LLM judge -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Answer:
    """The usable labels, by (candidate index, stored memory id), and how many answered items
    were dropped (unknown label, a pair that was not offered)."""

    labels: dict[tuple[int, int], str]
    dropped: int = 0

    def for_candidate(self, index: int) -> dict[int, str]:
        return {memory_id: label for (i, memory_id), label in self.labels.items() if i == index}


# What the judge prompt asks for; parse_labels also takes the other shapes small models send.
LABELS_SCHEMA = OutputSchema(
    "labels",
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "new": {"type": "integer"},
                "stored": {"type": "integer"},
                "label": {"type": "string", "enum": [SAME, UPDATE, CONTRADICTION]},
            },
            "required": ["new", "stored", "label"],
        },
    },
)
_LIST_KEYS = ("pairs", "labels", "judgements", "judgments", "results", "items", "answers")
_NEW_KEYS = ("new", "new_fact", "fact", "new_id")
_OLD_KEYS = ("stored", "old", "existing", "stored_fact", "stored_id", "memory", "id")
_LABEL_KEYS = ("label", "relation", "verdict", "judgement", "judgment", "answer")


async def ask_llm(
    llm: LLMClient,
    cands: Sequence[Candidate],
    offers: Sequence[Pool],
    *,
    timeout_s: float,
) -> Answer:
    """One call for the whole exchange. Raises LLMUnavailable, or InvalidOutput after one
    reminder; an exchange with nothing to compare returns no labels without a call."""
    numbers: dict[int, int] = {}  # the prompt's number -> candidate index
    questions: list[tuple[int, str, list[tuple[int, str]]]] = []
    for index, (cand, pool) in enumerate(zip(cands, offers, strict=True)):
        if pool:
            numbers[len(numbers) + 1] = index
            stored = [(row.id, row.content) for row, _ in pool]
            questions.append((len(numbers), cand.content, stored))
    if not questions:
        return Answer({})
    offered_pairs = {
        (number, row.id) for number, index in numbers.items() for row, _ in offers[index]
    }
    answer = await ask(
        llm,
        instructions.judge_messages(questions),
        partial(parse_labels, offered=offered_pairs),
        reminder=instructions.JUDGE_REMINDER,
        what="fact judgement",
        timeout_s=timeout_s,
        temperature=0.0,
        schema=LABELS_SCHEMA,
    )
    return Answer(
        {(numbers[n], memory_id): label for (n, memory_id), label in answer.labels.items()},
        answer.dropped,
    )


def parse_labels(raw: str, *, offered: set[tuple[int, int]]) -> Answer:
    """Labels by (new fact number, stored id) from a JSON array of {"new", "stored", "label"}
    objects (fenced, wrapped in an object, with prose around it). Items with an unknown label
    or a pair not in `offered` are dropped and counted; InvalidOutput when there is no JSON,
    JSON of another shape, or items of which none is usable. An empty array labels nothing."""
    items = instructions.answer_items(
        raw, is_item=lambda v: any(k in v for k in _LABEL_KEYS), list_keys=_LIST_KEYS
    )
    only_new = {n for n, _ in offered}
    default_new = next(iter(only_new)) if len(only_new) == 1 else None
    labels: dict[tuple[int, int], str] = {}
    dropped = 0
    for item in items:
        pair = _pair(item, default_new)
        if pair is None or pair[0] not in offered or pair[0] in labels:
            dropped += 1
            continue
        labels[pair[0]] = pair[1]
    if items and not labels:
        raise InvalidOutput(f"none of the {len(items)} item(s) labels an offered pair", raw)
    return Answer(labels, dropped)


def _pair(item: Any, default_new: int | None) -> tuple[tuple[int, int], str] | None:
    if not isinstance(item, dict):
        return None
    new = _number(_first(item, _NEW_KEYS))
    old = _number(_first(item, _OLD_KEYS))
    label = _first(item, _LABEL_KEYS)
    if new is None:
        new = default_new
    if new is None or old is None or not isinstance(label, str):
        return None
    label = label.strip().lower()
    return ((new, old), label) if label in LABELS else None


def _first(item: Mapping[str, Any], keys: Sequence[str]) -> Any:
    return next((item[k] for k in keys if k in item), None)


def _number(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and (match := re.search(r"\d+", value)):
        return int(match.group())
    return None


def covers(fact: str, other: str) -> bool:
    """Whether `fact` says all `other` says: COVERED of other's words are in it."""
    words = tokens(other)
    return bool(words) and len(words & tokens(fact)) / len(words) >= COVERED


def refined(conn: Any, cand: Candidate, verdict: Verdict | None, turn_id: int) -> Verdict | None:
    """The LLM pass after an outage (seed 000: heuristics stand in, the model refines): its
    fact replaces the heuristic facts of the same exchange it covers ("The user's name is
    Alex." and "The user works at NASA." → "The user's name is Alex and the user works at
    NASA."), so the exchange is not remembered twice in two wordings."""
    rows = conn.execute(
        "SELECT m.* FROM memories m JOIN memory_sources s ON s.memory_id = m.id"
        " WHERE s.turn_id = ? AND m.status = 'active' AND m.kind = ?"
        " AND json_extract(m.attributes, '$.source') = 'heuristic'",
        (turn_id, cand.kind),
    ).fetchall()
    covered = [
        MemoryRow.from_row(r)
        for r in rows
        if r["content"] != cand.content and covers(cand.content, r["content"])
    ]
    if not covered:
        return verdict
    replaced = {row.id for row in covered}
    kept = tuple(j for j in (verdict.judgements if verdict else ()) if j.row.id not in replaced)
    return Verdict(kept + tuple(Judgement(row, UPDATE, REFINED, None, 1.0) for row in covered))


@dataclass(frozen=True)
class Judged:
    """The LLM judge's work for one exchange: what each candidate was compared with, and the
    labels it gave."""

    offers: Sequence[Pool]
    answer: Answer

    def verdict(
        self,
        conn: Any,
        index: int,
        cand: Candidate,
        *,
        policy: WritePolicy,
        said: str | None = None,
    ) -> Verdict | None:
        """The candidate's verdict (in the write transaction, on fresh rows): a pair the LLM
        left unlabelled, or whose stored text changed since, is judged by the heuristics; a
        stored fact no longer active is left out. None when the LLM labelled none of its
        pairs: the caller's heuristic judge decides the whole candidate."""
        labels = self.answer.for_candidate(index)
        if not labels:
            return None
        judgements = []
        for asked, distance in self.offers[index] if index < len(self.offers) else ():
            row = store.get_memory(conn, asked.id)
            if row is None or not _comparable(row, cand, asked.store):
                continue
            label, overlap = heuristic_label(
                cand.content, row.content, distance=distance, policy=policy, said=said
            )
            judge = HEURISTIC
            if asked.id in labels and row.content == asked.content:
                label, judge = labels[asked.id], LLM
            if _applies(label, row):
                judgements.append(Judgement(row, label, judge, _round(distance), overlap))
        return Verdict(tuple(judgements))
