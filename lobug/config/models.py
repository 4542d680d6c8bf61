"""Config sections: one frozen pydantic dataclass per TOML table, every key's default and
comment in one place (`Field(description=...)` becomes the comment in
systemd/lobug.toml.example, see `lobug.config.example`). `examples=[...]` marks a key that is
unset by default: the example shows it commented out with that value."""

from __future__ import annotations

import dataclasses
import ipaddress
import typing
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer, TypeAdapter
from pydantic.dataclasses import dataclass

from lobug.config.fields import (
    SECTION,
    FilePath,
    Names,
    OptionalPath,
    OptionalSecret,
    OptionalStr,
    Secret,
    Trust,
)
from lobug.config.memory_sections import (
    LifecycleConfig,
    MemoryConfig,
    ReflectionConfig,
    UpkeepConfig,
)
from lobug.config.redaction import redact_url

DB_FILE = "lobug.db"  # the database's name in storage.data_dir


@dataclass(frozen=True, config=SECTION)
class ServerConfig:
    host: str = Field(
        default="0.0.0.0",
        description='the M5Stack device reaches us over the LAN; "127.0.0.1" = local only',
    )
    port: int = Field(
        default=8321,
        ge=0,
        le=65535,
        description="unprivileged, so the service needs no capabilities",
    )
    shutdown_timeout_s: float = Field(
        default=10.0, description="grace for running requests on stop (the unit allows 20 s)"
    )
    max_json_bytes: int = Field(
        default=64 * 1024, description="request bodies above this are refused"
    )
    max_connections: int = Field(
        default=0, description="open connections at most; 0 = the fd limit less a reserve"
    )


@dataclass(frozen=True, config=SECTION)
class StorageConfig:
    data_dir: FilePath = Field(
        default=Path(),  # resolved by load_config
        examples=["/var/lib/lobug"],
        description="data_dir defaults to $STATE_DIRECTORY (/var/lib/lobug under systemd), else"
        " $XDG_DATA_HOME/lobug; $LOBUG_DATA_DIR and --data-dir win over this file. Under"
        " ProtectSystem=strict only /var/lib/lobug and /var/cache/lobug are writable, so leave"
        " this unset when running as the service.",
    )
    busy_timeout_ms: int = Field(
        default=5000,
        ge=0,
        le=3_600_000,
        description="how long a write waits for the single writer before failing",
    )
    read_connections: int = Field(
        default=4,
        ge=1,
        le=64,
        description="read-only SQLite connections; 2 is plenty on a Pi Zero/3",
    )
    max_page_count: int = Field(
        default=0,
        ge=0,
        le=2**32 - 2,
        description="Safety valve for small SD cards: the database may grow to at most this many"
        " 4 KiB pages (e.g. 262144 = 1 GiB). Past it, writes answer 503 storage_full instead of"
        " filling the card that the OS lives on; reads and replies keep working. 0 = unlimited"
        " (the disk is the limit).",
    )
    vector_index: bool = Field(
        default=True,
        description="The daemon (and a CLI command that searches) keeps a copy of the vectors in"
        " memory (4 bytes per dimension per"
        " vector: 15 MB for 10k 384-d vectors) for exact nearest-neighbour search without scanning"
        " sqlite-vec on every query; SQLite stays the source of truth. false: scan sqlite-vec"
        " (slower past a few thousand).",
    )

    @property
    def db_path(self) -> Path:
        return self.data_dir / DB_FILE


def _hidden(key: str | None) -> str | None:
    return None if key is None else "…"


# `config show` says only whether one is set; any length (local servers take any string).
ApiKey = Annotated[OptionalStr, PlainSerializer(_hidden)]
# A server's address: `config show` hides its user, password and query values.
ServerUrl = Annotated[str, PlainSerializer(redact_url)]


@dataclass(frozen=True, config=SECTION)
class LLMConfig:
    """The chat model's server. ollama: [ollama] host and chat_model. openai: any server of
    the OpenAI chat API (llama.cpp's llama-server, LM Studio, LocalAI, vLLM) at base_url. Both
    use [ollama] timeout_s and temperature."""

    backend: Literal["ollama", "openai"] = Field(default="ollama", description="ollama | openai")
    base_url: ServerUrl = Field(
        default="http://127.0.0.1:8080/v1",
        description='openai backend (and embedding.backend = "openai"): the API root, e.g.'
        " llama-server :8080/v1, LM Studio :1234/v1, vLLM :8000/v1",
    )
    api_key: ApiKey = Field(
        default=None,
        repr=False,
        examples=["your-server-key"],
        description="openai backend: sent as Authorization: Bearer; unset for servers that"
        " need none (never logged or shown)",
    )
    chat_model: str = Field(
        default="",
        description='openai backend: the model to ask; "" = the first one the server lists',
    )
    schemas: bool = Field(
        default=True,
        description="send each answer's JSON schema (Ollama format, OpenAI response_format) so"
        " the server constrains the output; false for a server that refuses them",
    )


