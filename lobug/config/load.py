"""load_config: defaults ← TOML file ← LOBUG_* environment ← flags, validated by the models.

Layering is done here rather than by pydantic-settings' sources: the environment is a mapping
the caller passes (tests, `lobug` subprocesses), lists arrive as `a,b` and
`token:trust:agent,…` rather than JSON, `$OLLAMA_HOST` ranks below the file, and a handful of
well-known names do not follow LOBUG_<SECTION>_<KEY>."""

from __future__ import annotations

import logging
import os
import tomllib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from lobug.config.fields import ConfigError, field_infos, record_type
from lobug.config.models import _ADAPTER, BACKEND_MODELS, SECTIONS, Config, known_dim

log = logging.getLogger(__name__)

# Keys that were settings and are now named constants next to their formula (issue 24): an old
# config file that still sets one is loaded with a warning, its value ignored.
_CONSTANTS = {
    "scoring": (
        "lobug.memory.search.scoring.ScoringWeights; memory.table.salience.Salience",
        "w_freq w_recency w_importance decay_lambda rrf_k w_vector w_bm25 w_entity w_when w_who"
        " bm25_min_words w_fused w_memory rescore_lambda w_rel confidence_floor w_strength"
        " superseded_weight hits_cap",
    ),
    "lifecycle": (
        "lobug.memory.lifecycle.policies, .forgetting; store.strength.Strength",
        "reinforce_gain max_strength_days promote_hits promote_seen_within_days"
        " archive_score_below mid_capacity ttl_idle_days ttl_importance_below",
    ),
    "upkeep": (
        "lobug.memory.upkeep.pairs / consolidate",
        "pool_hours pool_importance band_low recency_days pairs_per_prompt pairs_per_day"
        " fingerprint_days",
    ),
    "memory": (
        "lobug.memory.settings.WritePolicy, service, summaries.cascades, write.consent",
        "near_duplicate_jaccard link_min link_k hit_flush_s consent_signals"
        " short_term_threshold short_term_keep long_term_threshold long_term_keep",
    ),
    "reflection": (
        "lobug.memory.reflect.reflection, summaries.early_base, service",
        "reflection_min_facts base_from_facts_min check_interval_s",
    ),
    "workers": ("lobug.workers.runner", "backoff_max_s poll_interval_s"),
    "ollama": ("lobug.llm.client", "health_timeout_s health_cache_s"),
    "storage": ("lobug.config.models.DB_FILE", "db_file"),
    "server": ("lobug.host.connections, cli.serve", "header_timeout_s keepalive_timeout_s"),
}
REMOVED: dict[str, str] = {
    f"{section}.{key}": where
    for section, (where, keys) in _CONSTANTS.items()
    for key in keys.split()
}

# Well-known variables that do not follow LOBUG_<SECTION>_<KEY>.
ENV_ALIASES: dict[str, tuple[str, str]] = {
    "LOBUG_DATA_DIR": ("storage", "data_dir"),
    "LOBUG_EMBEDDER": ("embedding", "backend"),
    "LOBUG_LOG_LEVEL": ("log", "level"),
}


def default_data_dir(env: Mapping[str, str]) -> Path:
    """LOBUG_DATA_DIR is handled as an override; then systemd's StateDirectory, then per user."""
    state = env.get("STATE_DIRECTORY")
    if state:
        return Path(state.split(":")[0])
    xdg = env.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path(env.get("HOME", "~")).expanduser() / ".local" / "share"
    return base / "lobug"


def normalize_ollama_host(host: str) -> str:
    """Accept what the ollama tools accept: `host`, `host:port`, `:port` or a full URL."""
    host = host.strip().rstrip("/")
    scheme = "http"
    if "://" in host:
        scheme, _, host = host.partition("://")
    name, _, port = host.rpartition(":") if ":" in host.split("]")[-1] else (host, "", "")
    name = name or "127.0.0.1"
    if name == "0.0.0.0":  # a listen address; clients connect to loopback
        name = "127.0.0.1"
    return f"{scheme}://{name}:{port or 11434}"


def load_config(
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Merge defaults ← TOML file ← environment ← overrides ("section.key" → value).

    The categories file is not read here; `lobug.access.load_config_checked` also checks it."""
    env = os.environ if env is None else env
    raw: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
    if path is not None:
        for section, values in _read_toml(path).items():
            if section not in SECTIONS and not _all_removed(section, values):
                known = ", ".join(SECTIONS)
                raise ConfigError(f"{section}: unknown config section (known: {known})")
            if not isinstance(values, dict):
                raise ConfigError(f"{section}: expected a table")
            for key, value in values.items():
                _put(raw, section, key, value, f"{section}.{key}")
    for name, value in env.items():
        if name in ENV_ALIASES:
            _put(raw, *ENV_ALIASES[name], value, name)
        elif name.startswith("LOBUG_"):
            section, _, key = name[len("LOBUG_") :].lower().partition("_")
            if key in field_infos(SECTIONS.get(section)):  # other LOBUG_* names are not ours
                _put(raw, section, key, value, name)
    for dotted, value in (overrides or {}).items():
        section, _, key = dotted.partition(".")
        _put(raw, section, key, value, dotted)
    ollama, storage = raw["ollama"], raw["storage"]
    if "host" not in ollama and env.get("OLLAMA_HOST"):
        ollama["host"] = env["OLLAMA_HOST"]
    if "host" in ollama:
        ollama["host"] = normalize_ollama_host(str(ollama["host"]))
    storage.setdefault("data_dir", str(default_data_dir(env)))
    _embedding_defaults(raw["embedding"])
    try:
        config = _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        raise ConfigError(_describe(exc.errors()[0])) from None
    _check(config)
    return config


def _embedding_defaults(embedding: dict[str, Any]) -> None:
    """The backend chooses the model and the model its dimension, unless the owner set them:
    `LOBUG_EMBEDDER=local` alone gives MiniLM at 384, not Ollama's model at 768."""
    backend = embedding.get("backend")
    if isinstance(backend, str) and backend in BACKEND_MODELS:
        embedding.setdefault("model", BACKEND_MODELS[backend])
    model = embedding.get("model")
    dim = known_dim(model) if isinstance(model, str) else None
    if dim is not None:
        embedding.setdefault("dim", dim)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _all_removed(section: str, values: Any) -> bool:
    """A section whose every key is now a constant ([scoring]): warned about key by key."""
    return isinstance(values, dict) and all(f"{section}.{key}" in REMOVED for key in values)


def _put(raw: dict[str, dict[str, Any]], section: str, key: str, value: Any, origin: str) -> None:
    if f"{section}.{key}" in REMOVED:
        log.warning("%s: ignored: now a constant (%s)", origin, REMOVED[f"{section}.{key}"])
        return
    if section not in SECTIONS:
        raise ConfigError(f"{origin}: unknown config section {section!r}")
    info = field_infos(SECTIONS[section]).get(key)
    if info is None:
        raise ConfigError(f"{origin}: unknown key {section}.{key}")
    if isinstance(value, bool) and info.annotation in (int, float):  # pydantic takes true as 1
        raise ConfigError(f"{section}.{key}: expected a number, got {value!r}")
    if isinstance(value, float) and info.annotation is int:  # ...and 5.0 as 5
        raise ConfigError(f"{section}.{key}: expected an integer, got {value!r}")
    raw[section][key] = value


def _describe(error: ErrorDetails) -> str:
    """One line naming the key (`api.tokens[0].trust: ...`); a secret's value is never shown."""
    where, info = "", FieldInfo()
    cls: Any = Config
    fields: dict[str, FieldInfo] = {}
    for part in error["loc"]:
        if isinstance(part, int):
            where += f"[{part}]"
        elif part in field_infos(cls):
            fields = field_infos(cls)
            info = fields[part]
            where += f".{part}" if where else part
            cls = record_type(info.annotation) or info.annotation
    kind, value, ctx = error["type"], error["input"], error.get("ctx", {})
    got = "" if info.repr is False else f", got {value!r}"
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        return f"{where}: unknown key {error['loc'][-1]} (known: {', '.join(fields)})"
    if kind == "value_error":
        message = str(ctx.get("error", error["msg"]))
        return where + (message if message.startswith("[") else f": {message}")
    bounds = {k: getattr(m, k) for m in info.metadata for k in ("ge", "le", "gt") if hasattr(m, k)}
    choices = typing.get_args(info.annotation)
    messages = {
        "missing": "is required",
        "int_parsing": f"expected an integer{got}",
        "int_from_float": f"expected an integer{got}",
        "int_type": f"expected an integer{got}",
        "float_parsing": f"expected a number{got}",
        "float_type": f"expected a number{got}",
        "bool_parsing": f"expected true or false{got}",
        "bool_type": f"expected true or false{got}",
        "string_type": f"expected a string{got}",
        "tuple_type": "expected a list of tables"
        if record_type(info.annotation)
        else f"expected a list{got}",
        "dataclass_type": "expected a table",
        "dict_type": "expected a table",
        "string_too_short": f"must be at least {ctx.get('min_length')} characters"
        f", got {len(str(value))}",
        "literal_error": f"must be one of {', '.join(map(str, choices))}{got}",
    }
    if kind in messages:
        return f"{where}: {messages[kind]}"
    shown = "" if info.repr is False else f", got {value}"
    if bounds.get("gt") == 0:
        return f"{where}: must be positive"
    if "ge" in bounds and "le" in bounds:
        return f"{where}: must be between {bounds['ge']} and {bounds['le']}{shown}"
    if "ge" in bounds:
        return f"{where}: must be at least {bounds['ge']}{shown}"
    return f"{where}: {error['msg']}"


def _check(config: Config) -> None:
    """What one field cannot say about itself."""
    for key, url in (("ollama.host", config.ollama.host), ("llm.base_url", config.llm.base_url)):
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{key}: must start with http:// or https://, got {url!r}")
    embedding = config.embedding
    dim = known_dim(embedding.model)
    if embedding.backend != "hashing" and dim is not None and dim != embedding.dim:
        raise ConfigError(
            f"embedding.dim: {embedding.model} makes {dim}-dimensional vectors, got"
            f" {embedding.dim}; set embedding.dim = {dim} (or leave it unset), then run"
            " `lobug memory reembed` if the database holds vectors of another size"
        )
    # Tokens unique, agents sane. Messages name the entry, never the secret.
    seen_tokens: set[str] = set()
    seen_names: set[str] = set()
    for index, entry in enumerate(config.api.tokens):
        where = f"api.tokens[{index}]"
        if entry.token in seen_tokens:
            raise ConfigError(f"{where}.token: the same token is configured twice")
        seen_tokens.add(entry.token)
        if not entry.agent or len(entry.agent) > 64 or not entry.agent.isprintable():
            raise ConfigError(f"{where}.agent: must be 1-64 printable characters")
        if entry.name and entry.name in seen_names:
            raise ConfigError(f"{where}.name: {entry.name!r} is used by an earlier token")
        seen_names.add(entry.name)
    # api.categories_file's contents are checked by lobug.access.load_config_checked (config
    # imports nothing from lobug; the policy's parser lives in access, above config).
