"""[api] config: bearer tokens from TOML and env, their validation, redaction, categories file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lobug.access import load_config_checked
from lobug.config import ConfigError, TokenConfig, load_config

TOKEN_A = "tok-aaaaaaaaaaaaaaaa"
TOKEN_B = "tok-bbbbbbbbbbbbbbbb"


def test_toml_token_tables(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        f'[api]\ncategories_file = "{tmp_path / "cats.toml"}"\n'
        f'[[api.tokens]]\ntoken = "{TOKEN_A}"\n'
        f'[[api.tokens]]\ntoken = "{TOKEN_B}"\ntrust = "inner"\nagent = "planner"\nname = "phone"\n'
    )
    (tmp_path / "cats.toml").write_text('[allowlists]\nplanner = ["tasks"]\n')
    config = load_config(path, env={})
    assert config.api.tokens == (
        TokenConfig(TOKEN_A, "full", "supervisor", ""),
        TokenConfig(TOKEN_B, "inner", "planner", "phone"),
    )
    assert config.api.categories_file == tmp_path / "cats.toml"


def test_env_tokens_and_overrides() -> None:
    env = {"LOBUG_API_TOKENS": f"{TOKEN_A}:familiar:stylist:tablet, {TOKEN_B}::planner"}
    tokens = load_config(None, env=env).api.tokens
    assert tokens == (
        TokenConfig(TOKEN_A, "familiar", "stylist", "tablet"),
        TokenConfig(TOKEN_B, "full", "planner", ""),
    )
    overridden = load_config(
        None, env=env, overrides={"api.tokens": [{"token": TOKEN_B, "trust": "public"}]}
    )
    assert overridden.api.tokens == (TokenConfig(TOKEN_B, "public"),)
    assert load_config(None, env={}).api.tokens == ()


@pytest.mark.parametrize(
    ("tokens", "needle"),
    [
        ([{"token": "short"}], r"api.tokens\[0\].token: must be at least 16 characters, got 5"),
        ([{"token": TOKEN_A, "trust": "root"}], r"api.tokens\[0\].trust: must be one of full"),
        ([{"token": TOKEN_A}, {"token": TOKEN_A}], r"api.tokens\[1\].token: the same token"),
        ([{"token": TOKEN_A, "scope": "x"}], r"api.tokens\[0\]: unknown key scope"),
        ([{"trust": "full"}], r"api.tokens\[0\].token: is required"),
        ([{"token": TOKEN_A + " x"}], r"api.tokens\[0\].token: only printable ASCII"),
        ([{"token": TOKEN_A, "agent": ""}], r"api.tokens\[0\].agent: must be 1-64"),
        (
            [{"token": TOKEN_A, "name": "n"}, {"token": TOKEN_B, "name": "n"}],
            r"api.tokens\[1\].name: 'n' is used by an earlier token",
        ),
        ([f"{TOKEN_A}:full:agent:name:extra"], r"api.tokens\[0\]: expected token:trust:agent:name"),
        ({"token": TOKEN_A}, r"api.tokens: expected a list of tables"),
        ([42], r"api.tokens\[0\]: expected a table"),
    ],
)
def test_bad_tokens_name_the_entry_never_the_secret(tokens: object, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as caught:
        load_config(None, env={}, overrides={"api.tokens": tokens})
    assert TOKEN_A not in str(caught.value) and TOKEN_B not in str(caught.value)


def test_device_token_must_be_strong() -> None:
    with pytest.raises(ConfigError, match="api.device_token: must be at least 16"):
        load_config(None, env={"LOBUG_API_DEVICE_TOKEN": "1234"})
    assert load_config(None, env={"LOBUG_API_DEVICE_TOKEN": ""}).api.device_token is None


def test_secrets_are_redacted_in_to_dict_and_repr() -> None:
    config = load_config(
        None,
        env={"LOBUG_API_TOKENS": f"{TOKEN_A}:inner:planner:phone"},
        overrides={"api.device_token": TOKEN_B},
    )
    api = config.to_dict()["api"]
    assert api["tokens"] == [
        {"token": "tok-…", "trust": "inner", "agent": "planner", "name": "phone"}
    ]
    assert api["device_token"] == "tok-…"
    assert TOKEN_A not in repr(config) and TOKEN_B not in repr(config)
    assert TOKEN_A not in json.dumps(config.to_dict()) and TOKEN_B not in json.dumps(api)


def test_config_show_prints_tokens_redacted(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[api]\ndevice_token = "{TOKEN_B}"\n[[api.tokens]]\ntoken = "{TOKEN_A}"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "lobug", "--config", str(path), "config", "show"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"},
    )
    assert proc.returncode == 0, proc.stderr
    assert TOKEN_A not in proc.stdout and TOKEN_B not in proc.stdout
    shown = json.loads(proc.stdout)["api"]
    assert shown["tokens"][0]["token"] == "tok-…" and shown["device_token"] == "tok-…"


def test_categories_file_is_checked_at_load(tmp_path: Path) -> None:
    # load_config_checked (lobug.access) is what the CLI and `serve` load with; config itself
    # imports nothing from lobug, so the policy file is checked one layer up.
    with pytest.raises(ConfigError, match="api.categories_file: .*does not exist"):
        load_config_checked(
            None, env={}, overrides={"api.categories_file": str(tmp_path / "nope.toml")}
        )
    bad = tmp_path / "cats.toml"
    bad.write_text('[allowlists]\nplanner = ["taks"]\n')
    with pytest.raises(ConfigError, match="allowlists.planner: unknown category 'taks'"):
        load_config_checked(None, env={"LOBUG_API_CATEGORIES_FILE": str(bad)})


def test_cli_bad_categories_file_exits_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "cats.toml"
    bad.write_text('[allowlists]\nplanner = ["taks"]\n')
    path = tmp_path / "c.toml"
    path.write_text(f'[api]\ncategories_file = "{bad}"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "lobug", "--config", str(path), "config", "show"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"},
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lobug: config error: api.categories_file: ")
    assert str(bad) in lines[0] and "allowlists.planner: unknown category 'taks'" in lines[0]