@dataclass(frozen=True, config=SECTION)
class OllamaConfig:
    host: ServerUrl = Field(
        default="http://127.0.0.1:11434",
        description="also accepts host, host:port or :port; $OLLAMA_HOST if unset",
    )
    chat_model: str = Field(
        default="llama3.2", description="the model that answers (`ollama pull` it first)"
    )
    timeout_s: float = Field(
        default=30.0, gt=0, description="one chat call; past this the device gets chat.apology"
    )
    max_tokens: int = Field(
        default=1024,
        ge=16,
        le=1_048_576,
        description="the most one reply may generate, whoever asks: a client's larger"
        " max_tokens is lowered to this, a call that names none gets it",
    )
    temperature: float = Field(
        default=0.7, description="the replies' variety (0 = the same answer every time)"
    )
    keep_alive: str = Field(
        default="30m",
        description="keep the model loaded between turns (first token is slow otherwise)",
    )


@dataclass(frozen=True, config=SECTION)
class ChatConfig:
    personality_file: OptionalPath = Field(
        default=None,
        examples=["/etc/lobug/personality.txt"],
        description="unset = the bundled personality",
    )
    working_memory_size: int = Field(
        default=20, ge=1, le=10_000, description="messages per session kept in the prompt"
    )
    session_idle_minutes: float = Field(
        default=30.0, description="a new session starts after this much silence"
    )
    stranger_bytes_per_day: int = Field(
        default=2 * 1024 * 1024,
        ge=0,
        description="the text all public-trust callers (strangers) together may store a day;"
        " past it their turns answer 503 until the household's midnight (docs/security.md)",
    )
    max_text_chars: int = Field(
        default=4000, ge=1, le=1_000_000, description="longer typed messages are refused"
    )
    apology: str = Field(
        default="Sorry, I can't think right now. I'll remember what you said.",
        description="what the device hears when the model cannot answer",
    )


@dataclass(frozen=True, config=SECTION)
class SpeechConfig:
    model: str = Field(
        default="base.en",
        description='a faster-whisper size ("tiny.en" suits a Pi 3/4) or a model directory',
    )
    device: str = Field(default="cpu", description='"cuda" with a GPU and its libraries')
    compute_type: str = Field(
        default="int8", description="int8 is the fast choice on ARM and laptop CPUs"
    )
    cpu_threads: int = Field(default=0, description="0 = let faster-whisper decide")
    local_files_only: bool = Field(
        default=True, description="offline first: never download a model implicitly"
    )
    download_root: OptionalPath = Field(
        default=None,
        examples=["/var/cache/lobug/models"],
        description="download_root defaults to <data_dir>/models. The systemd unit sets"
        " LOBUG_SPEECH_DOWNLOAD_ROOT=/var/cache/lobug/models, which wins over this file; change"
        " it with `systemctl edit lobug` instead.",
    )
    language: OptionalStr = Field(
        default=None, examples=["en"], description="unset = detect per utterance"
    )
    beam_size: int = Field(
        default=5,
        description="5 makes the most of the memory's names (docs/benchmarks.md);"
        " 1 = greedy, the cheapest on a small board",
    )
    vad: bool = Field(default=True, description="skip silence before transcribing")
    vocabulary: Literal["hotwords", "prompt", "off"] = Field(
        default="hotwords",
        description="hand Whisper the names the memory knows (people, pets, places; only from"
        " stores the speaker may read) as faster-whisper hotwords, as its initial prompt, or not",
    )
    vocabulary_max_tokens: int = Field(
        default=48, ge=0, le=200, description="bound on those names, in Whisper tokens"
    )
    max_audio_seconds: float = Field(
        default=60.0, description="longer recordings are refused (transcribing is the slow part)"
    )
    max_audio_bytes: int = Field(
        default=10 * 1024 * 1024, description="larger uploads are refused before decoding"
    )
    load_at_start: bool = Field(
        default=True, description="load the model at startup instead of on the first request"
    )


