"""Named, append-only schema migrations, each applied in a transaction with its record.

Never edit a migration that has shipped: add a new one. Vector tables are not here because
their dimension follows the configured embedder; see `lobug.storage.vectors`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from lobug.storage.frozen import content_hash, key_string  # m003's own frozen copies
from lobug.storage.sqlite import has_table

log = logging.getLogger(__name__)

M001_CORE = """
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE sessions (
  id          TEXT PRIMARY KEY,
  user_id     TEXT NOT NULL DEFAULT 'default',
  device_id   TEXT NOT NULL,
  started_at  REAL NOT NULL,
  last_active REAL NOT NULL
);
CREATE INDEX idx_sessions_device ON sessions(device_id, last_active DESC);

CREATE TABLE turns (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id     TEXT NOT NULL DEFAULT 'default',
  session_id  TEXT NOT NULL,
  device_id   TEXT NOT NULL DEFAULT 'default',
  role        TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  text        TEXT NOT NULL,
  ts          REAL NOT NULL,
  ref         TEXT,
  action      TEXT CHECK (action IS NULL OR action IN ('RESPOND', 'IGNORE')),
  degraded    INTEGER NOT NULL DEFAULT 0,
  summarized  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_turns_session ON turns(session_id, id);
CREATE INDEX idx_turns_user_ts ON turns(user_id, ts);
CREATE INDEX idx_turns_unsummarized ON turns(user_id, summarized, id);

CREATE TABLE memories (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id         TEXT NOT NULL DEFAULT 'default',
  kind            TEXT NOT NULL DEFAULT 'fact'
                  CHECK (kind IN ('fact', 'summary', 'reflection', 'insight', 'procedural')),
  content         TEXT NOT NULL,
  category        TEXT,
  layer           TEXT NOT NULL DEFAULT 'mid' CHECK (layer IN ('mid', 'long')),
  store           TEXT NOT NULL DEFAULT 'private' CHECK (store IN ('private', 'shared', 'social')),
  importance      REAL NOT NULL DEFAULT 0.5,
  confidence      REAL NOT NULL DEFAULT 1.0,
  decay_rate      REAL NOT NULL DEFAULT 0.1,
  hits            INTEGER NOT NULL DEFAULT 0,
  mention_count   INTEGER NOT NULL DEFAULT 1,
  last_accessed   REAL,
  created_at      REAL NOT NULL,
  updated_at      REAL NOT NULL,
  status          TEXT NOT NULL DEFAULT 'active'
                  CHECK (status IN ('active', 'archived', 'soft_deleted')),
  valid_from      REAL,
  valid_until     REAL,
  purge_at        REAL,
  pinned          INTEGER NOT NULL DEFAULT 0,
  supersedes      INTEGER REFERENCES memories(id) ON DELETE SET NULL,
  tags            TEXT NOT NULL DEFAULT '[]',
  pii             TEXT NOT NULL DEFAULT '[]',
  rules           TEXT NOT NULL DEFAULT '[]',
  hash            TEXT,
  session_id      TEXT,
  source_from     INTEGER,
  source_to       INTEGER,
  incorporated    INTEGER NOT NULL DEFAULT 0,
  attributes      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX idx_memories_user_status ON memories(user_id, status, kind);
CREATE INDEX idx_memories_hash ON memories(user_id, hash);
CREATE INDEX idx_memories_summary ON memories(user_id, kind, incorporated, id);
CREATE INDEX idx_memories_updated ON memories(user_id, updated_at);

CREATE TABLE memory_sources (
  memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  turn_id   INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
  reason    TEXT NOT NULL DEFAULT 'extracted',
  PRIMARY KEY (memory_id, turn_id, reason)
);
CREATE INDEX idx_memory_sources_turn ON memory_sources(turn_id);

CREATE TABLE base_memory (
  user_id    TEXT PRIMARY KEY,
  content    TEXT NOT NULL DEFAULT '',
  updated_at REAL NOT NULL
);

CREATE TABLE entities (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id        TEXT NOT NULL DEFAULT 'default',
  canonical_name TEXT NOT NULL,
  type           TEXT NOT NULL,
  aliases        TEXT NOT NULL DEFAULT '[]',
  summary        TEXT,
  mention_count  INTEGER NOT NULL DEFAULT 1,
  store          TEXT NOT NULL DEFAULT 'private',
  created_at     REAL NOT NULL,
  last_mentioned REAL NOT NULL,
  UNIQUE (user_id, canonical_name, type)
);

CREATE TABLE memory_entities (
  memory_id INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
  PRIMARY KEY (memory_id, entity_id)
);
CREATE INDEX idx_memory_entities_entity ON memory_entities(entity_id);

CREATE TABLE relations (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id       TEXT NOT NULL DEFAULT 'default',
  from_id       INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  to_id         INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
  relation_type TEXT NOT NULL DEFAULT 'related_to',
  strength      REAL NOT NULL,
  created_at    REAL NOT NULL,
  UNIQUE (from_id, to_id, relation_type)
);
CREATE INDEX idx_relations_to ON relations(to_id);

CREATE TABLE history (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id   TEXT NOT NULL DEFAULT 'default',
  memory_id INTEGER,
  event     TEXT NOT NULL CHECK (event IN ('ADD', 'UPDATE', 'MERGE', 'DELETE', 'SOFT_DELETE',
                                            'RESTORE', 'PURGE', 'LINK', 'TTL', 'ARCHIVE',
                                            'PROMOTE', 'DEMOTE', 'DECAY', 'HIT')),
  old_value TEXT,
  new_value TEXT,
  actor     TEXT NOT NULL DEFAULT 'system',
  meta      TEXT NOT NULL DEFAULT '{}',
  ts        REAL NOT NULL
);
CREATE INDEX idx_history_memory ON history(memory_id, ts DESC);

CREATE TABLE revisions (
  session_id TEXT PRIMARY KEY,
  rev        INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE change_log (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id    TEXT NOT NULL DEFAULT 'default',
  session_id TEXT NOT NULL,
  rev        INTEGER NOT NULL,
  memory_id  INTEGER,
  event      TEXT NOT NULL,
  meta       TEXT NOT NULL DEFAULT '{}',
  ts         REAL NOT NULL
);
CREATE INDEX idx_change_log_session ON change_log(session_id, rev DESC);

CREATE TABLE jobs (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  kind         TEXT NOT NULL,
  payload      TEXT NOT NULL DEFAULT '{}',
  state        TEXT NOT NULL DEFAULT 'pending'
               CHECK (state IN ('pending', 'running', 'done', 'failed')),
  attempts     INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 6,
  run_after    REAL NOT NULL,
  last_error   TEXT,
  dedupe_key   TEXT,
  created_at   REAL NOT NULL,
  updated_at   REAL NOT NULL
);
CREATE INDEX idx_jobs_ready ON jobs(state, run_after);
CREATE UNIQUE INDEX idx_jobs_dedupe ON jobs(dedupe_key)
  WHERE dedupe_key IS NOT NULL AND state IN ('pending', 'running');

CREATE TABLE sensor_state (
  device_id  TEXT PRIMARY KEY,
  state      TEXT NOT NULL,
  updated_at REAL NOT NULL
);

CREATE TABLE periodic_runs (
  name     TEXT PRIMARY KEY,
  last_run REAL NOT NULL
);
"""

M002_FTS = """
CREATE VIRTUAL TABLE memories_fts USING fts5(
  content, content='memories', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER trg_memories_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER trg_memories_ad AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER trg_memories_au AFTER UPDATE OF content ON memories BEGIN
  INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
  INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
END;

CREATE VIRTUAL TABLE turns_fts USING fts5(
  text, content='turns', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER trg_turns_ai AFTER INSERT ON turns BEGIN
  INSERT INTO turns_fts(rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER trg_turns_ad AFTER DELETE ON turns BEGIN
  INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER trg_turns_au AFTER UPDATE OF text ON turns BEGIN
  INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO turns_fts(rowid, text) VALUES (new.id, new.text);
END;
"""


def _sql(script: str) -> Callable[[Any], None]:
    def apply(conn: Any) -> None:
        # executescript would COMMIT our transaction; run statement by statement instead.
        for statement in _split(script):
            conn.execute(statement)

    return apply


def _fts(conn: Any) -> None:
    options = {row[0] for row in conn.execute("PRAGMA compile_options")}
    if "ENABLE_FTS5" not in options:
        # Without FTS5 searches fall back to LIKE (seed 000); the tables are simply absent.
        log.warning("this SQLite has no FTS5; full-text search falls back to LIKE")
        return
    _sql(M002_FTS)(conn)


def _memory_hash_and_keys(conn: Any) -> None:
    """One content hash everywhere (dedup.content_hash), and the subject/attribute key that
    lets a new fact find the one it contradicts ("lives in Portland" → "moved to Seattle").
    Uses the frozen copies in lobug.storage.frozen: this migration must never change."""
    conn.execute("ALTER TABLE memories ADD COLUMN fact_key TEXT")
    conn.execute(
        "CREATE INDEX idx_memories_fact_key ON memories(user_id, fact_key)"
        " WHERE fact_key IS NOT NULL"
    )
    rows = conn.execute("SELECT id, kind, content FROM memories").fetchall()
    for memory_id, kind, content in rows:
        key = key_string(content) if kind == "fact" else None
        conn.execute(
            "UPDATE memories SET hash = ?, fact_key = ? WHERE id = ?",
            (content_hash(content), key, memory_id),
        )


M004_HISTORY_EVENTS = (
    "'ADD', 'UPDATE', 'MERGE', 'DELETE', 'SOFT_DELETE', 'RESTORE', 'PURGE', 'LINK', 'TTL',"
    " 'ARCHIVE', 'PROMOTE', 'DEMOTE', 'DECAY', 'HIT', 'SUPERSEDE', 'PROPOSE', 'ACCEPT',"
    " 'REJECT', 'EXPIRE'"
)

M004_PROPOSALS = """
CREATE TABLE proposals (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id     TEXT NOT NULL DEFAULT 'default',
  field       TEXT NOT NULL,
  value       TEXT NOT NULL,
  content     TEXT NOT NULL,
  category    TEXT,
  sensitive   INTEGER NOT NULL,
  signals     INTEGER NOT NULL DEFAULT 1,
  status      TEXT NOT NULL DEFAULT 'pending'
              CHECK (status IN ('pending', 'accepted', 'rejected', 'expired')),
  turn_ids    TEXT NOT NULL DEFAULT '[]',
  session_id  TEXT,
  memory_id   INTEGER REFERENCES memories(id) ON DELETE SET NULL,
  created_at  REAL NOT NULL,
  updated_at  REAL NOT NULL,
  expires_at  REAL NOT NULL,
  decided_at  REAL,
  decided_by  TEXT
);
CREATE INDEX idx_proposals_user ON proposals(user_id, status, id);
"""


def _memory_that_lasts(conn: Any) -> None:
    """Issue 10: who wrote a memory (agent/run/actor), consent proposals, the history events
    they need, and undoing what the old decay did (it lowered confidence and soft-deleted
    facts the user had told us; decay now only lowers rank)."""
    for column in ("agent_id", "run_id", "actor_id"):
        conn.execute(f"ALTER TABLE memories ADD COLUMN {column} TEXT")
    _sql(M004_PROPOSALS)(conn)
    # SQLite cannot alter a CHECK: rebuild history with the wider event list.
    conn.execute(
        "CREATE TABLE history_new ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " user_id TEXT NOT NULL DEFAULT 'default',"
        " memory_id INTEGER,"
        f" event TEXT NOT NULL CHECK (event IN ({M004_HISTORY_EVENTS})),"
        " old_value TEXT, new_value TEXT,"
        " actor TEXT NOT NULL DEFAULT 'system',"
        " meta TEXT NOT NULL DEFAULT '{}',"
        " ts REAL NOT NULL)"
    )
    conn.execute("INSERT INTO history_new SELECT * FROM history")
    conn.execute("DROP TABLE history")
    conn.execute("ALTER TABLE history_new RENAME TO history")
    conn.execute("CREATE INDEX idx_history_memory ON history(memory_id, ts DESC)")
    now = time.time()
    conn.execute(
        "UPDATE memories SET confidence = 1.0, attributes = json_remove(attributes, '$.decayed_at')"
        " WHERE json_extract(attributes, '$.decayed_at') IS NOT NULL"
    )
    decayed = conn.execute(
        "SELECT m.id, m.user_id FROM memories m WHERE m.status = 'soft_deleted' AND ("
        " SELECT json_extract(h.meta, '$.reason') FROM history h WHERE h.memory_id = m.id"
        " AND h.event IN ('SOFT_DELETE', 'TTL') ORDER BY h.id DESC LIMIT 1) = 'decay'"
    ).fetchall()
    for memory_id, user_id in decayed:
        conn.execute(
            "UPDATE memories SET status = 'archived', purge_at = NULL, confidence = 1.0"
            " WHERE id = ?",
            (memory_id,),
        )
        conn.execute(
            "INSERT INTO history (user_id, memory_id, event, old_value, new_value, actor, meta, ts)"
            " VALUES (?, ?, 'RESTORE', 'soft_deleted', 'archived', 'migration', ?, ?)",
            (user_id, memory_id, '{"reason": "decay no longer deletes"}', now),
        )


# Issue 11: who said a turn, by name, when an import knows it (a conversation between two
# people); the search prefers the turns of the speaker a question names.
M005_SPEAKER = """
ALTER TABLE turns ADD COLUMN speaker TEXT;
CREATE INDEX idx_turns_speaker ON turns(user_id, speaker) WHERE speaker IS NOT NULL;
"""

# Issue 16, item 13: an embed job gathers the other pending embed jobs (`jobs.turns_to_embed`);
# without this index that read sorted every pending job, so each turn's embedding cost grew
# with the backlog, and a backlog grows with the history while turns arrive faster than jobs.
M006_JOBS_BY_KIND = """
CREATE INDEX idx_jobs_kind_state ON jobs(kind, state, id);
"""

# Issue 12: background upkeep. `pair_checks` remembers which pairs the daily consolidation
# compared (a fingerprint of ids and similarity) so none is sent to the model again for 14
# days; `op_events` counts operations and their latencies per hour (seed 001 §14); a session
# whose episodes were consolidated into facts carries `consolidated_at` (seed 003).
M007_UPKEEP = """
CREATE TABLE pair_checks (
  fingerprint TEXT PRIMARY KEY,
  user_id     TEXT NOT NULL DEFAULT 'default',
  a_id        INTEGER NOT NULL,
  b_id        INTEGER NOT NULL,
  label       TEXT NOT NULL,
  judge       TEXT NOT NULL,
  checked_at  REAL NOT NULL
);
CREATE INDEX idx_pair_checks_at ON pair_checks(user_id, checked_at);
CREATE TABLE op_events (
  op       TEXT NOT NULL,
  bucket   REAL NOT NULL,
  count    INTEGER NOT NULL DEFAULT 0,
  failures INTEGER NOT NULL DEFAULT 0,
  total_ms REAL NOT NULL DEFAULT 0,
  max_ms   REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (op, bucket)
);
ALTER TABLE sessions ADD COLUMN consolidated_at REAL;
"""

# Issue 13: every write to a vector table is logged here in its own transaction, so the
# daemon's in-memory vector index (`storage.vector_index`) follows writes from any connection
# or process; the daemon's GC forgets what its index has applied. The fts5vocab tables tell a
# search how many rows hold each word, so a word in thousands of rows does not drive the
# lexical list (`search.fts.common_words`).
M008_VOCABULARY = """
CREATE VIRTUAL TABLE memories_fts_vocab USING fts5vocab(memories_fts, row);
CREATE VIRTUAL TABLE turns_fts_vocab USING fts5vocab(turns_fts, row);
"""
M008_VECTOR_CHANGES = """
CREATE TABLE vector_changes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: an index skips ids it has applied
  tbl TEXT NOT NULL,
  row_id INTEGER NOT NULL
);
"""


def _vector_changes_and_vocabulary(conn: Any) -> None:
    _sql(M008_VECTOR_CHANGES)(conn)
    if has_table(conn, "memories_fts") and has_table(conn, "turns_fts"):
        _sql(M008_VOCABULARY)(conn)


# Issue 25: a session belongs to the trust of the caller that opened it; a caller of another
# trust never joins it (lobug.conversation.resolve_session). Sessions from before were the
# owner's: every door answered at full trust.
M009_SESSION_TRUST = """
ALTER TABLE sessions ADD COLUMN trust TEXT NOT NULL DEFAULT 'full';
"""

# Issue 27 (seed 002): a memory may be kept until a time (`expires_at`, epoch seconds; NULL:
# for good). Past it the memory is hidden from every read and the GC pass soft-deletes it.
M010_MEMORY_EXPIRY = """
ALTER TABLE memories ADD COLUMN expires_at REAL;
CREATE INDEX idx_memories_expires ON memories(expires_at) WHERE expires_at IS NOT NULL;
"""

# Issue 27 (seed 002): one structured summary per ended session (memory/upkeep/sessions.py),
# rewritten when a session the user came back to ends again. `decisions` and `open_items` are
# JSON arrays of strings.
M011_SESSION_SUMMARIES = """
CREATE TABLE session_summaries (
  session_id        TEXT PRIMARY KEY,
  user_id           TEXT NOT NULL DEFAULT 'default',
  request           TEXT NOT NULL,
  outcome           TEXT NOT NULL,
  decisions         TEXT NOT NULL DEFAULT '[]',
  open_items        TEXT NOT NULL DEFAULT '[]',
  observation_count INTEGER NOT NULL DEFAULT 0,
  turn_count        INTEGER NOT NULL DEFAULT 0,
  last_turn_id      INTEGER,
  created_at        REAL NOT NULL,
  updated_at        REAL NOT NULL
);
CREATE INDEX idx_session_summaries_user ON session_summaries(user_id, updated_at DESC);
"""

# Issue 27 (seed 001 §14): one row per memory event beside op_events' hourly aggregates: who,
# which node of the flow, what and with what outcome, the memory and category, the best
# neighbour's similarity; no content (memory/upkeep/events.py). Pruned by the daily GC.
M012_MEMORY_EVENTS = """
CREATE TABLE memory_events (
  id        INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id   TEXT NOT NULL DEFAULT 'default',
  thread_id TEXT,
  node      TEXT NOT NULL CHECK (node IN ('hotpath', 'context', 'episodic', 'worker')),
  op        TEXT NOT NULL,
  status    TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'error', 'skipped')),
  memory_id INTEGER,
  category  TEXT,
  sim       REAL,
  ts        REAL NOT NULL
);
CREATE INDEX idx_memory_events_user_ts ON memory_events(user_id, ts DESC);
CREATE INDEX idx_memory_events_node_ts ON memory_events(node, ts DESC);
"""

# Issue 27 (seed 003): turns (episodes) are entity-linked like memories — with the regexes by the
# `embed_turn` job, with the accurate NER by the nightly enrichment — and `turn_ner` records
# which strategy last looked at a turn, so the enrichment picks each turn once per strategy.
M013_TURN_ENTITIES = """
CREATE TABLE turn_entities (
  turn_id   INTEGER NOT NULL REFERENCES turns(id) ON DELETE CASCADE,
  entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
  PRIMARY KEY (turn_id, entity_id)
);
CREATE INDEX idx_turn_entities_entity ON turn_entities(entity_id);
CREATE TABLE turn_ner (
  turn_id  INTEGER PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,
  strategy TEXT NOT NULL,
  at       REAL NOT NULL
);
"""

# A reply's key: the question it answers with the reply, embedded (memory.vectors.replies).
M014_REPLY_KEYS = """
CREATE TABLE turn_reply_keys (
  turn_id   INTEGER PRIMARY KEY REFERENCES turns(id) ON DELETE CASCADE,
  embedding BLOB NOT NULL
);
"""

# The turn a turn answers, linked when it is stored (issue 39): "the id before it" is another
# device's turn when two talk at once. Older turns: the turn before them in their session.
M015_REPLY_TO = """
ALTER TABLE turns ADD COLUMN reply_to INTEGER REFERENCES turns(id) ON DELETE SET NULL;
UPDATE turns SET reply_to = (
  SELECT MAX(p.id) FROM turns p WHERE p.session_id = turns.session_id AND p.id < turns.id
);
CREATE INDEX idx_turns_reply_to ON turns(reply_to);
"""

# Issue 38: a session belongs to the principal that opened it (lobug.access.Principal.owner),
# not to a trust level. Sessions from before were the owner's when at full trust; the others
# were shared by everyone at their trust, so nobody joins them again.
# Issue 40: the devices heard on the firmware routes, one row per device id and address (a
# paired device is known by both); `trust` is NULL until the owner pairs it (lobug.devices).
M016_DEVICES = """
ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT 'owner';
UPDATE sessions SET owner = 'before-38:' || trust WHERE trust != 'full';
CREATE INDEX idx_sessions_owner ON sessions(device_id, owner, last_active DESC);
CREATE TABLE devices (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  device_id  TEXT NOT NULL,
  address    TEXT NOT NULL,
  first_seen REAL NOT NULL,
  last_seen  REAL NOT NULL,
  turns      INTEGER NOT NULL DEFAULT 0,
  trust      TEXT CHECK (trust IN ('full', 'inner', 'familiar', 'public')),
  paired_at  REAL,
  paired_by  TEXT,
  UNIQUE (device_id, address)
);
CREATE INDEX idx_devices_seen ON devices(last_seen DESC);
"""

# How often the process died while a job ran (lobug.workers.queue.recover): a job that keeps
# killing the process is retired instead of running again at every start.
M019_JOB_INTERRUPTIONS = """
ALTER TABLE jobs ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0;
"""

MIGRATIONS: list[tuple[str, Callable[[Any], None]]] = [
    ("m001_core_tables", _sql(M001_CORE)),
    ("m002_fts", _fts),
    ("m003_memory_hash_and_keys", _memory_hash_and_keys),
    ("m004_memory_that_lasts", _memory_that_lasts),
    ("m005_turn_speaker", _sql(M005_SPEAKER)),
    ("m006_jobs_by_kind", _sql(M006_JOBS_BY_KIND)),
    ("m007_upkeep", _sql(M007_UPKEEP)),
    ("m008_vector_changes_and_vocabulary", _vector_changes_and_vocabulary),
    ("m009_session_trust", _sql(M009_SESSION_TRUST)),
    ("m010_memory_expiry", _sql(M010_MEMORY_EXPIRY)),
    ("m011_session_summaries", _sql(M011_SESSION_SUMMARIES)),
    ("m012_memory_events", _sql(M012_MEMORY_EVENTS)),
    ("m013_turn_entities", _sql(M013_TURN_ENTITIES)),
    ("m014_reply_keys", _sql(M014_REPLY_KEYS)),
    ("m015_reply_to", _sql(M015_REPLY_TO)),
    ("m016_devices", _sql(M016_DEVICES)),
    ("m019_job_interruptions", _sql(M019_JOB_INTERRUPTIONS)),
]


def _split(script: str) -> list[str]:
    """Split on ';' at statement ends, keeping trigger bodies (BEGIN … END;) whole."""
    statements, current = [], []
    for line in script.splitlines():
        current.append(line)
        text = "\n".join(current).strip()
        if text.endswith(";") and (not _opens_trigger(text) or text.upper().endswith("END;")):
            statements.append(text)
            current = []
    tail = "\n".join(current).strip()
    if tail:
        statements.append(tail)
    return statements


def _opens_trigger(text: str) -> bool:
    return text.upper().startswith("CREATE TRIGGER")


def applied(conn: Any) -> list[str]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    return [row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]


def migrate(conn: Any) -> list[str]:
    """Apply every pending migration; returns the names applied now."""
    done = set(applied(conn))
    now_applied = []
    for name, apply in MIGRATIONS:
        if name in done:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process (a CLI command next to the daemon) may have applied it between
            # our read and this lock: look again under the lock.
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                conn.execute("COMMIT")
                continue
            apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                (name, time.time()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        log.info("applied migration %s", name)
        now_applied.append(name)
    return now_applied
