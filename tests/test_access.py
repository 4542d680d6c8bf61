"""Access control: trust-gated stores (seed 002), category allowlists (seed 001 §5), tokens."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from lobug import access
from lobug.access import (
    AccessControl,
    CategoryPolicy,
    Principal,
    check_write_store,
    cli_principal,
    default_store,
    is_loopback,
    loopback_principal,
    visible_stores,
)
from lobug.config import ConfigError, TokenConfig, load_config
from lobug.errors import ApiError

FULL, INNER, FAMILIAR, PUBLIC = (
    Principal("supervisor", trust) for trust in ("full", "inner", "familiar", "public")
)


def test_store_matrix_and_defaults() -> None:
    assert [visible_stores(p) for p in (FULL, INNER, FAMILIAR, PUBLIC)] == [
        ("private", "shared", "social"),
        ("shared", "social"),
        ("social",),
        (),
    ]
    assert [default_store(p) for p in (FULL, INNER, FAMILIAR, PUBLIC)] == [
        "private",
        "shared",
        "social",
        "social",
    ]
    with pytest.raises(ValueError):
        Principal("x", "root")


def test_write_store_checks() -> None:
    assert check_write_store(FULL) == "private"
    assert check_write_store(INNER) == "shared"
    assert check_write_store(INNER, "social") == "social"
    with pytest.raises(ApiError) as denied:
        check_write_store(FAMILIAR, "private")
    assert (denied.value.status, denied.value.code) == (403, "forbidden")
    assert "'private'" in denied.value.message and "familiar" in denied.value.message
    assert denied.value.details == {"store": "private", "trust": "familiar"}
    with pytest.raises(ApiError, match="may not write to the 'social' store .writable: none"):
        check_write_store(PUBLIC)  # public's default store is social, which it cannot see
    with pytest.raises(ApiError) as bad:
        check_write_store(FULL, "vault")
    assert (bad.value.status, bad.value.code) == (400, "invalid_request")


def test_tokens_authenticate_and_every_token_is_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = [
        TokenConfig("a" * 20, "full", "supervisor", "main"),
        TokenConfig("b" * 20, "inner", "planner"),
        TokenConfig("c" * 24, "familiar", "stylist", "guest"),
    ]
    control = AccessControl(tokens)
    planner, main = control.authenticate("b" * 20), control.authenticate("a" * 20)
    assert planner is not None and main is not None
    assert planner == Principal("planner", "inner", None, "token", planner.token_id)
    assert main == Principal("supervisor", "full", "main", "token", main.token_id)
    # Each token owns its own conversations (issue 38), and its id is not the token.
    assert planner.owner != main.owner and "b" * 20 not in planner.owner
    calls: list[int] = []
    real = access.hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append(1)
        return real(a, b)

    monkeypatch.setattr(access.hmac, "compare_digest", counting)
    for presented in ("a" * 20, "c" * 24, "nope" * 5, "a" * 19, "é" * 30):
        calls.clear()
        control.authenticate(presented)
        assert len(calls) == 3, presented  # no early exit: timing does not tell which matched
    assert control.authenticate("") is None and control.authenticate(None) is None
    assert control.authenticate("x" * 20) is None


def test_loopback_addresses() -> None:
    for remote in ("127.0.0.1", "127.8.9.1", "::1", "::ffff:127.0.0.1"):
        assert is_loopback(remote), remote
    for remote in ("192.168.1.20", "10.0.0.1", "::ffff:10.0.0.1", "fe80::1", "", None, "x"):
        assert not is_loopback(remote), remote
    assert loopback_principal() == Principal("local", "full", None, "loopback")
    assert cli_principal().via == "cli" and cli_principal().trust == "full"


# -- categories --------------------------------------------------------------------------------
def test_builtin_policy_is_the_seed_plus_what_the_daemon_writes() -> None:
    policy = CategoryPolicy.default()
    seed_supervisor = {"profile", "goals", "preferences", "event", "activity", "relationships"}
    assert seed_supervisor | {"tasks"} <= set(policy.allowlists["supervisor"])
    assert {"personal", "preference", "knowledge", "event", "general"} <= set(
        policy.allowlists["supervisor"]
    )
    assert set(policy.allowlists["planner"]) == {"goals", "tasks", "projects", "procedural"}
    assert set(policy.allowlists["researcher"]) == {"knowledge", "interests", "history"}
    assert "procedural" not in policy.allowlists["supervisor"]  # seed 001 §12: executors only
    assert policy.context_mode("profile") == "all"
    assert (policy.context_mode("event"), policy.rag_length("event")) == ("rag", 30)
    assert (policy.context_mode("activity"), policy.rag_length("activity")) == ("rag", 50)
    assert policy.context_mode("procedural") == "none"
    assert policy.context_mode("never-heard-of") == "rag" and policy.rag_length(None) is None
    assert policy.with_context("all") == ("profile",)


def test_check_categories_enforces_allowlists() -> None:
    policy = CategoryPolicy.default()
    planner = Principal("planner", "inner")
    assert policy.check_categories(planner, ["Tasks", " projects ", "tasks"]) == [
        "tasks",
        "projects",
    ]
    assert policy.check_categories(planner, None) == ["goals", "procedural", "projects", "tasks"]
    with pytest.raises(ApiError) as refused:
        policy.check_categories(planner, ["tasks", "profile", "personal"])
    error = refused.value
    assert (error.status, error.code) == (403, "forbidden")
    assert "agent 'planner'" in error.message and "profile, personal" in error.message
    assert error.details == {"agent": "planner", "categories": ["profile", "personal"]}
    with pytest.raises(ApiError) as bad:
        policy.check_categories(planner, "tasks")  # type: ignore[arg-type]
    assert bad.value.status == 400
    with pytest.raises(ApiError, match="at most 64"):
        policy.check_categories(FULL, [f"c{i}" for i in range(65)])


def test_agents_without_an_allowlist() -> None:
    """Full trust and unlisted (local, cli, a plain owner token): all. Lower trust: nothing."""
    policy = CategoryPolicy.default()
    for owner in (loopback_principal(), cli_principal(), Principal("owner-app", "full")):
        assert policy.allowed(owner) is None
        assert policy.check_categories(owner) is None
        assert policy.check_categories(owner, ["anything"]) == ["anything"]
        assert policy.allows(owner, None) and policy.allows(owner, "procedural")
    stranger = Principal("guest-bot", "inner")
    assert policy.check_categories(stranger) == []
    assert not policy.allows(stranger, "personal") and not policy.allows(stranger, None)
    with pytest.raises(ApiError, match="allowed: none"):
        policy.check_categories(stranger, ["personal"])


def test_uncategorized_counts_as_general() -> None:
    policy = CategoryPolicy.default()
    assert policy.allows(Principal("supervisor", "full"), None)
    assert not policy.allows(Principal("planner", "full"), None)


def test_act_as_only_narrows() -> None:
    policy = CategoryPolicy.default()
    supervisor = Principal("supervisor", "inner", "main")
    assert policy.act_as(supervisor, None) is supervisor
    assert policy.act_as(loopback_principal(), "planner").agent == "planner"
    stylist = Principal("stylist", "familiar")
    with pytest.raises(ApiError) as refused:
        policy.act_as(stylist, "supervisor")
    assert refused.value.status == 403
    narrow = CategoryPolicy.from_mapping(
        {"allowlists": {"main": ["tasks", "goals"], "sub": ["tasks"], "all": ["*"]}}, "t"
    )
    sub = narrow.act_as(Principal("main", "inner"), "sub")
    assert (sub.agent, sub.trust) == ("sub", "inner")
    with pytest.raises(ApiError):
        narrow.act_as(Principal("sub", "inner"), "main")
    with pytest.raises(ApiError):
        narrow.act_as(Principal("main", "inner"), "all")
    assert narrow.allowed(Principal("all", "familiar")) is None  # "*" means every category


TOML_POLICY = """
[[categories.system]]
name = "profile"
context = "all"