# What `embedding.backend` alone chooses (load_config fills embedding.model from it).
BACKEND_MODELS = {
    "ollama": "nomic-embed-text",
    "openai": "nomic-embed-text",
    "local": "all-MiniLM-L6-v2",
}
# Embedding models whose dimension is known: embedding.dim follows the model unless set, and a
# dim that disagrees with the model stops the start (a typo would fail every embedding).
EMBEDDING_DIMS = {
    "nomic-embed-text": 768,
    "all-MiniLM-L6-v2": 384,
    "all-minilm": 384,  # Ollama's name for the same weights
    "mxbai-embed-large": 1024,
    "bge-small-en-v1.5": 384,
    "bge-m3": 1024,
}


def known_dim(model: str) -> int | None:
    """The dimension of a known embedding model: `nomic-embed-text:latest` and
    `sentence-transformers/all-MiniLM-L6-v2` are the models they name."""
    name = model.rsplit("/", 1)[-1].split(":", 1)[0]
    return EMBEDDING_DIMS.get(model, EMBEDDING_DIMS.get(name))


@dataclass(frozen=True, config=SECTION)
class EmbeddingConfig:
    backend: Literal["ollama", "openai", "local", "hashing"] = Field(
        default="ollama",
        description="ollama | openai (llm.base_url) | local (MiniLM on this machine, extra"
        ' "local-embed") | hashing (tests only)',
    )
    model: str = Field(
        default="nomic-embed-text",
        description="the embedding model of the backend above; unset, the backend's own"
        " (nomic-embed-text; all-MiniLM-L6-v2 for local)",
    )
    dim: int = Field(
        default=768,
        ge=1,
        le=8192,
        description="unset, the model's own when it is a known one; a change needs"
        " `lobug memory reembed`",
    )
    batch_size: int = Field(
        default=32, ge=1, le=4096, description="texts per embedding call (re-embedding, imports)"
    )
    timeout_s: float = Field(
        default=10.0, description="one embedding call; past it search goes on by words alone"
    )


@dataclass(frozen=True, config=SECTION)
class WorkerConfig:
    concurrency: int = Field(
        default=2,
        ge=1,
        le=64,
        description="background jobs at once; 1 on a Pi shares the CPU better with chat",
    )
    max_attempts: int = Field(
        default=6,
        ge=1,
        le=1000,
        description="then the job is marked failed (kept in the DB, not dropped)",
    )
    backoff_base_s: float = Field(
        default=2.0,
        description="a failed job waits this, doubling per attempt (at most 10 minutes)",
    )


@dataclass(frozen=True, config=SECTION)
class SensorConfig:
    max_bytes: int = Field(
        default=4096, description="largest sensor-state report accepted from a device"
    )


@dataclass(frozen=True, config=SECTION)
class TokenConfig:
    """One /v1 bearer token: who presents it (agent) and what it may see (trust)."""

    token: Secret = Field(
        repr=False,
        examples=["change-me-16-chars-or-more"],
        description="sent as Authorization: Bearer",
    )
    trust: Trust = Field(default="full", description="full | inner | familiar | public")
    agent: str = Field(default="supervisor", description="whose category allowlist applies")
    name: str = Field(
        default="", description="for logs and `config show`; the token itself is never printed"
    )


def _token_records(value: Any) -> Any:
    """From the env: `token:trust:agent:name,…` (fields in order, empty parts = defaults)."""
    items = [p for p in value.split(",") if p.strip()] if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        return value  # refused by the type: "expected a list of tables"
    names = [f.name for f in dataclasses.fields(TokenConfig)]
    records = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            parts = [p.strip() for p in item.split(":")]
            if len(parts) > len(names):  # never echo the value: it holds a secret
                raise ValueError(f"[{index}]: expected {':'.join(names)}")
            item = {name: part for name, part in zip(names, parts, strict=False) if part}
        records.append(item)
    return records


@dataclass(frozen=True, config=SECTION)
class ApiConfig:
    allow_loopback: bool = Field(
        default=True,
        description="the /v1 memory API answers clients on this machine without a bearer token",
    )
    device_token: OptionalSecret = Field(
        default=None,
        repr=False,
        examples=["change-me"],
        description="the owner's devices send it (X-Device-Token); install-service generates one",
    )
    unknown_device_trust: Trust = Field(
        default="public",
        description="a device without the token is answered from these stores only (public: none)",
    )
    device_allowlist: Names = Field(
        default=(), description="device ids allowed to talk to us; empty = any"
    )
    # A browser must reach /v1, /ui and /mcp by a name of ours: a foreign Host is a page
    # rebinding its own name to us (issue 25). The firmware routes answer any Host.
    allowed_hosts: Names = Field(
        default=(),
        description="other names /v1, /ui and /mcp answer to (e.g. a proxy's lobug.home); IP"
        " addresses, localhost and this machine's NAME and NAME.local always work",
    )
    tokens: Annotated[tuple[TokenConfig, ...], BeforeValidator(_token_records)] = Field(
        default=(),
        description="/v1 bearer tokens, one [[api.tokens]] table each;"
        " env LOBUG_API_TOKENS=token:trust:agent,…",
    )
    categories_file: OptionalPath = Field(
        default=None,
        examples=["/etc/lobug/categories.toml"],
        description="categories and agent allowlists; unset = built-in",
    )


