"""Config: TOML ← env ← flags, the documented conventions, and one clear line for bad values."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lobug.config import ConfigError, load_config, normalize_ollama_host


def test_defaults_follow_the_conventions(tmp_path: Path) -> None:
    config = load_config(None, env={"HOME": str(tmp_path)})
    assert config.server.port == 8321
    assert config.ollama.host == "http://127.0.0.1:11434"
    assert config.storage.data_dir == tmp_path / ".local" / "share" / "lobug"
    assert config.chat.working_memory_size == 20
    assert config.memory.top_k == 5 and config.memory.min_similarity == 0.3


def test_data_dir_precedence(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "STATE_DIRECTORY": "/var/lib/lobug:/other"}
    assert load_config(None, env=env).storage.data_dir == Path("/var/lib/lobug")
    env["LOBUG_DATA_DIR"] = str(tmp_path / "d")
    assert load_config(None, env=env).storage.data_dir == tmp_path / "d"
    flagged = load_config(None, env=env, overrides={"storage.data_dir": "/x"})
    assert flagged.storage.data_dir == Path("/x")


def test_ollama_host_follows_ollama_host(tmp_path: Path) -> None:
    assert load_config(None, env={"OLLAMA_HOST": "0.0.0.0:11500"}).ollama.host == (
        "http://127.0.0.1:11500"
    )
    assert normalize_ollama_host("gpu-box") == "http://gpu-box:11434"
    assert normalize_ollama_host("https://ollama.lan:443/") == "https://ollama.lan:443"
    env = {"OLLAMA_HOST": "a:1", "LOBUG_OLLAMA_HOST": "http://b:2"}
    assert load_config(None, env=env).ollama.host == "http://b:2"


def test_toml_then_env_then_flags(tmp_path: Path) -> None:
    path = tmp_path / "lobug.toml"
    path.write_text('[server]\nport = 9000\nhost = "127.0.0.1"\n[chat]\nworking_memory_size = 8\n')
    env = {"LOBUG_SERVER_PORT": "9100", "LOBUG_EMBEDDER": "hashing"}
    config = load_config(path, env=env, overrides={"server.host": "::1"})
    assert (config.server.port, config.server.host) == (9100, "::1")
    assert config.chat.working_memory_size == 8
    assert config.embedding.backend == "hashing"


@pytest.mark.parametrize(
    ("toml", "env", "needle"),
    [
        ("[server]\nport = 'abc'\n", {}, "server.port: expected an integer"),
        ("[server]\nprot = 1\n", {}, "unknown key server.prot"),
        ("[nope]\na = 1\n", {}, "nope: unknown config section"),
        ("[server\n", {}, "not valid TOML"),
        ("", {"LOBUG_EMBEDDER": "magic"}, "embedding.backend: must be one of"),
        ("", {"LOBUG_CHAT_WORKING_MEMORY_SIZE": "0"}, "chat.working_memory_size"),
        ("", {"LOBUG_API_ALLOW_LOOPBACK": "maybe"}, "api.allow_loopback: expected true or false"),
    ],
)
def test_bad_config_names_the_key(
    tmp_path: Path, toml: str, env: dict[str, str], needle: str
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(")):
        load_config(path, env=env)


def test_cli_bad_config_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[server]\nport = 'abc'\n")
    proc = subprocess.run(
        [sys.executable, "-m", "lobug", "--config", str(path), "config", "show"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "lobug: config error: server.port: expected an integer, got 'abc'"
    ]
    assert "Traceback" not in proc.stderr


def test_cli_config_show_prints_effective_config(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "lobug", "--data-dir", str(tmp_path), "config", "show"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "LOBUG_SERVER_PORT": "9999"},
    )
    assert proc.returncode == 0, proc.stderr
    import json

    shown = json.loads(proc.stdout)
    assert shown["server"]["port"] == 9999
    assert shown["storage"]["data_dir"] == str(tmp_path)