[[categories.system]]
name = "event"
context = "rag"
rag_length = 30

[[categories.custom]]
name = "hobbies"

[allowlists]
supervisor = ["profile", "event", "hobbies"]
coach = ["hobbies"]
"""

YAML_POLICY = """
categories:
  system:
    - name: profile
      context: all
    - name: event
      context: rag
      rag_length: 30
  custom: [hobbies]
allowlists:
  supervisor: [profile, event, hobbies]
  coach: [hobbies]
"""


def test_policy_from_toml_and_yaml(tmp_path: Path) -> None:
    toml_file = tmp_path / "cats.toml"
    toml_file.write_text(TOML_POLICY)
    policy = CategoryPolicy.load(toml_file)
    assert sorted(policy.categories) == ["event", "general", "hobbies", "profile"]
    assert not policy.categories["hobbies"].system and policy.categories["event"].system
    assert policy.rag_length("event") == 30
    assert policy.check_categories(Principal("coach", "familiar")) == ["hobbies"]
    pytest.importorskip("yaml")
    yaml_file = tmp_path / "cats.yaml"
    yaml_file.write_text(YAML_POLICY)
    assert CategoryPolicy.load(yaml_file) == policy


def test_yaml_without_pyyaml_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml → ImportError
    path = tmp_path / "cats.yml"
    path.write_text(YAML_POLICY)
    with pytest.raises(ConfigError, match="YAML needs PyYAML .* or write the file as TOML"):
        CategoryPolicy.load(path)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"allowlists": {"a": ["nope"]}}, "allowlists.a: unknown category 'nope'"),
        ({"allowlists": {"a": "tasks"}}, "allowlists.a: expected a list"),
        ({"categories": {"custom": [{"name": "x", "context": "sometimes"}]}}, "context must be"),
        (
            {"categories": {"custom": [{"name": "x", "context": "all", "rag_length": 3}]}},
            "rag_length applies only",
        ),
        ({"categories": {"custom": [{"name": "x", "rag_length": 0}]}}, "between 1 and 10000"),
        ({"categories": {"custom": ["profile"]}}, r"categories.custom\[0\]: duplicate name"),
        ({"categories": {"custom": [{"name": "Bad Name"}]}}, "name must be lowercase"),
        ({"categories": {"custom": [{"name": "x", "colour": 1}]}}, "unknown key colour"),
        ({"categories": {"extra": []}}, "expected a table with 'system' and 'custom'"),
        ({"agents": {}}, "agents: unknown key"),
        ([], "expected a table"),
    ],
)
def test_bad_policy_names_the_place(data: object, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        CategoryPolicy.from_mapping(data, "cats.toml")


def test_startup_warns_about_tokens_that_will_see_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "s3cret-token-value-1234"
    config = load_config(
        None,
        env={},
        overrides={
            "api.tokens": [
                {"token": secret, "trust": "inner", "agent": "guest-bot", "name": "kiosk"},
                {"token": "x" * 16, "trust": "full", "agent": "owner-app"},
            ]
        },
    )
    with caplog.at_level(logging.WARNING, logger="lobug.access"):
        control = AccessControl.from_config(config.api)
    kiosk = control.authenticate(secret)
    assert kiosk is not None and kiosk.token_id is not None
    assert kiosk == Principal("guest-bot", "inner", "kiosk", "token", kiosk.token_id)
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "kiosk" in messages[0] and "guest-bot" in messages[0]
    assert secret not in caplog.text
