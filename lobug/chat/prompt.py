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


def load_personality(path: Path | None) -> str:
    if path is None:
        return resources.files("lobug.chat").joinpath("personality.txt").read_text("utf-8").strip()
    return Path(path).read_text("utf-8").strip()


def build_messages(
    personality: str,
    memory_sections: list[str],
    sensor_line: str | None,
    history: list[Message],
) -> list[Message]:
    """The seed's order (§2.3); empty sections are left out entirely."""
    parts = [personality, REPLY_FORMAT]
    parts += [section for section in memory_sections if section.strip()]
    if sensor_line:
        parts.append(sensor_line)
    system = {"role": "system", "content": "\n\n".join(parts)}
    return [system, *history]
