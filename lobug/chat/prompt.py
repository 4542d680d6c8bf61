"""Prompt assembly in the order that keeps the model's prompt cache (issue 22): what stays the
same from turn to turn first (the system message), then the working-memory window, then this
turn's sections in the last user message, right before the user's new words (the layout:
docs/architecture.md, "The turn"). Seed 004 §2.3's sections and wording, new places."""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from lobug.chat.working_memory import Message

REPLY_FORMAT = (
    "Answer with one JSON object and nothing else: "
    '{"action": "RESPOND", "response": "<what you say out loud>"} when you should speak, or '
    '{"action": "IGNORE", "response": ""} when the input is noise or needs no answer.'
)

# The OpenAI door (lobug.openai_api) streams the model's words to the client as they come, so
# it asks for what a speaker or a chat window shows as is: prose, no JSON envelope to unwrap.
PROSE_FORMAT = (
    "Answer in plain conversational sentences, the way you would say them out loud: "
    "no JSON, no markdown, no code blocks."
)


def load_personality(path: Path | None) -> str:
    if path is None:
        return resources.files("lobug.chat").joinpath("personality.txt").read_text("utf-8").strip()
    return Path(path).read_text("utf-8").strip()


def build_messages(
    personality: str,
    stable_sections: Sequence[str],
    history: Sequence[Message],
    turn_sections: Sequence[str],
    reply_format: str = REPLY_FORMAT,
) -> list[Message]:
    """`history` ends with the user's new words; empty sections are left out entirely."""
    parts = [personality, reply_format, *(s for s in stable_sections if s.strip())]
    messages: list[Message] = [{"role": "system", "content": "\n\n".join(parts)}, *history]
    block = [s for s in turn_sections if s.strip()]
    if not block:
        return messages
    last = messages[-1]
    if last["role"] == "user" and len(messages) > 1:
        messages[-1] = {"role": "user", "content": "\n\n".join([*block, last["content"]])}
    else:  # no user words to put it before: the turn's context closes the system message
        messages[0] = {"role": "system", "content": "\n\n".join([*parts, *block])}
    return messages
