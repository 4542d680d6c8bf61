"""`lobug completion bash|zsh`: generated from the parser, printed even with a broken config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o"), ("zsh", "#compdef lobug")])
def test_completion_script_covers_the_commands(tmp_path: Path, shell: str, marker: str) -> None:
    broken = tmp_path / "c.toml"
    broken.write_text("[server]\nport = 'abc'\n")
    proc = subprocess.run(
        [sys.executable, "-m", "lobug", "--config", str(broken), "completion", shell],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert marker in proc.stdout
    for command in ("serve", "config", "memory", "jobs", "completion"):
        assert command in proc.stdout
