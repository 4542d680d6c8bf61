"""Running the real `lobug` console script in a subprocess against a config file."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(sys.executable).parent / "lobug"


def config_file(tmp_path: Path, url: str, name: str = "data", **sections: str) -> Path:
    """A TOML config: its own data dir, the fake Ollama, the hashing embedder; `sections`
    are extra TOML lines per section, e.g. `api='categories_file = "…"'`."""
    extra = {"storage": "", "ollama": "", "embedding": "", "workers": "", "memory": "", "api": ""}
    extra.update(sections)
    path = tmp_path / f"lobug-{name}.toml"
    path.write_text(
        f'[storage]\ndata_dir = "{tmp_path / name}"\n{extra["storage"]}\n'
        f'[ollama]\nhost = "{url}"\ntimeout_s = 2.0\n{extra["ollama"]}\n'
        f'[embedding]\nbackend = "hashing"\ndim = 64\n{extra["embedding"]}\n'
        f"[workers]\nbackoff_base_s = 0.05\n{extra['workers']}\n"
        f"[memory]\nllm_timeout_s = 2.0\n{extra['memory']}\n"
        f"[api]\n{extra['api']}\n"
        f'[log]\nlevel = "WARNING"\n',
        encoding="utf-8",
    )
    return path


async def lobug(config: Path, *args: str, timeout: float = 120) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `lobug --config CONFIG ARGS…` (the installed script)."""
    argv = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "lobug"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOBUG_")}
    proc = await asyncio.create_subprocess_exec(
        *argv,
        "--config",
        str(config),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**env, "HF_HUB_OFFLINE": "1"},
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return int(proc.returncode or 0), out.decode(), err.decode()


async def lobug_json(config: Path, *args: str, expect: int = 0) -> Any:
    code, out, err = await lobug(config, *args, "--json")
    assert code == expect, (args, code, out, err)
    return json.loads(out)
