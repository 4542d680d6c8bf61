"""Configuration: frozen pydantic dataclasses loaded from TOML, then LOBUG_* env vars, then
CLI flags. `python -m lobug.config --example` prints systemd/lobug.toml.example."""

from lobug.config.fields import TRUST_LEVELS, ConfigError
from lobug.config.load import load_config
from lobug.config.models import (
    ApiConfig,
    ChatConfig,
    Config,
    EmbeddingConfig,
    LifecycleConfig,
    LLMConfig,
    MemoryConfig,
    OllamaConfig,
    ReflectionConfig,
    SensorConfig,
    SpeechConfig,
    TokenConfig,
    UpkeepConfig,
    WorkerConfig,
)

__all__ = [
    "TRUST_LEVELS",
    "ApiConfig",
    "ChatConfig",
    "Config",
    "ConfigError",
    "EmbeddingConfig",
    "LLMConfig",
    "LifecycleConfig",
    "MemoryConfig",
    "OllamaConfig",
    "ReflectionConfig",
    "SensorConfig",
    "SpeechConfig",
    "TokenConfig",
    "UpkeepConfig",
    "WorkerConfig",
    "load_config",
]
