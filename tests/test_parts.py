"""The composition root's start: the daemon refuses vectors of another model or size."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_kit import lobug
from daemon_proc import free_port


def config(tmp_path: Path, dim: int) -> Path:
    path = tmp_path / f"lobug-{dim}.toml"
    path.write_text(
        f'[storage]\ndata_dir = "{tmp_path / "data"}"\n'
        '[ollama]\nhost = "http://127.0.0.1:9"\ntimeout_s = 1.0\n'
        f'[embedding]\nbackend = "hashing"\ndim = {dim}\n'
        f'[server]\nhost = "127.0.0.1"\nport = {free_port()}\n'
        '[speech]\nload_at_start = false\n[log]\nlevel = "WARNING"\n',
        encoding="utf-8",
    )
    return path


# Three processes start the CLI, each importing the daemon's parts (seconds apiece on a loaded
# 2-core machine): the bound guards against a hang only.
@pytest.mark.timeout(300)
async def test_the_daemon_refuses_vectors_of_another_size_and_says_to_reembed(
    tmp_path: Path,
) -> None:
    code, _, err = await lobug(config(tmp_path, 32), "memory", "remember", "Alex likes tea")
    assert code == 0, err

    code, _, err = await lobug(config(tmp_path, 64), "serve", timeout=60)
    assert code == 2, err
    assert "refusing to start" in err and "lobug memory reembed" in err, err
    assert "hashing-v1-32 (32-d)" in err and "hashing-v1-64 (64-d)" in err, err

    # The commands still open the file: the reembed that the message names works.
    code, _, err = await lobug(config(tmp_path, 64), "memory", "reembed")
    assert code == 0, err
