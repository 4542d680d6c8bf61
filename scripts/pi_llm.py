#!/usr/bin/env python3
"""A timing-faithful Ollama front: answers like llama3.2:3b on a Pi 5, at its speed.

The same REST shapes as Ollama for what the daemon uses (POST /api/chat, streamed or not;
POST /api/embed and /api/embeddings; GET /api/tags, /api/version, /api/ps), answered the way
llama.cpp-based Ollama does it in time:
  - ONE slot (OLLAMA_NUM_PARALLEL=1): requests are served one at a time, first come first
    served;
  - a KV cache holding the token list of the last served sequence (prompt + generated
    tokens); a new prompt prefills only the tokens after the longest common prefix with it
    (at least its last token, as llama.cpp re-evaluates one to get logits);
  - prefill at `--prefill-rate` and generation at `--gen-rate` tokens per second (default
    30 and 5: a Pi 5 running llama3.2:3b); embeddings are a prefill of their input at
    `--embed-rate`, through the same slot by default (the CPU is shared) but without touching
    the chat model's cache (another model, another runner);
  - a client that disconnects (aborts) while its request is queued, prefilling or
    generating stops it at once and frees the slot; the cache keeps what was processed.
`--speedup N` divides every sleep by N so a benchmark takes minutes; every figure this
server reports is in model seconds (unscaled): the model clock is
(time.monotonic() - t0) * speedup, and CLOCK_MONOTONIC is the same for every process on
the machine, so a client converts its own readings with `t0` from GET /_stats.

Prompts are rendered with llama3's chat template and cut by a simple deterministic tokenizer
(`\\w+` pieces, words longer than 6 characters split every 6, other non-space characters one
token per one or two of them, as BPE merges `{"` or `",`; the template's special tokens one
each): English prose comes out at about 1.2-1.6 tokens a word; checked against gemma3's
tokenizer (llama-server /tokenize) it counts 5-15 % more on prose and within 10 % on JSON.

Answers have the shape and length a small model gives, chosen by the prompt's task (the same
routing as tests/fake_ollama.py): a device turn gets a two-sentence reply (in the JSON
envelope when the request asks for `format`), extraction one or two facts per exchange drawn
from the user's words, the judge labels every offered pair (mostly `unrelated`, `same` when
near-identical), a summary is a paragraph, the base memory four headed sections, reflection
and insights short. Everything is deterministic: the same request gets the same answer.

Every request is recorded (task, prompt / prefilled / reused / generated tokens, arrival,
start and end on the model clock, aborted or not, the wait in the queue and how much of it
was behind memory work): GET /_stats, GET /_prompts (the messages of each chat request),
POST /_reset (empty cache and records, clock restarted).

Usage: .venv/bin/python scripts/pi_llm.py --port 11500 [--speedup 10]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
for _path in (str(ROOT), str(ROOT / "tests")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from fake_ollama import fake_embedding, judge_pairs  # noqa: E402

from lobug.memory.instructions import task_of  # noqa: E402
from lobug.memory.reflect.instructions import task_of as thinking_task_of  # noqa: E402

CHAT = "chat"  # a device turn (or any conversation prompt)
WARM = "warm"  # a conversation prompt with num_predict 0: prefill only
EMBED = "embed"
OTHER = "other"  # a prompt that is neither a conversation nor a known memory task
FOREGROUND = (CHAT, EMBED)  # every other task is memory work

DEFAULT_MODELS = ("llama3.2:latest", "nomic-embed-text:latest", "all-minilm:latest")

# -- tokens --------------------------------------------------------------------------------------
_PIECES = re.compile(r"<\|[a-z_]+\|>|\w+|[^\w\s]{1,2}")
MAX_PIECE = 6
BOS = "<|begin_of_text|>"
SYSTEM_PREAMBLE = "Cutting Knowledge Date: December 2023\n\n"  # Ollama's llama3.2 template


def tokenize(text: str) -> list[str]:
    """Deterministic pieces standing in for a BPE vocabulary's tokens."""
    out: list[str] = []
    for piece in _PIECES.findall(text):
        if len(piece) > MAX_PIECE and not piece.startswith("<|"):
            out.extend(piece[i : i + MAX_PIECE] for i in range(0, len(piece), MAX_PIECE))
        else:
            out.append(piece)
    return out


