"""Lifecycle policies at their boundaries, on a real database with sqlite-vec, and the purge."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lobug.memory.graph.entities import Mention, link_entities, link_turn_entities
from lobug.memory.lifecycle import forgetting
from lobug.memory.lifecycle import policies as lifecycle
from lobug.memory.lifecycle.purge import purge_due, purge_memory
from lobug.memory.table.rows import add_history
from lobug.memory.table.salience import DAY, Salience
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect, sqlite3
from lobug.storage.vectors import create_vector_tables, pack

NOW = 1_750_000_000.0
DIM = 8


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    db = connect(tmp_path / "life.db")
    migrate(db)
    create_vector_tables(db, DIM)
    yield db
    db.close()


def add(
    conn: Any, content: str = "The user likes tea.", *, vector: bool = True, **columns: Any
) -> int:
    values = {"content": content, "created_at": NOW, "updated_at": NOW, **columns}
    names = ", ".join(values)
    marks = ", ".join("?" * len(values))
    cur = conn.execute(f"INSERT INTO memories ({names}) VALUES ({marks})", tuple(values.values()))
    memory_id = int(cur.lastrowid)
    if vector:
        conn.execute(
            "INSERT INTO memory_vectors (memory_id, embedding) VALUES (?, ?)",
            (memory_id, pack([1.0] + [0.0] * (DIM - 1))),
        )
    return memory_id


def get(conn: Any, memory_id: int) -> Any:
    return conn.execute("SELECT * FROM memories WHERE id = ?", (memory_id,)).fetchone()


def events(conn: Any, memory_id: int) -> list[str]:
    rows = conn.execute("SELECT event FROM history WHERE memory_id = ? ORDER BY id", (memory_id,))
    return [r[0] for r in rows]


def has_vector(conn: Any, memory_id: int) -> bool:
    return (
        conn.execute(
            "SELECT COUNT(*) FROM memory_vectors WHERE memory_id = ?", (memory_id,)
        ).fetchone()[0]
        == 1
    )


# -- promote -----------------------------------------------------------------------------------
def test_promote_needs_three_hits(conn: Any) -> None:
    two = add(conn, hits=2, last_accessed=NOW)
    three = add(conn, hits=3, last_accessed=NOW)
    assert lifecycle.promote(conn, NOW) == 1
    assert (get(conn, two)["layer"], get(conn, three)["layer"]) == ("mid", "long")
    assert events(conn, three) == ["PROMOTE"] and events(conn, two) == []


def test_promote_seen_within_seven_days_inclusive(conn: Any) -> None:
    edge = add(conn, hits=5, last_accessed=NOW - 7.0 * DAY)
    late = add(conn, hits=5, last_accessed=NOW - 7.01 * DAY)
    never = add(conn, hits=5, created_at=NOW - 7.01 * DAY)  # no access: creation counts
    assert lifecycle.promote(conn, NOW) == 1
    assert [get(conn, i)["layer"] for i in (edge, late, never)] == ["long", "mid", "mid"]


# -- archive / demote --------------------------------------------------------------------------
NO_RECENCY = Salience(w_recency=0.0)


def test_archive_below_score_half_strictly(conn: Any) -> None:
    at = add(conn, importance=0.25)  # 2.0 · 0.25 = 0.5 exactly
    below = add(conn, importance=0.2499)
    result = lifecycle.demote_or_archive(conn, NOW, NO_RECENCY)
    assert result == {"archived": 1, "demoted": 0}
    assert (get(conn, at)["status"], get(conn, below)["status"]) == ("active", "archived")
    (meta,) = conn.execute("SELECT meta FROM history WHERE memory_id = ?", (below,)).fetchall()
    assert json.loads(meta[0])["reason"] == "low_score"
    # Archived is out of the prompt's default set, not out of reach: the vector stays.
    assert has_vector(conn, below) and has_vector(conn, at)


def test_archive_after_thirty_idle_days_strictly(conn: Any) -> None:
    edge = add(conn, importance=1.0, created_at=NOW - 30.0 * DAY)
    old = add(conn, importance=1.0, created_at=NOW - 30.01 * DAY)
    used = add(conn, importance=1.0, created_at=NOW - 90 * DAY, last_accessed=NOW - DAY)
    pinned = add(conn, importance=1.0, created_at=NOW - 90 * DAY, pinned=1)
    lifecycle.demote_or_archive(conn, NOW, Salience(), max_age_days=30)
    statuses = [get(conn, i)["status"] for i in (edge, old, used, pinned)]
    assert statuses == ["active", "archived", "active", "active"]


def test_weak_long_memories_are_demoted_not_archived(conn: Any) -> None:
    weak = add(conn, layer="long", importance=0.0, created_at=NOW - 100 * DAY)
    pinned = add(conn, layer="long", importance=0.0, created_at=NOW - 100 * DAY, pinned=1)
    assert lifecycle.demote_or_archive(conn, NOW, Salience()) == {"archived": 0, "demoted": 1}
    assert (get(conn, weak)["layer"], get(conn, weak)["status"]) == ("mid", "active")
    assert get(conn, pinned)["layer"] == "long"
    assert events(conn, weak) == ["DEMOTE"]


def test_summaries_are_left_to_the_cascades(conn: Any) -> None:
    summary = add(conn, kind="summary", importance=0.0, created_at=NOW - 100 * DAY)
    assert lifecycle.run_gc(conn, NOW + 200 * DAY)["archived"] == 0
    assert get(conn, summary)["status"] == "active"


# -- capacity ----------------------------------------------------------------------------------
def test_capacity_archives_the_weakest_beyond_the_limit(conn: Any) -> None:
    ids = [add(conn, f"fact {i}", importance=i / 10) for i in range(5)]
    pinned = add(conn, "pinned", importance=0.0, pinned=1)
    other_user = add(conn, "theirs", importance=0.0, user_id="bob")
    assert lifecycle.capacity_cleanup(conn, NOW, mid_capacity=4) == 2
    statuses = [get(conn, i)["status"] for i in [*ids, pinned, other_user]]
    assert statuses == ["archived", "archived", "active", "active", "active", "active", "active"]
    assert lifecycle.capacity_cleanup(conn, NOW, mid_capacity=4) == 0


# -- decay ranks, never deletes ---------------------------------------------------------------
def test_no_gc_pass_deletes_a_used_or_important_fact_however_long_idle(conn: Any) -> None:
    """The old decay soft-deleted anything whose confidence fell below 0.05 (a Tesla retrieved
    15 times, gone by day 168). Now a year idle leaves every such fact in place."""
    used = add(conn, "The user drives a Tesla.", hits=15, decay_rate=0.05, importance=0.5)
    important = add(conn, "The user is allergic to peanuts.", importance=0.9, decay_rate=0.01)
    long_layer = add(conn, "The user's sister is Mara.", importance=0.2, layer="long", hits=3)
    said_twice = add(conn, "The user likes jazz.", importance=0.2, mention_count=2)
    ordinary = add(conn, "The user had pasta.", importance=0.5)
    for day in range(0, 366, 7):
        lifecycle.run_gc(conn, NOW + day * DAY)
    ids = (used, important, long_layer, said_twice, ordinary)
    assert all(get(conn, m)["status"] in ("active", "archived") for m in ids)
    assert all(get(conn, m)["confidence"] == 1.0 for m in ids)  # decay no longer writes it
    assert all(has_vector(conn, m) for m in ids)
    gone = conn.execute("SELECT COUNT(*) FROM history WHERE event IN ('SOFT_DELETE', 'PURGE')")
    assert gone.fetchone()[0] == 0


def test_gc_stores_retrievability_for_listing(conn: Any) -> None:
    m = add(conn, decay_rate=0.1, created_at=NOW - 10 * DAY)
    lifecycle.store_scores(conn, NOW, Salience())
    attributes = json.loads(get(conn, m)["attributes"])
    assert attributes["retrievability"] == pytest.approx(math.exp(-1.0), abs=1e-6)
    assert attributes["scored_at"] == NOW


# -- TTL ---------------------------------------------------------------------------------------
def test_ttl_only_takes_what_nobody_ever_used(conn: Any) -> None:
    """Seed 001 §7 narrowly: idle, unimportant, unpinned AND never retrieved, never said again,
    not in the long layer. Anything used stays, however long idle."""
    idle = NOW - 200 * DAY
    trivia = add(conn, "The user saw a red car.", importance=0.2, created_at=idle)
    retrieved = add(conn, "The user saw a blue car.", importance=0.2, created_at=idle, hits=1)
    repeated = add(conn, "The user saw a van.", importance=0.2, created_at=idle, mention_count=2)
    kept_long = add(conn, "The user saw a bus.", importance=0.2, created_at=idle, layer="long")
    assert forgetting.ttl_soft_delete(conn, NOW) == 1
    assert get(conn, trivia)["status"] == "soft_deleted"
    assert {get(conn, m)["status"] for m in (retrieved, repeated, kept_long)} == {"active"}


def test_ttl_after_sixty_idle_days_strictly(conn: Any) -> None:
    edge = add(conn, importance=0.1, last_accessed=NOW - 60 * DAY)
    idle = add(conn, importance=0.1, last_accessed=NOW - 60.01 * DAY)
    archived = add(conn, importance=0.1, last_accessed=NOW - 61 * DAY, status="archived")
    assert forgetting.ttl_soft_delete(conn, NOW) == 2
    assert get(conn, edge)["status"] == "active"
    for m in (idle, archived):
        row = get(conn, m)
        assert (row["status"], row["purge_at"]) == ("soft_deleted", NOW + 30 * DAY)
        assert events(conn, m) == ["TTL"]


def test_ttl_spares_important_pinned_and_confirmed(conn: Any) -> None:
    old = NOW - 365 * DAY
    at_t = add(conn, importance=0.5, last_accessed=old)
    pinned = add(conn, importance=0.1, last_accessed=old, pinned=1)
    confirmed = add(conn, importance=0.1, last_accessed=old)
    forgetting.confirm(conn, confirmed, NOW)
    assert forgetting.ttl_soft_delete(conn, NOW) == 0
    assert {get(conn, i)["status"] for i in (at_t, pinned, confirmed)} == {"active"}


# -- restore / confirm -------------------------------------------------------------------------
def test_restore(conn: Any) -> None:
    m = add(conn, importance=0.1, confidence=0.2, last_accessed=NOW - 90 * DAY)
    forgetting.ttl_soft_delete(conn, NOW)
    assert forgetting.restore(conn, m, NOW + DAY, actor="cli")
    row = get(conn, m)
    assert (row["status"], row["purge_at"], row["last_accessed"], row["confidence"]) == (
        "active",
        None,
        NOW + DAY,
        1.0,
    )
    assert events(conn, m) == ["TTL", "RESTORE"]
    assert not forgetting.restore(conn, m, NOW)  # already active
    assert not forgetting.restore(conn, 999, NOW)
    # Restored means seen: the next GC does not take it straight back.
    assert lifecycle.run_gc(conn, NOW + DAY)["soft_deleted"] == 0


def test_confirm_protects(conn: Any) -> None:
    m = add(conn, confidence=0.3, decay_rate=0.2, created_at=NOW - 100 * DAY)
    assert forgetting.confirm(conn, m, NOW)
    row = get(conn, m)
    assert (row["confidence"], row["decay_rate"]) == (1.0, 0.0)
    lifecycle.run_gc(conn, NOW + 1000 * DAY)
    assert (get(conn, m)["confidence"], get(conn, m)["status"]) == (1.0, "active")
    assert not forgetting.confirm(conn, 999, NOW)


# -- purge -------------------------------------------------------------------------------------
SECRET = "zqxlockercode"


def full_memory(conn: Any) -> tuple[int, int, int]:
    """A memory with every kind of derived row, a neighbour, and one that supersedes it."""
    conn.execute(
        "INSERT INTO turns (session_id, role, text, ts) VALUES ('s', 'user',"
        " 'remember the locker', ?)",
        (NOW,),
    )
    secret = add(
        conn,
        f"The user's locker code is {SECRET} at Qorvex Gym.",
        status="soft_deleted",
        purge_at=NOW,
    )
    other = add(conn, "The user goes to the gym on Mondays.")
    newer = add(conn, "The user's locker code changed.", supersedes=secret)
    conn.execute("INSERT INTO memory_sources (memory_id, turn_id) VALUES (?, 1)", (secret,))
    link_entities(
        conn,
        secret,
        [
            Mention("Qorvex Gym", "Qorvex Gym", "organization", (0, 1)),
            Mention("Monday", "Monday", "date", (0, 1)),
        ],
        "default",
        NOW,
    )
    link_entities(conn, other, [Mention("Monday", "Monday", "date", (0, 1))], "default", NOW)
    for a, b in ((secret, other), (other, secret)):
        conn.execute(
            "INSERT INTO relations (from_id, to_id, strength, created_at) VALUES (?, ?, 0.9, ?)",
            (a, b, NOW),
        )
    conn.execute(
        "INSERT INTO change_log (session_id, rev, memory_id, event, meta, ts)"
        " VALUES ('s', 1, ?, 'created', ?, ?)",
        (secret, json.dumps({"t": SECRET}), NOW),
    )
    add_history(
        conn,
        user_id="default",
        memory_id=secret,
        event="ADD",
        actor="system",
        now=NOW,
        new_value=f"code {SECRET}",
    )
    return secret, other, newer


def all_text(conn: Any) -> str:
    """Every value of every table (FTS shadow tables included), as one string."""
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    ]
    parts = []
    for table in tables:
        for row in conn.execute(f'SELECT * FROM "{table}"'):
            for value in row:
                parts.append(value.decode("latin-1") if isinstance(value, bytes) else str(value))
    return "\n".join(parts)


def test_purge_leaves_no_trace(conn: Any) -> None:
    secret, other, newer = full_memory(conn)
    assert SECRET in all_text(conn)
    assert purge_memory(conn, secret, "user", now=NOW + 1)
    assert get(conn, secret) is None
    for sql in (
        "SELECT COUNT(*) FROM memory_entities WHERE memory_id = ?",
        "SELECT COUNT(*) FROM relations WHERE from_id = ?1 OR to_id = ?1",
        "SELECT COUNT(*) FROM memory_sources WHERE memory_id = ?",
        "SELECT COUNT(*) FROM change_log WHERE memory_id = ?",
        "SELECT COUNT(*) FROM memory_vectors WHERE memory_id = ?",
    ):
        assert conn.execute(sql, (secret,)).fetchone()[0] == 0, sql
    knn = conn.execute(
        "SELECT memory_id FROM memory_vectors WHERE embedding MATCH ? AND k = 10",
        (pack([1.0] + [0.0] * (DIM - 1)),),
    ).fetchall()
    assert secret not in [r[0] for r in knn]
    for word in (SECRET, "qorvex"):
        assert (
            conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (f'"{word}"',)
            ).fetchall()
            == []
        )
    conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, memories_fts, 'row')")
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM temp.vocab WHERE term IN (?, 'qorvex')", (SECRET,)
        ).fetchone()[0]
        == 0
    )
    assert SECRET not in all_text(conn) and "Qorvex" not in all_text(conn)
    # The shared entity stays (another memory mentions it); the orphaned one went with it.
    assert [r[0] for r in conn.execute("SELECT canonical_name FROM entities")] == ["Monday"]
    assert get(conn, newer)["supersedes"] is None and get(conn, other) is not None
    (purge,) = conn.execute("SELECT * FROM history WHERE memory_id = ?", (secret,)).fetchall()
    assert (purge["event"], purge["old_value"], purge["new_value"], purge["actor"]) == (
        "PURGE",
        None,
        None,
        "user",
    )
    assert conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 1  # the log stays
    assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 0  # restored
    assert not purge_memory(conn, secret, now=NOW)


def test_purge_keeps_an_entity_the_conversation_names(conn: Any) -> None:
    """The turn that said "Qorvex Gym" stays, and so do its entity and its link; the memory's
    own link goes."""
    secret, _, _ = full_memory(conn)
    link_turn_entities(
        conn, 1, [Mention("Qorvex Gym", "Qorvex Gym", "organization", (0, 1))], "default", NOW
    )
    assert purge_memory(conn, secret, "user", now=NOW + 1)
    assert {r[0] for r in conn.execute("SELECT canonical_name FROM entities")} == {
        "Monday",
        "Qorvex Gym",
    }
    linked = conn.execute(
        "SELECT te.turn_id, e.canonical_name FROM turn_entities te"
        " JOIN entities e ON e.id = te.entity_id"
    ).fetchall()
    assert [tuple(r) for r in linked] == [(1, "Qorvex Gym")]
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM memory_entities WHERE memory_id = ?", (secret,)
        ).fetchone()[0]
        == 0
    )


def test_purge_due_at_purge_at_inclusive(conn: Any) -> None:
    due = add(conn, status="soft_deleted", purge_at=NOW)
    later = add(conn, status="soft_deleted", purge_at=NOW + 1)
    archived = add(conn, status="archived", purge_at=NOW - 1)
    assert purge_due(conn, NOW) == 1
    assert get(conn, due) is None
    assert get(conn, later) is not None and get(conn, archived) is not None


def test_purge_refuses_without_sqlite_vec(conn: Any, tmp_path: Path) -> None:
    m = add(conn)
    # A connection without sqlite-vec cannot delete from vec0: the purge must fail loudly
    # rather than leave the vector behind.
    bare = sqlite3.connect(str(tmp_path / "life.db"), isolation_level=None)
    bare.row_factory = sqlite3.Row
    with pytest.raises(sqlite3.OperationalError):
        purge_memory(bare, m, now=NOW)
    bare.close()
    assert get(conn, m) is not None


# -- the whole pass ----------------------------------------------------------------------------
def test_run_gc_counts(conn: Any) -> None:
    add(conn, "hot", hits=3, last_accessed=NOW - DAY, importance=0.9)
    add(conn, "weak", importance=0.0, created_at=NOW - 20 * DAY)
    add(
        conn, "fading", confidence=0.06, decay_rate=0.1, last_accessed=NOW - 5 * DAY, importance=0.9
    )
    add(conn, "forgotten", importance=0.1, created_at=NOW - 90 * DAY, status="archived")
    add(conn, "due", status="soft_deleted", purge_at=NOW - 1)
    ended = add(conn, "ended", pinned=1, importance=0.9, expires_at=NOW - 1)
    add(conn, "later", expires_at=NOW + DAY)
    result = lifecycle.run_gc(conn, NOW)
    assert result == {
        "rescored": 5,  # "fading" is only ranked lower now; the old decay soft-deleted it
        "promoted": 1,
        "demoted": 0,
        "archived": 1,
        "soft_deleted": 2,  # "forgotten" (TTL) and "ended" (past its expires_at, pinned or not)
        "expired": 1,
        "purged": 1,
    }
    assert get(conn, ended)["status"] == "soft_deleted" and events(conn, ended) == ["EXPIRE"]

    hot = conn.execute("SELECT attributes FROM memories WHERE content = 'hot'").fetchone()[0]
    assert json.loads(hot)["score"] == pytest.approx(math.log(4) + math.exp(-0.05) + 1.8)
    valid = {
        "ADD",
        "UPDATE",
        "MERGE",
        "DELETE",
        "SOFT_DELETE",
        "RESTORE",
        "PURGE",
        "LINK",
        "TTL",
        "ARCHIVE",
        "PROMOTE",
        "DEMOTE",
        "DECAY",
        "HIT",
        "SUPERSEDE",
        "PROPOSE",
        "ACCEPT",
        "REJECT",
        "EXPIRE",
    }
    assert {r[0] for r in conn.execute("SELECT event FROM history")} <= valid


def test_expired_memories_are_soft_deleted_with_history_and_restored_for_good(conn: Any) -> None:
    """Seed 002: past `expires_at` → soft_deleted (an EXPIRE row naming the time, purge
    scheduled, vector dropped); a restore brings it back without the past expiry."""
    ended = add(conn, "The user's parking spot is 14B today.", expires_at=NOW - 60)
    archived = add(conn, "old", status="archived", expires_at=NOW)
    live = add(conn, "The user is at a conference.", expires_at=NOW + 60)
    assert forgetting.expire(conn, NOW, purge_after_days=30) == 2
    row = get(conn, ended)
    assert row["status"] == "soft_deleted" and row["purge_at"] == NOW + 30 * DAY
    assert not has_vector(conn, ended) and get(conn, archived)["status"] == "soft_deleted"
    history = conn.execute("SELECT * FROM history WHERE memory_id = ?", (ended,)).fetchone()
    assert (history["event"], history["old_value"], history["new_value"]) == (
        "EXPIRE", "active", "soft_deleted",
    )  # fmt: skip
    assert json.loads(history["meta"]) == {
        "reason": "expired", "expires_at": NOW - 60, "purge_at": NOW + 30 * DAY,
    }  # fmt: skip
    assert get(conn, live)["status"] == "active" and get(conn, live)["expires_at"] == NOW + 60
    assert forgetting.expire(conn, NOW) == 0  # nothing twice

    assert forgetting.restore(conn, ended, NOW + 10)
    row = get(conn, ended)
    assert row["status"] == "active" and row["expires_at"] is None


def test_gc_runs_inside_one_immediate_transaction(conn: Any) -> None:
    # The daemon runs GC through Database.write_sync: BEGIN IMMEDIATE … COMMIT. Purging (with
    # its secure_delete toggle and FTS optimize) must work there too.
    full_memory(conn)
    conn.execute("BEGIN IMMEDIATE")
    result = lifecycle.run_gc(conn, NOW + DAY)
    conn.execute("COMMIT")
    assert result["purged"] == 1
    assert SECRET not in all_text(conn)
