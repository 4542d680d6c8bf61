"""The value types config fields share: how a TOML or env value becomes the field's value."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BeforeValidator, ConfigDict, PlainSerializer
from pydantic import StringConstraints as Length
from pydantic.fields import FieldInfo


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


# Every section: immutable, unknown keys refused, 8080 accepted where a string is expected.
SECTION = ConfigDict(extra="forbid", coerce_numbers_to_str=True)
Trust = Literal["full", "inner", "familiar", "public"]
TRUST_LEVELS: tuple[str, ...] = get_args(Trust)  # stores per level: lobug.access
MIN_TOKEN_CHARS = 16


def redact(secret: str | None) -> str | None:
    """How a secret is shown: enough to tell tokens apart, too little to use one."""
    if secret is None:
        return None
    return secret[:4] + "…" if len(secret) >= 8 else "…"


def field_infos(cls: Any) -> dict[str, FieldInfo]:
    """A config section's fields as pydantic sees them (default, description, bounds); {} for
    anything else."""
    return getattr(cls, "__pydantic_fields__", {})


def record_type(annotation: Any) -> type | None:
    """TokenConfig for `tuple[TokenConfig, ...]` (a list of tables), else None."""
    for arg in typing.get_args(annotation):
        found = arg if dataclasses.is_dataclass(arg) else record_type(arg)
        if isinstance(found, type):
            return found
    return None


def _blank_is_none(value: Any) -> Any:
    """`LOBUG_SPEECH_LANGUAGE=` (or `none`) unsets an optional key."""
    if isinstance(value, str) and value.strip().lower() in ("", "none"):
        return None
    return value


def _expand(path: Path | None) -> Path | None:
    return None if path is None else path.expanduser()


def _comma_list(value: Any) -> Any:
    """`a, b` from the environment, or a TOML list; blanks dropped."""
    items = value.split(",") if isinstance(value, str) else value
    if isinstance(items, list | tuple):
        return tuple(str(i).strip() for i in items if str(i).strip())
    return items


def _printable(secret: str) -> str:
    if not all(33 <= ord(ch) <= 126 for ch in secret):  # it travels in an HTTP header
        raise ValueError("only printable ASCII without spaces is allowed")
    return secret


FilePath = Annotated[Path, AfterValidator(_expand)]
OptionalPath = Annotated[Path | None, BeforeValidator(_blank_is_none), AfterValidator(_expand)]
OptionalStr = Annotated[str | None, BeforeValidator(_blank_is_none)]
Names = Annotated[tuple[str, ...], BeforeValidator(_comma_list)]
# Checked when loaded, shown redacted by `config show` (Config.to_dict), never echoed in errors.
Secret = Annotated[
    str,
    Length(min_length=MIN_TOKEN_CHARS),
    AfterValidator(_printable),
    PlainSerializer(redact),
]
OptionalSecret = Annotated[Secret | None, BeforeValidator(_blank_is_none)]
