"""Configuration: frozen pydantic dataclasses loaded from TOML, then LOBUG_* env vars, then
CLI flags. `python -m lobug.config --example` prints systemd/lobug.toml.example."""

from lobug.config.fields import MIN_TOKEN_CHARS, TRUST_LEVELS, ConfigError, redact
from lobug.config.llm_section import LLMConfig
from lobug.config.load import ENV_ALIASES, default_data_dir, load_config, normalize_ollama_host
from lobug.config.models import (
    SECTIONS,
    ApiConfig,
    ChatConfig,
    Config,
    EmbeddingConfig,
    LifecycleConfig,
    LogConfig,
    MemoryConfig,
    OllamaConfig,
    ReflectionConfig,
    SensorConfig,
    ServerConfig,
    SpeechConfig,
    StorageConfig,
    TokenConfig,
    UpkeepConfig,
    WorkerConfig,
)
from lobug.config.wyoming_section import WyomingConfig

__all__ = [
    "ENV_ALIASES",
    "MIN_TOKEN_CHARS",
    "SECTIONS",
    "TRUST_LEVELS",
    "ApiConfig",
    "ChatConfig",
    "Config",
    "ConfigError",
    "EmbeddingConfig",
    "LLMConfig",
    "LifecycleConfig",
    "LogConfig",
    "MemoryConfig",
    "OllamaConfig",
    "ReflectionConfig",
    "SensorConfig",
    "ServerConfig",
    "SpeechConfig",
    "StorageConfig",
    "TokenConfig",
    "UpkeepConfig",
    "WorkerConfig",
    "WyomingConfig",
    "default_data_dir",
    "load_config",
    "normalize_ollama_host",
    "redact",
]
