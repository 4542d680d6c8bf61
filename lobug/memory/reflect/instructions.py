"""The prompts of the weekly reflection (seed 003) and the theory-of-mind insights (seed 001 §3)."""

from __future__ import annotations

from collections.abc import Sequence

from lobug.memory.instructions import ASSISTANT_NAME, Message, bullets

REFLECT_SYSTEM = f"""\
You write the weekly reflection of {ASSISTANT_NAME}, a voice assistant, about its user: a short \
look back over what the user shared this week.

Read the facts learned this week and the week's conversations. Write one paragraph of 3-6 \
sentences in the third person ("The user ..."): the themes of the week, what seems to matter \
most to the user now, what changed, and what may be worth following up. Do not invent \
anything that is not in the notes. Output only the paragraph: no title, no list, no preamble."""

REFLECT_REMINDER = (
    "Reply again with only the reflection paragraph: 3-6 plain sentences in the third person "
    "about the user. No JSON, no list, no preamble."
)

INSIGHT_SYSTEM = f"""\
You observe how the user talks with {ASSISTANT_NAME}, their voice assistant, and note what \
that says about them: how they like to communicate, what they care about, how their trust or \
preferences change.

Write 1 to 3 insights. Each is one sentence in the third person about "the user", at most 280 \
characters, grounded in the notes; never write about the assistant itself. Importance is 1 \
(minor) to 5 (essential). Output only JSON: \
{{"insights": [{{"summary": "The user prefers short answers in the morning.", \
"tags": ["style"], "importance": 2}}]}}. Output {{"insights": []}} when nothing stands out."""

INSIGHT_REMINDER = (
    'That was not a valid answer. Reply again with only the JSON object, e.g. {"insights": '
    '[{"summary": "The user values punctuality.", "tags": ["values"], "importance": 2}]}, or '
    '{"insights": []}. Third person, at most 3, no prose.'
)

# How the prompts are told apart (the fake Ollama and tests route on it).
TASKS = {"reflect": REFLECT_SYSTEM[:40], "insight": INSIGHT_SYSTEM[:40]}


def reflection_messages(facts: Sequence[str], summaries: Sequence[str]) -> list[Message]:
    body = (
        f"Facts learned this week:\n{bullets(facts)}\n\n"
        f"Conversations this week (summaries, then the user's own words):\n{bullets(summaries)}"
    )
    return [{"role": "system", "content": REFLECT_SYSTEM}, {"role": "user", "content": body}]


def insight_messages(facts: Sequence[str], activity: Sequence[str], snippet: str) -> list[Message]:
    body = (
        f"Recent activity:\n{bullets(activity)}\n\nNew facts:\n{bullets(facts)}\n\n"
        f"Recent conversation:\n{snippet.strip() or '(none)'}"
    )
    return [{"role": "system", "content": INSIGHT_SYSTEM}, {"role": "user", "content": body}]


def task_of(messages: Sequence[Message]) -> str | None:
    """`reflect` or `insight` for one of these prompts; None for anything else."""
    system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    return next((task for task, opening in TASKS.items() if system.startswith(opening)), None)