def render(messages: list[dict[str, Any]]) -> str:
    """llama3's chat template as Ollama renders it, with the assistant header to generate."""
    parts = [BOS]
    for message in messages:
        role = str(message.get("role", "user"))
        content = str(message.get("content", ""))
        if role == "system":
            content = SYSTEM_PREAMBLE + content
        parts.append(f"<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>")
    parts.append("<|start_header_id|>assistant<|end_header_id|>\n\n")
    return "".join(parts)


def prompt_tokens(messages: list[dict[str, Any]]) -> list[str]:
    return tokenize(render(messages))


def common_prefix(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


# -- what a small model answers ------------------------------------------------------------------
# Older checkouts (`bench_reply.py --root`) put extraction and judging in system messages of
# their own: told apart by their openings.
LEGACY_TASKS = {
    "extract": "You extract long-term memories about the",
    "judge": "You compare new facts about the user with",
    "summarize": "You summarise a conversation between the",
}


def classify(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    task = task_of(messages) or thinking_task_of(messages)
    if task is not None:
        return task
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    legacy = next((t for t, opening in LEGACY_TASKS.items() if system.startswith(opening)), None)
    if legacy is not None:
        return legacy
    conversational = (
        not system
        or "Answer with one JSON object" in system
        or "Answer in plain conversational sentences" in system
        or "Lo-Bug, a small desk companion" in system
    )
    if not conversational:
        return OTHER
    options = body.get("options") or {}
    if options.get("num_predict") == 0:
        return WARM
    return CHAT


def _seed(*parts: str) -> int:
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def _pick(options: list[str] | tuple[str, ...], *key: str) -> str:
    return options[_seed(*key) % len(options)]


_STOP = set(
    """a an the and or but so if then than that this these those is are was were be been being
    am do does did have has had i me my mine we us our you your it its he she they them their
    to of in on at for with about from by as into over after before up down out just really
    very too also can could would should will shall may might must not no yes what when where
    who why how which there here some any all more most much many lot lots get got going go
    like know think want need tell remind please hey okay ok oh well let lets let's today
    user user's lo-bug""".split()
)


def topic_of(text: str) -> str:
    """A few content words of an utterance: a name if there is one, else the longest words."""
    words = re.findall(r"[A-Za-z][A-Za-z'-]+", text)
    names = [w for i, w in enumerate(words) if i and w[0].isupper() and w.lower() not in _STOP]
    content = [w.lower() for w in words if w.lower() not in _STOP and len(w) > 3]
    if names:
        return names[0]
    if not content:
        return "that"
    ranked = sorted(dict.fromkeys(content), key=lambda w: (-len(w), w))[:2]
    return " and ".join(sorted(ranked, key=content.index))


_ANSWERS = (
    "Let me think about {topic} for a moment, I want to get it right",
    "Good question about {topic}, here is what I remember from our talks",
    "From what you told me about {topic}, the answer is fairly simple",
    "I had to think about {topic} for a second, but I can help",
)
_ACKS = (
    "Thanks for telling me about {topic}, it sounds like it matters to you",
    "Oh, {topic} sounds lovely, and I will keep it in mind",
    "Got it, I will remember what you said about {topic} for you",
    "Good to know about {topic}, it helps me understand your week",
)
_FOLLOWS = (
    "Is there anything else you want me to keep an eye on today?",
    "Would you like a reminder a little while before it is time?",
    "Tell me if anything changes, and I will update what I know.",
    "If you want, we can go through the rest of your week together.",
    "Just ask me later if you need the details, I am right here.",
)


def last_user_text(messages: list[dict[str, Any]]) -> str:
    return next(
        (str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), ""
    )


def spoken_words(messages: list[dict[str, Any]]) -> str:
    """The user's new words: the last paragraph of the last user message (a prompt may put
    the turn's context block, e.g. the physical state, before them)."""
    return last_user_text(messages).strip().rsplit("\n\n", 1)[-1]


def reply_text(user_text: str) -> str:
    """Two sentences, ~30 words: what a 3B model says to a person at a desk."""
    topic = topic_of(user_text)
    first = _pick(_ANSWERS if user_text.rstrip().endswith("?") else _ACKS, "a", user_text)
    return first.format(topic=topic) + ". " + _pick(_FOLLOWS, "f", user_text)


_CONJUGATE = {"am": "is", "have": "has", "do": "does", "go": "goes", "don't": "doesn't"}
_MODALS = set("can could will would should shall may might must was did had".split())
_ADVERBS = set("really also just never always usually often still only even".split())
_PRONOUNS = [
    (re.compile(r"\bI'm\b"), "the user is"),
    (re.compile(r"\bI've\b"), "the user has"),
    (re.compile(r"\bI'll\b"), "the user will"),
    (re.compile(r"\bI'd\b"), "the user would"),
    (re.compile(r"\bwe're\b", re.I), "the user's family is"),
    (re.compile(r"\bwe've\b", re.I), "the user's family has"),
    (re.compile(r"\bwe'll\b", re.I), "the user's family will"),
    (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\b(?:my|mine)\b", re.I), "the user's"),
    (re.compile(r"\bme\b", re.I), "the user"),
    (re.compile(r"\b(?:our|ours)\b", re.I), "the user's"),
    (re.compile(r"\bus\b"), "the user's family"),
    (re.compile(r"\bwe\b", re.I), "the user's family"),
    (re.compile(r"\byour\b", re.I), "Lo-Bug's"),
    (re.compile(r"\byou\b", re.I), "Lo-Bug"),
]
_I_VERB = re.compile(r"\bI\s+(?:(\w+)\s+)?([\w']+)")
_OPENING = re.compile(
    r"^(?:(?:hey|hi|hello|ok|okay|oh|so|well|actually|thanks|by the way|good "
    r"(?:morning|afternoon|evening|night))\b[,!]?\s*|lo-bug\b[,!]?\s*)+",
    re.I,
)


def _third_person_verb(verb: str) -> str:
    low = verb.lower()
    if low in _CONJUGATE:
        return _CONJUGATE[low]
    if low in _MODALS or low.endswith("ed") or low.endswith("s") or "'" in low:
        return verb
    if low.endswith("y") and low[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    if low.endswith(("sh", "ch", "x", "o")):
        return verb + "es"
    return verb + "s"


def _i_verb(match: re.Match[str]) -> str:
    first, second = match.group(1), match.group(2)
    if first is not None and first.lower() in _ADVERBS:
        return f"the user {first} {_third_person_verb(second)}"
    if first is not None:
        return f"the user {_third_person_verb(first)} {second}"
    return f"the user {_third_person_verb(second)}"


def as_fact(sentence: str) -> str | None:
    """One user sentence restated as a third-person fact about "the user"."""
    text = _OPENING.sub("", " ".join(sentence.split()).strip(" \"'"))
    if len(text) < 12 or text.endswith("?"):
        return None
    for pattern, replacement in _PRONOUNS:
        text = pattern.sub(replacement, text)
    text = _I_VERB.sub(_i_verb, text)
    text = re.sub(r"\bI\b", "the user", text)
    text = text.rstrip(".!") + "."
    if not text.lower().startswith("the user"):
        first = text.split(" ", 1)[0]
        if first.lower() in _STOP or first.lower() == "the":
            text = text[0].lower() + text[1:]
        text = "The user said that " + text
    return text[0].upper() + text[1:]


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


_KINDS = (
    ("preference", ("like", "love", "prefer", "hate", "favourite", "favorite", "enjoy")),
    (
        "event",
        (
            "tomorrow",
            "tonight",
            "saturday",
            "sunday",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "week",
            "appointment",
            "birthday",
            "o'clock",
            "going",
        ),
    ),
    (
        "personal",
        (
            "name",
            "sister",
            "brother",
            "wife",
            "husband",
            "daughter",
            "son",
            "dog",
            "cat",
            "work",
            "live",
            "mother",
            "father",
            "kids",
            "family",
        ),
    ),
)


def _fact_type(fact: str) -> str:
    low = fact.lower()
    for kind, words in _KINDS:
        if any(w in low for w in words):
            return kind
    return "knowledge"


def extract_answer(prompt: str) -> str:
    """One or two facts per exchange, from the user's statements; [] for a bare question."""
    facts: list[dict[str, str]] = []
    for line in prompt.splitlines():
        said = re.match(r"^\s*User(?:\s*\([^)]*\))?\s*:\s*(.*)$", line)
        if not said:
            continue
        found = [f for f in (as_fact(s) for s in _sentences(said.group(1))) if f]
        facts.extend({"fact": f, "type": _fact_type(f)} for f in found[:2])
    return json.dumps(facts)


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w+", text.lower()) if w not in _STOP}


def similarity(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def judge_answer(body: dict[str, Any]) -> str:
    """A label per offered pair, as a model does; only the related ones when the prompt asks
    to leave the unrelated out (as a model that follows its instructions does)."""
    system = next((m["content"] for m in body.get("messages", []) if m["role"] == "system"), "")
    omit = "Leave out the unrelated pairs" in system
    labels = [
        {
            "new": number,
            "stored": stored_id,
            "label": "same" if similarity(new, old) >= 0.6 else "unrelated",
        }
        for number, new, stored_id, old in judge_pairs(body)
    ]
    return json.dumps([x for x in labels if not (omit and x["label"] == "unrelated")])


def _said_lines(prompt: str, who: str = "User") -> list[str]:
    found = []
    for line in prompt.splitlines():
        if line.startswith(f"{who}:"):
            found.append(line.split(":", 1)[1].strip())
    return found


def _cap(text: str, max_words: int) -> str:
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words]).rstrip(",;") + "."


def summary_answer(prompt: str) -> str:
    """3-5 sentences, ~80-120 words, third person, past tense, with the specifics."""
    said = _said_lines(prompt)
    topics = list(dict.fromkeys(topic_of(s) for s in said if topic_of(s) != "that"))[:4]
    parts = [
        f"The user talked with Lo-Bug about {', '.join(topics) or 'everyday things'} "
        "over a short conversation at the desk."
    ]
    facts = [f for f in (as_fact(s) for line in said for s in _sentences(line)) if f]
    for fact in facts[: 3 if len(facts) > 3 else len(facts)]:
        parts.append("They mentioned that " + fact[0].lower() + fact[1:])
    parts.append(
        "Lo-Bug answered each question briefly, offered reminders, and kept track of the "
        "plans and names the user brought up so they could come back to them later."
    )
    text = " ".join(parts)
    if len(text.split()) < 80:
        text += (
            " The user seemed relaxed and in a good mood, and the conversation ended with the "
            "user going back to what they were doing at home."
        )
    return _cap(text, 120)


def distill_answer(prompt: str) -> str:
    """The base memory: four headings with short bullets, at most ~350 words."""
    facts = re.findall(r"^- (.+)$", prompt.split("Known facts:", 1)[-1], re.M)
    summaries = re.findall(r"^\d+\. (.+)$", prompt, re.M)
    current = prompt.split("Current base memory:", 1)[-1].split("New conversation", 1)[0]
    kept = [b for b in re.findall(r"^- (.+)$", current, re.M) if "nothing" not in b.lower()]
    sections: dict[str, list[str]] = {
        "User Profile": [],
        "Preferences": [],
        "Ongoing Topics": [],
        "Key History": [],
    }
    route = {"personal": "User Profile", "preference": "Preferences", "event": "Ongoing Topics"}
    for fact in list(dict.fromkeys(kept + facts)):
        sections[route.get(_fact_type(fact), "User Profile")].append(fact)
    for summary in summaries:
        sections["Key History"].append(_sentences(summary)[0] if _sentences(summary) else summary)
    lines: list[str] = []
    words = 0
    for heading, bullets in sections.items():
        lines.append(f"{heading}:")
        for bullet in bullets[:8] or ["(none yet)"]:
            words += len(bullet.split())
            if words > 340:
                break
            lines.append(f"- {bullet}")
    return "\n".join(lines)


def reflect_answer(prompt: str) -> str:
    facts = re.findall(r"^- (.+)$", prompt, re.M)
    topics = list(dict.fromkeys(topic_of(f) for f in facts if topic_of(f) != "that"))[:3]
    return (
        f"This week the user talked mostly about {', '.join(topics) or 'everyday things'}. "
        "Family plans and small household routines seem to matter most to the user right now. "
        "It may be worth following up on the plans the user mentioned before the weekend."
    )


def insight_answer(prompt: str) -> str:
    insight = {
        "summary": "The user likes to share household plans in short sentences and "
        "expects brief, practical answers.",
        "tags": ["style"],
        "importance": 2,
    }
    return json.dumps({"insights": [insight]})


def session_answer(prompt: str) -> str:
    """Seed 002's record of an ended session: request, outcome, decisions, open items, each a
    sentence or two restating what was said (~100 tokens of JSON)."""
    said = _said_lines(prompt)
    topics = list(dict.fromkeys(topic_of(s) for s in said if topic_of(s) != "that"))[:3]
    facts = [f for f in (as_fact(s) for line in said for s in _sentences(line)) if f]
    asked = [s for s in said if s.rstrip().endswith("?")]
    record = {
        "request": f"The user told Lo-Bug about {', '.join(topics) or 'everyday things'}"
        + (f" and asked: {asked[0]}" if asked else "."),
        "outcome": "Lo-Bug answered each question briefly and kept the plans and names.",
        "decisions": facts[:2],
        "open_items": [f"Follow up: {asked[-1]}"] if len(asked) > 1 else [],
    }
    return json.dumps(record)


def answer(task: str, body: dict[str, Any]) -> str:
    """What the model says to this request."""
    messages = body.get("messages") or []
    prompt = last_user_text(messages)
    if task == CHAT:
        text = reply_text(spoken_words(messages))
        if body.get("format"):
            return json.dumps({"action": "RESPOND", "response": text})
        return text
    if task == WARM:
        return ""
    if task == "extract":
        return extract_answer(prompt)
    if task == "judge":
        return judge_answer(body)
    if task == "summarize":
        return summary_answer(prompt)
    if task == "distill":
        return distill_answer(prompt)
    if task == "reflect":
        return reflect_answer(prompt)
    if task == "insight":
        return insight_answer(prompt)
    if task == "session":
        return session_answer(prompt)
    return "[]"


# -- the model: one slot, one cache --------------------------------------------------------------
@dataclass
class Options:
    prefill_rate: float = 30.0  # tokens/s
    gen_rate: float = 5.0  # tokens/s
    embed_rate: float = 200.0  # tokens/s of an embedding model's prefill
    embed_lane: str = "shared"  # shared: through the chat slot (CPU shared) | separate
    speedup: float = 1.0
    embed_dim: int = 768
    models: tuple[str, ...] = DEFAULT_MODELS
    step_s: float = 0.02  # wall-clock granularity of the sleeps (abort checks)


@dataclass
class Record:
    id: int
    path: str
    task: str
    memory: bool
    arrival: float
    prompt_tokens: int = 0
    cached: int = 0  # reused from the KV cache
    prefilled: int = 0
    generated: int = 0
    start: float | None = None
    end: float | None = None
    aborted: bool = False
    aborted_in: str | None = None  # queued | prefill | generate
    wait_s: float = 0.0  # in the queue
    wait_memory_s: float = 0.0  # of that, while memory work held the slot
    before: int | None = None  # id of the request served just before this one
    before_task: str | None = None
    before_memory: bool = False
    stream: bool = False


class Aborted(Exception):
    """The client went away."""


@dataclass
class Model:
    options: Options
    cache: list[str] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    prompts: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    t0: float = field(default_factory=time.monotonic)
    slot: asyncio.Lock = field(default_factory=asyncio.Lock)
    embed_slot: asyncio.Lock = field(default_factory=asyncio.Lock)
    current: Record | None = None
    last_served: Record | None = None

    def now(self) -> float:
        """The model clock: seconds since t0, unscaled."""
        return (time.monotonic() - self.t0) * self.options.speedup

    def reset(self) -> None:
        self.cache = []
        self.records = []
        self.prompts = {}
        self.t0 = time.monotonic()
        self.last_served = None

    def new_record(self, path: str, task: str, **kw: Any) -> Record:
        record = Record(
            id=len(self.records) + 1,
            path=path,
            task=task,
            memory=task not in FOREGROUND,
            arrival=self.now(),
            **kw,
        )
        self.records.append(record)
        return record

    async def sleep(
        self, model_s: float, request: web.Request | None, *, since: float | None = None
    ) -> None:
        """Sleep `model_s` model seconds (scaled), checking the client is still there; with
        `since` (a wall-clock monotonic time), until `model_s` after it, so a run of sleeps
        (one per generated token) does not add up the event loop's lateness."""
        deadline = (time.monotonic() if since is None else since) + model_s / self.options.speedup
        while True:
            if request is not None and _gone(request):
                raise Aborted
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(left, self.options.step_s))

    @contextlib.asynccontextmanager
    async def serve(self, record: Record, lock: asyncio.Lock | None = None) -> Any:
        """Hold the slot for `record` (FIFO); note the wait and who was served before."""
        lock = lock or self.slot
        try:
            await lock.acquire()
        except asyncio.CancelledError:
            record.aborted, record.aborted_in, record.end = True, "queued", self.now()
            raise
        try:
            record.start = self.now()
            record.wait_s = record.start - record.arrival
            record.wait_memory_s = sum(
                _overlap(other, record.arrival, record.start)
                for other in self.records
                if other.memory and other is not record
            )
            if lock is self.slot:
                if self.last_served is not None:
                    record.before = self.last_served.id
                    record.before_task = self.last_served.task
                    record.before_memory = self.last_served.memory
                self.current = record
            yield
        finally:
            if record.end is None:
                record.end = self.now()
            if lock is self.slot:
                self.current = None
                self.last_served = record
            lock.release()

    async def prefill(self, record: Record, tokens: list[str], request: web.Request) -> None:
        """Reuse the longest common prefix, prefill the rest; an abort keeps what was done."""
        record.prompt_tokens = len(tokens)
        reuse = min(common_prefix(self.cache, tokens), max(0, len(tokens) - 1))
        record.cached = reuse
        todo = len(tokens) - reuse
        self.cache = tokens[:reuse]
        started = time.monotonic()
        try:
            await self.sleep(todo / self.options.prefill_rate, request)
        except (Aborted, asyncio.CancelledError):
            done = min(todo, int(self._elapsed(started) * self.options.prefill_rate))
            self.cache = tokens[: reuse + done]
            record.prefilled = done
            record.aborted, record.aborted_in = True, "prefill"
            raise
        self.cache = list(tokens)
        record.prefilled = todo

    def _elapsed(self, started: float) -> float:
        return (time.monotonic() - started) * self.options.speedup


def _overlap(other: Record, a: float, b: float) -> float:
    if other.start is None:
        return 0.0
    end = other.end if other.end is not None else b
    return max(0.0, min(end, b) - max(other.start, a))


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


MODEL_KEY = web.AppKey("model", Model)


def build_app(options: Options | None = None) -> web.Application:
    model = Model(options or Options())
    app = web.Application(client_max_size=64 * 1024**2)
    app[MODEL_KEY] = model

    def known(name: str) -> bool:
        wanted = name if ":" in name else f"{name}:latest"
        return wanted in model.options.models or name in model.options.models

    def missing(name: str) -> web.Response:
        return web.json_response(
            {"error": f"model '{name}' not found, try pulling it first"}, status=404
        )

    async def version(request: web.Request) -> web.Response:
        return web.json_response({"version": "0.12.0"})

    async def tags(request: web.Request) -> web.Response:
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())
        models = [
            {
                "name": m,
                "model": m,
                "modified_at": now,
                "size": 2_019_393_189,
                "digest": hashlib.sha256(m.encode()).hexdigest(),
                "details": {"format": "gguf", "family": "llama", "parameter_size": "3.2B"},
            }
            for m in model.options.models
        ]
        return web.json_response({"models": models})

    async def ps(request: web.Request) -> web.Response:
        loaded = [
            {"name": m, "model": m, "size": 3_000_000_000, "expires_at": "2999-01-01T00:00:00Z"}
            for m in model.options.models[:1]
        ]
        return web.json_response({"models": loaded})

    async def chat(request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"error": "invalid JSON body"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": "invalid JSON body"}, status=400)
        name = str(body.get("model", ""))
        if not known(name):
            return missing(name)
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        task = classify(body)
        stream = bool(body.get("stream", True))
        record = model.new_record("/api/chat", task, stream=stream)
        model.prompts[record.id] = messages
        content = answer(task, body)
        limit = (body.get("options") or {}).get("num_predict")
        generated = tokenize(content)
        if isinstance(limit, int) and limit >= 0 and len(generated) > limit:
            generated = generated[:limit]
            content = _detokenize(content, limit)
        return await _run_chat(request, model, record, messages, (name, content, generated), stream)

    async def embed(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return web.json_response({"error": "invalid JSON body"}, status=400)
        name = str(body.get("model", "")) if isinstance(body, dict) else ""
        if not known(name):
            return missing(name)
        legacy = request.path == "/api/embeddings"
        texts = body.get("prompt" if legacy else "input", "")
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
        record = model.new_record(request.path, EMBED)
        tokens = sum(len(tokenize(t)) + 2 for t in texts)
        record.prompt_tokens = record.prefilled = tokens
        lock = model.slot if model.options.embed_lane == "shared" else model.embed_slot
        started = time.monotonic()
        try:
            async with model.serve(record, lock):
                await model.sleep(tokens / model.options.embed_rate, request)
        except (Aborted, asyncio.CancelledError):
            record.aborted = True
            record.aborted_in = record.aborted_in or "prefill"
            record.prefilled = min(tokens, int(model._elapsed(started) * model.options.embed_rate))
            raise
        vectors = [fake_embedding(t, model.options.embed_dim) for t in texts]
        duration = int(((record.end or 0) - (record.start or 0)) * 1e9)
        if legacy:
            return web.json_response({"embedding": vectors[0] if vectors else []})
        return web.json_response(
            {
                "model": name,
                "embeddings": vectors,
                "total_duration": duration,
                "load_duration": 0,
                "prompt_eval_count": tokens,
            }
        )

    async def stats(request: web.Request) -> web.Response:
        busy = model.current is not None
        last_end = max((r.end for r in model.records if r.end is not None), default=0.0)
        return web.json_response(
            {
                "t0_monotonic": model.t0,
                "now": model.now(),
                "speedup": model.options.speedup,
                "prefill_rate": model.options.prefill_rate,
                "gen_rate": model.options.gen_rate,
                "embed_rate": model.options.embed_rate,
                "busy": busy,
                "in_flight": sum(1 for r in model.records if r.end is None),
                "idle_s": 0.0 if busy else max(0.0, model.now() - last_end),
                "cache_tokens": len(model.cache),
                "records": [asdict(r) for r in model.records],
            }
        )

    async def prompts(request: web.Request) -> web.Response:
        return web.json_response(
            [
                {"id": r.id, "task": r.task, "messages": model.prompts[r.id]}
                for r in model.records
                if r.id in model.prompts
            ]
        )

    async def reset(request: web.Request) -> web.Response:
        model.reset()
        return web.json_response({"status": "ok", "t0_monotonic": model.t0})

    app.router.add_get("/api/version", version)
    app.router.add_get("/api/tags", tags)
    app.router.add_get("/api/ps", ps)
    app.router.add_post("/api/chat", chat)
    app.router.add_post("/api/embed", embed)
    app.router.add_post("/api/embeddings", embed)
    app.router.add_get("/_stats", stats)
    app.router.add_get("/_prompts", prompts)
    app.router.add_post("/_reset", reset)
    return app


def _detokenize(content: str, limit: int) -> str:
    """The start of `content` that holds its first `limit` tokens."""
    if limit <= 0:
        return ""
    count = 0
    for match in _PIECES.finditer(content):
        piece = match.group(0)
        count += -(-len(piece) // MAX_PIECE) if not piece.startswith("<|") else 1
        if count >= limit:
            return content[: match.end()]
    return content


async def _run_chat(
    request: web.Request,
    model: Model,
    record: Record,
    messages: list[dict[str, Any]],
    reply: tuple[str, str, list[str]],
    stream: bool,
) -> web.StreamResponse:
    name, content, generated = reply
    tokens = prompt_tokens(messages)
    opts = model.options
    response: web.StreamResponse | None = None
    base = {"model": name}
    done_pieces = 0
    try:
        async with model.serve(record):
            await model.prefill(record, tokens, request)
            prefilled_at = model.now()
            if stream:
                response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
                await response.prepare(request)
            pieces = _pieces_of(content, generated)
            generating = time.monotonic()
            for i, piece in enumerate(pieces, 1):
                await model.sleep(i / opts.gen_rate, request, since=generating)
                done_pieces += 1
                if response is not None:
                    chunk = {
                        **base,
                        "created_at": _iso(),
                        "message": {"role": "assistant", "content": piece},
                        "done": False,
                    }
                    await response.write((json.dumps(chunk) + "\n").encode())
            model.cache = tokens + generated
            record.generated = len(generated)
            end = model.now()
    except (Aborted, asyncio.CancelledError, ConnectionResetError):
        if not record.aborted:  # aborted while generating: keep what was generated
            record.aborted, record.aborted_in = True, "generate"
            record.generated = done_pieces
            model.cache = tokens + generated[:done_pieces]
        if response is not None:
            with contextlib.suppress(Exception):
                request.transport and request.transport.abort()  # type: ignore[func-returns-value]
        raise asyncio.CancelledError from None
    final = {
        **base,
        "created_at": _iso(),
        "done": True,
        "done_reason": "stop",
        "total_duration": int((end - record.arrival) * 1e9),
        "load_duration": 0,
        "prompt_eval_count": record.prefilled,
        "prompt_eval_duration": int((prefilled_at - (record.start or 0)) * 1e9),
        "eval_count": record.generated,
        "eval_duration": int((end - prefilled_at) * 1e9),
    }
    if response is not None:
        final["message"] = {"role": "assistant", "content": ""}
        await response.write((json.dumps(final) + "\n").encode())
        await response.write_eof()
        return response
    return web.json_response({**final, "message": {"role": "assistant", "content": content}})


def _pieces_of(content: str, generated: list[str]) -> list[str]:
    """The content cut into as many text pieces as it has tokens (joined, they are it)."""
    if not generated:
        return []
    spans: list[tuple[int, int]] = []
    for match in _PIECES.finditer(content):
        piece = match.group(0)
        if len(piece) > MAX_PIECE and not piece.startswith("<|"):
            spans.extend(
                (match.start() + i, match.start() + min(i + MAX_PIECE, len(piece)))
                for i in range(0, len(piece), MAX_PIECE)
            )
        else:
            spans.append((match.start(), match.end()))
    spans = spans[: len(generated)]
    out = []
    for i, (start, _end) in enumerate(spans):
        begin = 0 if i == 0 else start
        stop = spans[i + 1][0] if i + 1 < len(spans) else len(content)
        out.append(content[begin:stop])
    return out


def _iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime())


def options_from(args: argparse.Namespace) -> Options:
    return Options(
        prefill_rate=args.prefill_rate,
        gen_rate=args.gen_rate,
        embed_rate=args.embed_rate,
        embed_lane=args.embed_lane,
        speedup=args.speedup,
        embed_dim=args.embed_dim,
        models=tuple(args.models.split(",")) if args.models else DEFAULT_MODELS,
    )


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prefill-rate", type=float, default=30.0, help="tokens/s (30)")
    parser.add_argument("--gen-rate", type=float, default=5.0, help="tokens/s (5)")
    parser.add_argument("--embed-rate", type=float, default=200.0, help="tokens/s (200)")
    parser.add_argument(
        "--embed-lane",
        choices=("shared", "separate"),
        default="shared",
        help="embeddings through the chat slot (shared CPU) or beside it",
    )
    parser.add_argument("--speedup", type=float, default=1.0, help="divide every sleep by it")
    parser.add_argument("--embed-dim", type=int, default=768)
    parser.add_argument("--models", default="", help="comma-separated names for /api/tags")


async def serve(host: str, port: int, options: Options) -> None:
    runner = web.AppRunner(build_app(options), access_log=None, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    print(f"pi_llm on http://{host}:{port} (speedup {options.speedup})", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11500)
    add_options(parser)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port, options_from(args)))


if __name__ == "__main__":
    main()
