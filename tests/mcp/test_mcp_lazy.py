"""The daemon loads the MCP SDK only when /mcp is first used (issue 13: ~30 MiB at idle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
from lobug.app import create_app
from lobug.config import load_config
app = create_app(load_config(None, env={}, overrides={"storage.data_dir": sys.argv[1]}))
print(sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp.")))
"""


def test_building_the_daemon_does_not_import_the_mcp_sdk(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout
