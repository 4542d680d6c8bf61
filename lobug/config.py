"""Configuration: frozen dataclasses loaded from TOML, then LOBUG_* env vars, then CLI flags."""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A configuration value is wrong; the message names the key."""


@dataclass(frozen=True)
class ServerConfig:
    host: str = "0.0.0.0"  # the device reaches us over the LAN
    port: int = 8321
    shutdown_timeout_s: float = 10.0
    max_json_bytes: int = 64 * 1024
    # Issue 16: open connections at most (0: the fd limit less a reserve), how long a request
    # head may take to arrive, and how long an idle keep-alive connection is kept.
    max_connections: int = 0
    header_timeout_s: float = 10.0
    keepalive_timeout_s: float = 15.0


@dataclass(frozen=True)
class StorageConfig:
    data_dir: Path = Path()  # resolved by load_config
    db_file: str = "lobug.db"
    busy_timeout_ms: int = 5000
    read_connections: int = 4
    max_page_count: int = 0  # 0 = unlimited; a page budget (4 KiB pages) for small SD cards
    # The daemon keeps a copy of the vectors in memory for exact KNN without scanning sqlite-vec
    # (4 bytes per dimension per vector: 15 MB for 10k 384-d vectors); off: scan sqlite-vec.
    vector_index: bool = True

    @property
    def db_path(self) -> Path:
        return self.data_dir / self.db_file


@dataclass(frozen=True)
class OllamaConfig:
    host: str = "http://127.0.0.1:11434"
    chat_model: str = "llama3.2"
    timeout_s: float = 30.0
    health_timeout_s: float = 1.0
    health_cache_s: float = 5.0
    temperature: float = 0.7
    keep_alive: str = "30m"


@dataclass(frozen=True)
class ChatConfig:
    personality_file: Path | None = None  # None → the bundled personality
    working_memory_size: int = 20
    session_idle_minutes: float = 30.0
    max_text_chars: int = 4000
    apology: str = "Sorry, I can't think right now. I'll remember what you said."


@dataclass(frozen=True)
class SpeechConfig:
    model: str = "base.en"  # a faster-whisper size name or a local model directory
    device: str = "cpu"
    compute_type: str = "int8"
    cpu_threads: int = 0  # 0 → faster-whisper picks
    local_files_only: bool = True  # offline first: never download a model implicitly
    download_root: Path | None = None  # None → <data_dir>/models
    language: str | None = None
    beam_size: int = 1
    vad: bool = True
    max_audio_seconds: float = 60.0
    max_audio_bytes: int = 10 * 1024 * 1024
    load_at_start: bool = True


@dataclass(frozen=True)
class EmbeddingConfig:
    backend: str = "ollama"  # ollama | local | hashing
    model: str = "nomic-embed-text"
    dim: int = 768
    batch_size: int = 32
    timeout_s: float = 10.0


@dataclass(frozen=True)
class MemoryConfig:
    enabled: bool = True
    top_k: int = 5
    min_similarity: float = 0.3
    duplicate_distance: float = 0.15
    short_term_threshold: int = 30
    short_term_keep: int = 10
    long_term_threshold: int = 20
    long_term_keep: int = 10
    extraction_mode: str = "hybrid"  # heuristic | llm | hybrid
    base_memory_max_words: int = 400
    # Background LLM calls (extraction, summaries, distillation) are longer than a chat reply
    # and nobody waits on them; on a Pi a 20-turn summary can take a minute.
    llm_timeout_s: float = 120.0
    near_duplicate_jaccard: float = 0.75  # word overlap at which a new fact merges (seed 003)
    link_min: float = 0.55  # similarity for a relation edge to a neighbour (seed 001 §2)
    link_k: int = 3  # neighbours considered for relation edges per new fact
    hit_flush_s: float = 5.0  # retrieval hits are counted in memory and written this often
    # Seed 001 §13: at most this many memories written per exchange, and per user per day.
    max_writes_per_turn: int = 3
    max_writes_per_day: int = 100
    # Newer wins: each new fact is judged (same/update/contradiction/unrelated) against its
    # this-many nearest stored facts in one batched LLM call per exchange (0 = heuristics only).
    judge_k: int = 3
    # Seed 001 §10: profile fields heard by voice wait this long for the user's yes, and a
    # benign one is applied without it once this many separate turns said it.
    consent_days: float = 7.0
    consent_signals: int = 2


@dataclass(frozen=True)
class ReflectionConfig:
    """Background thinking over what memory holds: the weekly reflection (seed 003), theory-of-
    mind insights (seed 001 §3) and the base memory distilled from facts for a new user."""

    enabled: bool = True
    check_interval_s: float = 3600.0  # how often the persisted schedule looks for due work
    reflection_min_facts: int = 3  # new facts in the last 7 days a weekly reflection needs
    reflection_every_days: float = 6.0  # at most one reflection in this many days
    insights_every_hours: float = 24.0  # theory-of-mind insights at most this often
    base_from_facts_min: int = 8  # facts that start a base memory before the long cascade does
    llm_calls_per_day: int = 12  # these tasks' LLM calls per day (a reminder counts as one)


@dataclass(frozen=True)
class ScoringConfig:
    """The ranking formulas' knobs (lobug/memory/search/scoring.py explains each)."""

    w_freq: float = 1.0
    w_recency: float = 1.0
    w_importance: float = 2.0
    decay_lambda: float = 0.05
    rrf_k: int = 60
    w_vector: float = 1.0
    w_bm25: float = 0.5
    w_entity: float = 0.5
    w_when: float = 1.0  # the question names a period ("last spring"): what was said then
    w_who: float = 1.0  # the question names a speaker of imported turns: what they said
    bm25_min_words: int = 2
    w_fused: float = 1.0
    w_memory: float = 0.15
    rescore_lambda: float = 0.01
    w_rel: float = 0.1
    confidence_floor: float = 0.5
    w_strength: float = 0.1
    superseded_weight: float = 0.5
    hits_cap: int = 20


@dataclass(frozen=True)
class LifecycleConfig:
    """GC policies (`lobug.memory.lifecycle`); the pass runs every gc_interval_s (0 = never)."""

    gc_interval_s: float = 3600.0
    # Ebbinghaus rate (per day) of a memory of importance 0; a memory's own rate is this
    # times (1 − importance), so what matters fades slower (0.5 → 0.05/day: a strength of 20
    # days). Decay lowers rank only; every use divides the rate (see store/strength.py).
    decay_rate: float = 0.1
    reinforce_gain: float = 1.0
    max_strength_days: float = 3650.0
    purge_after_days: float = 30.0
    promote_hits: int = 3
    promote_seen_within_days: float = 7.0
    archive_score_below: float = 0.5
    archive_idle_days: float = 30.0
    mid_capacity: int = 500
    ttl_idle_days: float = 60.0
    ttl_importance_below: float = 0.5


@dataclass(frozen=True)
class UpkeepConfig:
    """Background upkeep jobs (`lobug.memory.upkeep`): consolidation, sessions, entities.

    Every interval is persisted (`periodic_runs`): after downtime each runs once, not once per
    missed slot; 0 = never. All their LLM calls share one daily budget."""

    consolidate_interval_s: float = 86400.0
    enrich_interval_s: float = 86400.0
    llm_calls_per_day: int = 40
    # Seed 001 §4: the pool (new or changed within pool_hours, important, or often retrieved),
    # pairs at least band_low similar and updated within recency_days, batched per prompt.
    pool_hours: float = 72.0
    pool_importance: float = 0.6
    band_low: float = 0.6
    recency_days: float = 90.0
    pairs_per_prompt: int = 8
    pairs_per_day: int = 50
    fingerprint_days: float = 14.0
    # Seed 003: a session left for another (or idle past chat.session_idle_minutes) has its
    # exchanges turned into facts once.
    session_consolidation: bool = True


@dataclass(frozen=True)
class WorkerConfig:
    concurrency: int = 2
    max_attempts: int = 6
    backoff_base_s: float = 2.0
    backoff_max_s: float = 600.0
    poll_interval_s: float = 1.0


@dataclass(frozen=True)
class SensorConfig:
    max_bytes: int = 4096


TRUST_LEVELS = ("full", "inner", "familiar", "public")  # stores per level: lobug.access
MIN_TOKEN_CHARS = 16
SECRET: Mapping[str, Any] = {"secret": True}  # field metadata: Config.to_dict() redacts it


@dataclass(frozen=True)
class TokenConfig:
    """One /v1 bearer token: who presents it (agent) and what it may see (trust)."""

    token: str = field(repr=False, metadata=SECRET)
    trust: str = "full"  # full | inner | familiar | public
    agent: str = "supervisor"  # whose category allowlist applies
    name: str = ""  # for logs and `config show`; the token itself is never printed


@dataclass(frozen=True)
class ApiConfig:
    allow_loopback: bool = True
    # The owner's devices present it (X-Device-Token); scripts/install-service generates one.
    device_token: str | None = field(default=None, repr=False, metadata=SECRET)
    # What a device without the token (a stranger on the LAN) may draw on: still answered,
    # but from the stores of this trust level only (public: none).
    unknown_device_trust: str = "public"
    device_allowlist: tuple[str, ...] = ()
    tokens: tuple[TokenConfig, ...] = ()  # [[api.tokens]]; env LOBUG_API_TOKENS=tok:trust:agent,…
    categories_file: Path | None = None  # categories + agent allowlists; None → built-in


@dataclass(frozen=True)
class LogConfig:
    level: str = "INFO"


