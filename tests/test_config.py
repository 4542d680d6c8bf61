"""Config: TOML ← env ← flags, the documented conventions, and one clear line for bad values."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from lobug.config import ConfigError, TokenConfig, load_config
from lobug.config.example import render_example
from lobug.config.load import normalize_ollama_host
from lobug.config.models import SECTIONS

EXAMPLE = Path(__file__).resolve().parents[1] / "systemd" / "lobug.toml.example"


def dataclasses_fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


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


def test_a_key_that_became_a_constant_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An old config file (issue 24) still loads: [scoring] and the other formula keys are
    named module constants now; each is one warning, the rest of the file applies."""
    path = tmp_path / "c.toml"
    path.write_text(
        "[scoring]\nw_rel = 0.25\nrrf_k = 30\n"
        "[memory]\ntop_k = 7\nlink_min = 0.9\n"
        "[workers]\npoll_interval_s = 0.1\n"
    )
    config = load_config(path, env={}, overrides={"lifecycle.mid_capacity": 9})
    assert config.memory.top_k == 7
    warned = [r.getMessage() for r in caplog.records if "now a constant" in r.getMessage()]
    assert [w.split(":")[0] for w in warned] == [
        "scoring.w_rel",
        "scoring.rrf_k",
        "memory.link_min",
        "workers.poll_interval_s",
        "lifecycle.mid_capacity",
    ]
    with pytest.raises(ConfigError, match="unknown key memory.link_max"):
        load_config(None, env={}, overrides={"memory.link_max": 1})
    path.write_text("[scoring]\nw_rel = 0.25\nnot_a_weight = 1\n")
    with pytest.raises(ConfigError, match="scoring: unknown config section"):
        load_config(path, env={})


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


def test_example_is_generated_from_the_models() -> None:
    # Every key, default and comment lives in lobug/config/models.py; regenerate with
    # `python -m lobug.config --example > systemd/lobug.toml.example`.
    assert EXAMPLE.read_text(encoding="utf-8") == render_example()


def test_example_shows_every_key() -> None:
    lines = [line.removeprefix("# ") for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    shown, section = set(), ""
    for line in lines:
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            shown.add(section)  # [[api.tokens]] shows the key api.tokens
        elif " = " in line:
            shown.add(f"{section}.{line.partition(' = ')[0]}")
    fields = {f"{name}.{key}" for name, cls in SECTIONS.items() for key in dataclasses_fields(cls)}
    fields |= {f"api.tokens.{key}" for key in dataclasses_fields(TokenConfig)}
    assert fields <= shown, fields - shown


def test_sections_are_frozen() -> None:
    config = load_config(None, env={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.memory.top_k = 7  # type: ignore[misc]


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"server.port": True}, "server.port: expected a number, got True"),
        ({"server.port": 80.0}, "server.port: expected an integer, got 80.0"),
        ({"memory.consent_days": 0}, "memory.consent_days: must be between 0.01 and 365, got 0"),
        ({"ollama.timeout_s": "0"}, "ollama.timeout_s: must be positive"),
        ({"log.level": "info"}, "log.level: must be one of DEBUG, INFO, WARNING, ERROR"),
    ],
)
def test_flag_values_are_checked_like_file_values(
    overrides: dict[str, object], needle: str
) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_config(None, env={}, overrides=overrides)


def test_env_values_are_coerced() -> None:
    env = {
        "LOBUG_API_DEVICE_ALLOWLIST": "m5-a, m5-b,,",
        "LOBUG_SPEECH_LANGUAGE": "none",
        "LOBUG_CHAT_PERSONALITY_FILE": "~/p.txt",
        "LOBUG_MEMORY_ENABLED": "off",
        "LOBUG_LIFECYCLE_DECAY_RATE": "0.25",
        "LOBUG_NOT_A_SECTION": "ignored",
        "HOME": "/home/x",
    }
    config = load_config(None, env=env)
    assert config.api.device_allowlist == ("m5-a", "m5-b")
    assert config.speech.language is None and config.memory.enabled is False
    assert config.chat.personality_file == Path.home() / "p.txt"
    assert config.lifecycle.decay_rate == 0.25


def test_the_embedding_backend_chooses_its_model_and_dimension(tmp_path: Path) -> None:
    local = load_config(None, env={"HOME": str(tmp_path), "LOBUG_EMBEDDER": "local"})
    assert (local.embedding.model, local.embedding.dim) == ("all-MiniLM-L6-v2", 384)
    ollama = load_config(None, env={"HOME": str(tmp_path)})
    assert (ollama.embedding.model, ollama.embedding.dim) == ("nomic-embed-text", 768)
    # A known model brings its dimension; an owner's dimension for an unknown model stands.
    named = load_config(None, env={}, overrides={"embedding.model": "all-minilm:latest"})
    assert named.embedding.dim == 384
    own = {"embedding.backend": "local", "embedding.model": "/models/e5", "embedding.dim": 1024}
    assert load_config(None, env={}, overrides=own).embedding.dim == 1024


def test_a_dimension_the_model_does_not_make_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[embedding]\nbackend = "local"\ndim = 768\n')
    proc = subprocess.run(
        [sys.executable, "-m", "lobug", "--config", str(path), "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "lobug: config error: embedding.dim: all-MiniLM-L6-v2 makes 384-dimensional vectors,"
        " got 768; set embedding.dim = 384 (or leave it unset), then run `lobug memory reembed`"
        " if the database holds vectors of another size"
    ]
