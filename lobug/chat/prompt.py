"""Prompt assembly: personality → memory sections → physical state → working-memory messages."""

from __future__ import annotations

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
    memory_sections: list[str],
    sensor_line: str | None,
    history: list[Message],
    reply_format: str = REPLY_FORMAT,
) -> list[Message]:
    """The seed's order (§2.3); empty sections are left out entirely."""
    parts = [personality, reply_format]
    parts += [section for section in memory_sections if section.strip()]
    if sensor_line:
        parts.append(sensor_line)
    system = {"role": "system", "content": "\n\n".join(parts)}
    return [system, *history]