@dataclass(frozen=True)
class Config:
    server: ServerConfig = field(default_factory=ServerConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    ollama: OllamaConfig = field(default_factory=OllamaConfig)
    chat: ChatConfig = field(default_factory=ChatConfig)
    speech: SpeechConfig = field(default_factory=SpeechConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    reflection: ReflectionConfig = field(default_factory=ReflectionConfig)
    scoring: ScoringConfig = field(default_factory=ScoringConfig)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    upkeep: UpkeepConfig = field(default_factory=UpkeepConfig)
    workers: WorkerConfig = field(default_factory=WorkerConfig)
    sensors: SensorConfig = field(default_factory=SensorConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    log: LogConfig = field(default_factory=LogConfig)

    def to_dict(self) -> dict[str, Any]:
        return _to_plain(self)


SECTIONS: dict[str, type] = typing.get_type_hints(Config)
# Well-known variables that do not follow LOBUG_<SECTION>_<KEY>.
ENV_ALIASES: dict[str, tuple[str, str]] = {
    "LOBUG_DATA_DIR": ("storage", "data_dir"),
    "LOBUG_EMBEDDER": ("embedding", "backend"),
    "LOBUG_LOG_LEVEL": ("log", "level"),
}
CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("embedding", "backend"): ("ollama", "local", "hashing"),
    ("memory", "extraction_mode"): ("heuristic", "llm", "hybrid"),
    ("log", "level"): ("DEBUG", "INFO", "WARNING", "ERROR"),
    ("api", "unknown_device_trust"): TRUST_LEVELS,
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
        _merge_toml(raw, path)
    _merge_env(raw, env)
    for dotted, value in (overrides or {}).items():
        section, _, key = dotted.partition(".")
        _put(raw, section, key, value, dotted)
    if "host" not in raw["ollama"] and env.get("OLLAMA_HOST"):
        raw["ollama"]["host"] = env["OLLAMA_HOST"]
    if "host" in raw["ollama"]:
        raw["ollama"]["host"] = normalize_ollama_host(str(raw["ollama"]["host"]))
    if "data_dir" not in raw["storage"]:
        raw["storage"]["data_dir"] = str(default_data_dir(env))
    sections = {name: _build(SECTIONS[name], raw[name], name) for name in SECTIONS}
    config = Config(**sections)
    _validate(config)
    return config


def _merge_toml(raw: dict[str, dict[str, Any]], path: Path) -> None:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {path} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    for section, values in data.items():
        if section not in SECTIONS:
            raise ConfigError(f"{section}: unknown config section (known: {', '.join(SECTIONS)})")
        if not isinstance(values, dict):
            raise ConfigError(f"{section}: expected a table")
        for key, value in values.items():
            _put(raw, section, key, value, f"{section}.{key}")


def _merge_env(raw: dict[str, dict[str, Any]], env: Mapping[str, str]) -> None:
    for name, value in env.items():
        if not name.startswith("LOBUG_"):
            continue
        if name in ENV_ALIASES:
            section, key = ENV_ALIASES[name]
            _put(raw, section, key, value, name)
            continue
        rest = name[len("LOBUG_") :].lower()
        for section in SECTIONS:
            if rest.startswith(section + "_"):
                key = rest[len(section) + 1 :]
                if key in _field_names(SECTIONS[section]):
                    _put(raw, section, key, value, name)
                break


def _put(raw: dict[str, dict[str, Any]], section: str, key: str, value: Any, origin: str) -> None:
    if section not in SECTIONS:
        raise ConfigError(f"{origin}: unknown config section {section!r}")
    if key not in _field_names(SECTIONS[section]):
        raise ConfigError(f"{origin}: unknown key {section}.{key}")
    raw[section][key] = value


def _field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _build(cls: type, values: dict[str, Any], section: str) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs = {key: _coerce(value, hints[key], f"{section}.{key}") for key, value in values.items()}
    return cls(**kwargs)


def _coerce(value: Any, hint: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none")):
            return None
        return _coerce(value, args[0], key)
    if origin is tuple:
        if dataclasses.is_dataclass(typing.get_args(hint)[0]):
            return _coerce_records(value, typing.get_args(hint)[0], key)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ConfigError(f"{key}: expected a list, got {value!r}")
        return tuple(str(i).strip() for i in items if str(i).strip())
    if hint is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if hint in (int, float):
        if isinstance(value, bool):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        try:
            return hint(value) if hint is float else int(str(value).strip())
        except (TypeError, ValueError):
            kind = "an integer" if hint is int else "a number"
            raise ConfigError(f"{key}: expected {kind}, got {value!r}") from None
    if hint is Path:
        return Path(str(value)).expanduser()
    if hint is str:
        if not isinstance(value, str | int | float):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return str(value)
    return value


def _coerce_records(value: Any, cls: type, key: str) -> tuple[Any, ...]:
    """A list of tables (`[[api.tokens]]`), or from the env `a:b:c,d:e:f` (fields in order)."""
    items = [p for p in value.split(",") if p.strip()] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise ConfigError(f"{key}: expected a list of tables")
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    missing_default = dataclasses.MISSING
    required = [
        f.name
        for f in fields
        if f.default is missing_default and f.default_factory is missing_default
    ]
    records = []
    for index, item in enumerate(items):
        where = f"{key}[{index}]"
        if isinstance(item, cls):
            records.append(item)
            continue
        if isinstance(item, str):
            parts = [p.strip() for p in item.split(":")]
            if len(parts) > len(names):  # never echo the value: it holds a secret
                raise ConfigError(f"{where}: expected {':'.join(names)}")
            item = {name: part for name, part in zip(names, parts, strict=False) if part}
        if not isinstance(item, Mapping):
            raise ConfigError(f"{where}: expected a table")
        unknown = sorted(set(item) - set(names))
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]} (known: {', '.join(names)})")
        missing = [name for name in required if name not in item]
        if missing:
            raise ConfigError(f"{where}.{missing[0]}: is required")
        records.append(_build(cls, dict(item), where))
    return tuple(records)


def _validate(config: Config) -> None:
    for (section, key), allowed in CHOICES.items():
        value = getattr(getattr(config, section), key)
        if value not in allowed:
            raise ConfigError(
                f"{section}.{key}: must be one of {', '.join(allowed)}, got {value!r}"
            )
    positive = [
        ("server.port", config.server.port, 0, 65535),
        ("chat.working_memory_size", config.chat.working_memory_size, 1, 10_000),
        ("chat.max_text_chars", config.chat.max_text_chars, 1, 1_000_000),
        ("embedding.dim", config.embedding.dim, 1, 8192),
        ("embedding.batch_size", config.embedding.batch_size, 1, 4096),
        ("memory.top_k", config.memory.top_k, 1, 100),
        ("workers.concurrency", config.workers.concurrency, 1, 64),
        ("workers.max_attempts", config.workers.max_attempts, 1, 1000),
        ("storage.read_connections", config.storage.read_connections, 1, 64),
        ("storage.max_page_count", config.storage.max_page_count, 0, 2**32 - 2),
        ("storage.busy_timeout_ms", config.storage.busy_timeout_ms, 0, 3_600_000),
        ("memory.max_writes_per_turn", config.memory.max_writes_per_turn, 1, 100),
        ("memory.max_writes_per_day", config.memory.max_writes_per_day, 1, 1_000_000),
        ("memory.judge_k", config.memory.judge_k, 0, 20),
        ("memory.consent_days", config.memory.consent_days, 0.01, 365),
        ("memory.consent_signals", config.memory.consent_signals, 1, 100),
        ("lifecycle.reinforce_gain", config.lifecycle.reinforce_gain, 0, 100),
        ("lifecycle.max_strength_days", config.lifecycle.max_strength_days, 1, 1_000_000),
    ]
    for key, value, low, high in positive:
        if not low <= value <= high:
            raise ConfigError(f"{key}: must be between {low} and {high}, got {value}")
    for key in ("min_similarity", "near_duplicate_jaccard", "link_min"):
        if not 0.0 <= getattr(config.memory, key) <= 1.0:
            raise ConfigError(f"memory.{key}: must be between 0 and 1")
    if config.lifecycle.gc_interval_s < 0:
        raise ConfigError("lifecycle.gc_interval_s: must be 0 (off) or positive")
    if config.memory.hit_flush_s <= 0:
        raise ConfigError("memory.hit_flush_s: must be positive")
    if config.memory.short_term_keep >= config.memory.short_term_threshold:
        raise ConfigError("memory.short_term_keep: must be below memory.short_term_threshold")
    if config.memory.long_term_keep >= config.memory.long_term_threshold:
        raise ConfigError("memory.long_term_keep: must be below memory.long_term_threshold")
    if not config.ollama.host.startswith(("http://", "https://")):
        raise ConfigError(
            f"ollama.host: must start with http:// or https://, got {config.ollama.host!r}"
        )
    for key in ("timeout_s", "health_timeout_s"):
        if getattr(config.ollama, key) <= 0:
            raise ConfigError(f"ollama.{key}: must be positive")
    _validate_api(config.api)


def _validate_api(api: ApiConfig) -> None:
    """Tokens: strong enough, known trust, unique. Messages name the entry, never the secret."""
    seen_tokens: set[str] = set()
    seen_names: set[str] = set()
    for index, entry in enumerate(api.tokens):
        where = f"api.tokens[{index}]"
        _check_secret(f"{where}.token", entry.token)
        if entry.token in seen_tokens:
            raise ConfigError(f"{where}.token: the same token is configured twice")
        seen_tokens.add(entry.token)
        if entry.trust not in TRUST_LEVELS:
            raise ConfigError(
                f"{where}.trust: must be one of {', '.join(TRUST_LEVELS)}, got {entry.trust!r}"
            )
        if not entry.agent or len(entry.agent) > 64 or not entry.agent.isprintable():
            raise ConfigError(f"{where}.agent: must be 1-64 printable characters")
        if entry.name and entry.name in seen_names:
            raise ConfigError(f"{where}.name: {entry.name!r} is used by an earlier token")
        seen_names.add(entry.name)
    if api.device_token is not None:
        _check_secret("api.device_token", api.device_token)
    # api.categories_file's contents are checked by lobug.access.load_config_checked (config
    # imports nothing from lobug; the policy's parser lives in access, above config).


def _check_secret(key: str, secret: str) -> None:
    if len(secret) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"{key}: must be at least {MIN_TOKEN_CHARS} characters, got {len(secret)}"
        )
    if not all(33 <= ord(ch) <= 126 for ch in secret):  # it travels in an HTTP header
        raise ConfigError(f"{key}: only printable ASCII without spaces is allowed")


def redact(secret: str | None) -> str | None:
    """How a secret is shown: enough to tell tokens apart, too little to use one."""
    if secret is None:
        return None
    return secret[:4] + "…" if len(secret) >= 8 else "…"


def _to_plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: redact(getattr(value, f.name))
            if f.metadata.get("secret")
            else _to_plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
        }
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_to_plain(v) for v in value]
    return value
