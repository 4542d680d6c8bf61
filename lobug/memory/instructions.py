"""The memory prompts: fact extraction, summarisation, distillation (seed 004 §4.2), and the
judgement of new facts against stored ones ("newer wins"); and how their JSON answers are read.

Each builder returns chat messages ready for `LLMClient.chat`; no state, no side effects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lobug.llm.ask import InvalidOutput, strip_reasoning
from lobug.llm.replies import find_json, json_items

Message = dict[str, str]


def answer_items(
    raw: str, *, is_item: Callable[[dict[str, Any]], bool], list_keys: Sequence[str]
) -> list[Any]:
    """The items of a model's JSON list answer however it wrapped them (`json_items`), fences,
    reasoning and prose around it tolerated; InvalidOutput when there is no JSON or it is of
    another shape."""
    try:
        value = find_json(strip_reasoning(raw))
    except ValueError:
        raise InvalidOutput("no JSON in the answer", raw) from None
    items = json_items(value, is_item=is_item, list_keys=list_keys)
    if items is None:
        raise InvalidOutput(f"JSON of an unexpected shape ({type(value).__name__})", raw)
    return items


# Extraction and judging, the two calls memory makes for every exchange, and the summary that
# follows a conversation share one system message and differ only in the user message (issue
# 22): a model server that keeps the last prompt's cache (Ollama, llama.cpp: one slot) re-reads
# only the exchange, the pairs or the transcript, not the instructions, however they alternate.
# The task is named on the user message's first line.
MEMORY_SYSTEM = """\
You keep the long-term memory about the user for Lo-Bug, their voice assistant. Each request \
names its task on its first line; follow that task's rules only.

Task "extract": extract long-term memories about the user from an exchange between the user \
and Lo-Bug, or from several (oldest first, numbered, a blank line apart).
- Write every fact as a standalone sentence in the third person about "the user", \
understandable without the conversation: "The user's name is Alex.", "The user works at NASA."
- Be selective. Keep what is worth remembering next week: who the user is, people and pets in \
their life, preferences, plans, events, things they know or own. Skip greetings, chitchat, \
filler, questions that carry no information, and anything only Lo-Bug said.
- One fact per sentence. No "I", "you" or "we".
- How the user likes a task done (a routine, a list of steps, a preferred way of doing \
something) is one item of type "procedural", written as numbered imperative steps: \
"How the user likes to make coffee: 1) grind the beans; 2) pour slowly."
- "type" is one of: personal, preference, knowledge, event, procedural.
- Output only a JSON array, no commentary: [{"fact": "...", "type": "personal"}]. \
Output [] when nothing is worth remembering.
- With several exchanges, give each fact the number of the exchange it comes from: \
[{"fact": "...", "type": "personal", "exchange": 2}].

Task "judge": compare new facts about the user with facts already stored in the memory, and \
label the pairs you are given.
- "same": both say the same thing, perhaps in other words or with a small detail added.
- "update": the new fact replaces the stored one because something changed: "The user now \
drives a Tesla." after "The user drives a Honda.".
- "contradiction": both cannot be true at once; the new fact is the one to believe.
- "unrelated": they are about different things, or both can be true together.
- Output only a JSON array with one object per pair that is same, update or contradiction, no \
commentary: [{"new": 1, "stored": 12, "label": "update"}]. "new" is the new fact's number and \
"stored" the stored fact's number, exactly as given. Leave out the unrelated pairs; output [] \
when every pair is unrelated.

Task "summarize": summarise a conversation between the user and Lo-Bug for Lo-Bug's long-term \
memory.
- Write one paragraph of 3-5 sentences, in the third person ("The user ...", "Lo-Bug ...") and \
the past tense. Keep the specifics: names, dates, times, numbers, places, decisions.
- Output only the paragraph: no title, no bullet points, no preamble."""

EXTRACT_TASK = 'Task "extract". The exchange:'
EXTRACT_MANY_TASK = 'Task "extract". The exchanges, oldest first (give each fact its "exchange"):'
JUDGE_TASK = 'Task "judge". The pairs:'
SUMMARY_TASK = 'Task "summarize". The conversation:'

EXTRACTION_REMINDER = (
    "That was not a valid answer. Reply again with only the JSON array and nothing else, e.g. "
    '[{"fact": "The user likes green tea.", "type": "preference"}], or [] when nothing is worth '
    "remembering. No prose, no code fences."
)

SUMMARY_REMINDER = (
    "Reply again with only the summary paragraph: 3-5 plain sentences, third person, past tense. "
    "No JSON, no list, no preamble."
)

DISTILL_SYSTEM = """\
You maintain Lo-Bug's base memory: one living document about the user that is always in the \
assistant's prompt.

