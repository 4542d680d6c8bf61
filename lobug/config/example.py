"""systemd/lobug.toml.example, rendered from the models: every key with its default, and its
`Field(description=...)` as the comment. `python -m lobug.config --example` prints it; a test
fails when the checked-in copy differs."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from pydantic.fields import FieldInfo

from lobug.config.fields import field_infos, record_type
from lobug.config.models import SECTIONS

WIDTH = 100
COMMENT_COLUMN = 30
HEADER = """\
Lo-Bug configuration. scripts/install-service copies this to /etc/lobug/lobug.toml once and
never overwrites it. Every key below shows its default; delete or comment out what you do
not change. Precedence: defaults < this file < LOBUG_<SECTION>_<KEY> environment variables
(e.g. LOBUG_OLLAMA_CHAT_MODEL) < command-line flags. After editing: systemctl restart lobug
Generated from lobug/config/models.py by `python -m lobug.config --example`: edit it there."""


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string


def _comment(text: str, prefix: str = "# ") -> list[str]:
    return textwrap.wrap(text, WIDTH - len(prefix), initial_indent=prefix, subsequent_indent=prefix)


def _key(name: str, info: FieldInfo, prefix: str = "") -> list[str]:
    """`key = default  # description`, or the description above when the line gets long.
    A key unset by default (it has `examples`) is shown commented out with its example."""
    if info.examples:
        line = f"# {name} = {toml_value(info.examples[0])}"
    else:
        line = f"{prefix}{name} = {toml_value(info.get_default(call_default_factory=True))}"
    text = info.description
    if not text:
        return [line]
    trailing = f"{line.ljust(COMMENT_COLUMN - 1)} # {text}"
    if len(trailing) <= WIDTH:
        return [trailing]
    return [*_comment(text), line]


def _section(name: str, cls: type) -> list[str]:
    fields = field_infos(cls)
    lines = [f"[{name}]"]
    if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
        lines += _comment(" ".join(cls.__doc__.split()))
    records = []
    for key, info in fields.items():
        record = record_type(info.annotation)
        if record is None:
            lines += _key(key, info)
        else:  # a list of tables comes after the section's keys
            records.append((key, info, record))
    for key, info, record in records:
        lines += _comment(info.description or "")
        lines.append(f"# [[{name}.{key}]]")
        for sub, sub_info in field_infos(record).items():
            lines += _key(sub, sub_info, prefix="# ")
    return lines


def render_example() -> str:
    out = [f"# {line}" for line in HEADER.splitlines()]
    for name, cls in SECTIONS.items():
        out += ["", *_section(name, cls)]
    return "\n".join(out) + "\n"