# The [wyoming] section: lobug/wyoming_server, docs/wyoming.md.
def _tcp_uri(uri: str) -> str:
    """`tcp://host:port`, what Wyoming services take as --uri (IPv6 as tcp://[::]:10300)."""
    try:
        parts = urlsplit(uri.strip())
        port = parts.port
    except ValueError:
        port, parts = None, None
    if parts is None or parts.scheme != "tcp" or not parts.hostname or not port:
        raise ValueError(f"expected tcp://host:port (e.g. tcp://0.0.0.0:10300), got {uri!r}")
    return uri.strip()


def _networks(hosts: tuple[str, ...]) -> tuple[str, ...]:
    for host in hosts:
        try:
            ipaddress.ip_network(host, strict=False)
        except ValueError:
            raise ValueError(
                f"expected IP addresses or networks (192.168.1.20, 192.168.1.0/24), got {host!r}"
            ) from None
    return hosts


TcpUri = Annotated[str, AfterValidator(_tcp_uri)]
Networks = Annotated[Names, AfterValidator(_networks)]


@dataclass(frozen=True, config=SECTION)
class WyomingConfig:
    """Home Assistant Assist talks to Lo-Bug over the Wyoming protocol: an `asr` service (the
    speech model above) and a `handle` service (the same conversation turn as /chat/text).
    Wyoming has no authentication: see trusted_hosts."""

    enabled: bool = Field(default=True, description="false = no Wyoming port is opened")
    uri: TcpUri = Field(
        default="tcp://0.0.0.0:10300",
        description='where it listens; "tcp://127.0.0.1:10300" = this machine only',
    )
    trusted_hosts: Networks = Field(
        default=(),
        examples=[["192.168.1.20"]],
        description="Addresses or networks (192.168.1.0/24) whose conversation turns may draw"
        " on every memory store, like the owner's device. Loopback is trusted while"
        " api.allow_loopback is on; any other peer is answered at api.unknown_device_trust.",
    )
    # What one LAN peer (no authentication) can make the daemon hold: lobug/wyoming_server.
    max_connections: int = Field(
        default=32,
        ge=1,
        le=1024,
        description="open Wyoming connections at most; a new one past it gets an error and is"
        " closed (Home Assistant opens one per request)",
    )
    idle_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="a connection that sends no whole event (or reads none of the reply) for"
        " this long is closed",
    )
    max_audio_bytes_total: int = Field(
        default=32 * 1024 * 1024,
        ge=64 * 1024,
        le=1024 * 1024 * 1024,
        description="asr audio held at once across every connection; audio past it is refused"
        " with an error (speech.max_audio_bytes still limits each stream)",
    )


@dataclass(frozen=True, config=SECTION)
class LogConfig:
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO",
        description="DEBUG | INFO | WARNING | ERROR; DEBUG also shows the HTTP access log",
    )


@dataclass(frozen=True, config=SECTION)
class Config:
    server: ServerConfig = Field(default_factory=ServerConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    ollama: OllamaConfig = Field(default_factory=OllamaConfig)
    chat: ChatConfig = Field(default_factory=ChatConfig)
    speech: SpeechConfig = Field(default_factory=SpeechConfig)
    embedding: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    reflection: ReflectionConfig = Field(default_factory=ReflectionConfig)
    lifecycle: LifecycleConfig = Field(default_factory=LifecycleConfig)
    upkeep: UpkeepConfig = Field(default_factory=UpkeepConfig)
    workers: WorkerConfig = Field(default_factory=WorkerConfig)
    sensors: SensorConfig = Field(default_factory=SensorConfig)
    api: ApiConfig = Field(default_factory=ApiConfig)
    wyoming: WyomingConfig = Field(default_factory=WyomingConfig)
    log: LogConfig = Field(default_factory=LogConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values, secrets redacted (what `lobug config show` prints)."""
        return _ADAPTER.dump_python(self, mode="json")


_ADAPTER: TypeAdapter[Config] = TypeAdapter(Config)
SECTIONS: dict[str, type] = typing.get_type_hints(Config)