Integrate the new conversation summaries and facts into the current document. Keep what is \
still true, update what changed, drop what is trivial. Organise it under exactly these four \
headings, each followed by short "- " bullets, the most important first:
User Profile:
Preferences:
Ongoing Topics:
Key History:
At most {max_words} words. Output only the document."""

DISTILL_REMINDER = (
    "Reply again with only the document, under the headings User Profile:, Preferences:, "
    "Ongoing Topics: and Key History:, each with short '- ' bullets."
)

DISTILL_HEADINGS = ("User Profile", "Preferences", "Ongoing Topics", "Key History")

JUDGE_REMINDER = (
    "That was not a valid answer. Reply again with only the JSON array, one object per pair "
    'that is not unrelated, e.g. [{"new": 1, "stored": 12, "label": "same"}], or [] when every '
    "pair is unrelated. Labels: same, update, contradiction. No prose, no code fences."
)

# Seed 002's session summary (memory/upkeep/sessions.py): one call per ended session.
SESSION_SYSTEM = """\
You write the record of one finished conversation between the user and Lo-Bug, their voice \
assistant, for Lo-Bug's memory. Keep the specifics: names, dates, times, numbers, places.
- "request": what the user wanted in this conversation, in one sentence ("The user asked ...").
- "outcome": what came of it, in one or two sentences, past tense.
- "decisions": what the user decided or agreed to, one short sentence each; [] when nothing.
- "open_items": what was left to do, answer or follow up, one short sentence each; [] when \
nothing.
Write in the third person ("The user ...", "Lo-Bug ..."). Output only a JSON object, no \
commentary: {"request": "...", "outcome": "...", "decisions": ["..."], "open_items": ["..."]}"""

SESSION_REMINDER = (
    "That was not a valid answer. Reply again with only the JSON object, e.g. "
    '{"request": "The user asked for a pasta recipe.", "outcome": "Lo-Bug gave one.", '
    '"decisions": [], "open_items": ["The user will buy basil."]}. No prose, no code fences.'
)

ASSISTANT_NAME = "Lo-Bug"

# How the prompts are told apart (the fake Ollama and tests route on it).
TASKS = {"distill": DISTILL_SYSTEM[:40], "session": SESSION_SYSTEM[:40]}  # by system message
SHARED_TASKS = {  # by the user message's first line
    task: f'Task "{task}".' for task in ("extract", "judge", "summarize")
}


def extraction_messages(exchanges: Sequence[tuple[str, str | None]]) -> list[Message]:
    """One exchange (user's words, Lo-Bug's reply or None), or several of one conversation,
    oldest first (lobug.memory.extract.batch)."""
    shown = []
    for number, (user_text, assistant_text) in enumerate(exchanges, 1):
        # Several are numbered: the model names the one each fact came from (extract.batch).
        exchange = f"Exchange {number}:\n" if len(exchanges) > 1 else ""
        exchange += f"User: {user_text}"
        if assistant_text:
            exchange += f"\n{ASSISTANT_NAME}: {assistant_text}"
        shown.append(exchange)
    task = EXTRACT_TASK if len(shown) == 1 else EXTRACT_MANY_TASK
    return [
        {"role": "system", "content": MEMORY_SYSTEM},
        {"role": "user", "content": "\n".join([task, "\n\n".join(shown)])},
    ]


def summarize_conversation_messages(transcript: str) -> list[Message]:
    return [
        {"role": "system", "content": MEMORY_SYSTEM},
        {"role": "user", "content": f"{SUMMARY_TASK}\n{transcript}"},
    ]


def session_summary_messages(transcript: str) -> list[Message]:
    """The record of one ended session (`SESSION_SYSTEM`) from its transcript."""
    return [
        {"role": "system", "content": SESSION_SYSTEM},
        {"role": "user", "content": f"The conversation:\n{transcript}"},
    ]


def bullets(items: Sequence[str]) -> str:
    """Items as a prompt's "- " list, or "(none)": the model is told the list is empty."""
    return "\n".join(f"- {item}" for item in items) or "(none)"


def distill_base_memory_messages(
    current_base: str, summaries: Sequence[str], facts: Sequence[str], max_words: int
) -> list[Message]:
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(summaries, 1)) or "(none)"
    known = bullets(facts)
    body = (
        f"Current base memory:\n{current_base.strip() or '(empty)'}\n\n"
        f"New conversation summaries, oldest first:\n{numbered}\n\n"
        f"Known facts:\n{known}"
    )
    return [
        {"role": "system", "content": DISTILL_SYSTEM.format(max_words=max_words)},
        {"role": "user", "content": body},
    ]


def judge_messages(
    questions: Sequence[tuple[int, str, Sequence[tuple[int, str]]]],
) -> list[Message]:
    """`questions`: (new fact number, its text, [(stored fact id, its text), …]) — every
    (new, stored) pair is to be labelled."""
    lines: list[str] = []
    for number, text, stored in questions:
        lines.append(f"New fact {number}: {text}")
        lines.extend(f"  stored {memory_id}: {old}" for memory_id, old in stored)
    return [
        {"role": "system", "content": MEMORY_SYSTEM},
        {"role": "user", "content": "\n".join([JUDGE_TASK, *lines])},
    ]


def task_of(messages: Sequence[Message]) -> str | None:
    """`extract`, `summarize`, `distill` or `judge` for a memory prompt; None for anything else."""
    system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    if system == MEMORY_SYSTEM:
        asked = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
        return next((t for t, line in SHARED_TASKS.items() if asked.startswith(line)), None)
    return next((task for task, opening in TASKS.items() if system.startswith(opening)), None)
