"""GET /v1/export and `lobug memory import` of it: the stream matches the schema line by line,
and export → import into a fresh database → export gives the same lines (only the meta line's
`exported_at` differs); into a database already in use, ids are remapped and references kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api_kit import App, make_app
from cli_kit import config_file, lobug, lobug_json
from dbutil import query
from fake_ollama import FakeOllamaState
from memory_kit import Script, extract_by_keyword

from lobug import keys
from lobug.memory.summaries import base_memory
from lobug.memory.table import rows as store

ALEX = "The user's name is Alex and the user works at NASA with Maria."
TEA = "The user drinks green tea every morning."
TABLE = {"NASA": [ALEX], "tea": [TEA]}


async def build_memory(app: App, clock: Any) -> None:
    """A bit of everything: turns and extracted facts, sources, entities, edits, a purge."""
    for text, ref in (("My name is Alex and I work at NASA with Maria", "m1"),
                      ("I drink green tea every morning", "m2")):  # fmt: skip
        await app.local.post(
            "/v1/turns", {"session_id": "chat-1", "role": "user", "text": text, "ref": ref}, 201
        )
        await app.local.post(
            "/v1/turns", {"session_id": "chat-1", "role": "assistant", "text": "Noted."}, 201
        )
        clock.advance(30)
    kept = await app.remember("The user keeps bees on the roof.", tags=["hobby"], pinned=True)
    gone = await app.remember("The user's locker code is kept in a notebook.", store="shared")
    dropped = await app.remember("The user once owned a yellow kayak.", store="social")
    await app.local.patch(f"/v1/memories/{kept['id']}", {"importance": 0.9})
    await app.local.delete(f"/v1/memories/{dropped['id']}")
    await app.local.delete(f"/v1/memories/{gone['id']}?purge=true")
    await app.client.app[keys.DB].write(
        lambda c: base_memory.set_base(
            c, "default", "User Profile:\n- Alex", now=clock(), actor="test", meta={}
        )  # fmt: skip
    )


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def without_meta(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assert records[0]["type"] == "meta"
    return records[1:]


async def test_export_import_round_trip(
    make_client: Callable[..., Any],
    ollama: tuple[FakeOllamaState, str],
    clock: Any,
    tmp_path: Path,
) -> None:
    state, url = ollama
    state.script = Script(extract=extract_by_keyword(TABLE))
    app = await make_app(make_client)
    await build_memory(app, clock)
    records = await app.local.get("/v1/export")  # validated line by line against ExportRecord
    types = [r["type"] for r in records]
    assert types[0] == "meta" and records[0]["data"]["format"] == "lobug-export"
    for kind in ("session", "turn", "memory", "memory_source", "base_memory", "entity",
                 "memory_entity", "turn_entity", "history"):  # fmt: skip
        assert kind in types, kind
    assert types == sorted(types, key=["meta", "session", "turn", "memory", "memory_source",
                                       "base_memory", "entity", "memory_entity",
                                       "turn_entity", "relation", "history"].index)  # fmt: skip
    assert not any("user_id" in r["data"] for r in records[1:])
    exported = tmp_path / "export.jsonl"
    exported.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    fresh = config_file(tmp_path, url, "fresh")
    report = await lobug_json(fresh, "memory", "import", str(exported))
    assert report["errors"] == [] and report["remapped_ids"] == []
    assert report["added"]["memory"] == app.value("SELECT COUNT(*) FROM memories")
    again = tmp_path / "again.jsonl"
    code, out, err = await lobug(fresh, "memory", "export", "-o", str(again))
    assert code == 0, err
    assert without_meta(lines_of(again)) == without_meta(lines_of(exported))
    db = tmp_path / "fresh" / "lobug.db"
    # Vectors are not exported: the import made them (active facts and turns).
    active = app.value("SELECT COUNT(*) FROM memories WHERE status = 'active' AND kind = 'fact'")
    assert query(db, "SELECT COUNT(*) FROM memory_vectors")[0][0] == active
    assert query(db, "SELECT COUNT(*) FROM turn_vectors")[0][0] == 4
    found = await lobug_json(fresh, "memory", "query", "where does Alex work")
    assert found["results"][0]["sources"][0]["ref"] == "m1"

    # Importing the same file again adds nothing.
    report = await lobug_json(fresh, "memory", "import", str(exported))
    assert report["added"] == {} and report["errors"] == []


async def test_import_into_a_database_in_use_remaps_ids(
    make_client: Callable[..., Any],
    ollama: tuple[FakeOllamaState, str],
    clock: Any,
    tmp_path: Path,
) -> None:
    state, url = ollama
    state.script = Script(extract=extract_by_keyword(TABLE))
    app = await make_app(make_client)
    await build_memory(app, clock)
    exported = tmp_path / "export.jsonl"
    exported.write_text(
        "".join(json.dumps(r) + "\n" for r in await app.local.get("/v1/export")),
        encoding="utf-8",
    )
    busy = config_file(tmp_path, url, "busy")
    code, _, err = await lobug(busy, "memory", "remember", "The user paints watercolours.")
    assert code == 0, err
    code, _, err = await lobug(busy, "memory", "add-turn", "other", "user", "hello", "--no-extract")
    assert code == 0, err
    report = await lobug_json(busy, "memory", "import", str(exported))
    assert {"turns", "memories"} <= set(report["remapped_ids"])
    db = tmp_path / "busy" / "lobug.db"
    pairs = "SELECT m.content, t.text FROM memory_sources s JOIN memories m ON m.id = s.memory_id" \
        " JOIN turns t ON t.id = s.turn_id ORDER BY m.content, t.text"  # fmt: skip
    assert [tuple(r) for r in query(db, pairs)] == [tuple(r) for r in app.rows(pairs)]
    history = "SELECT m.content, h.event FROM history h JOIN memories m ON m.id = h.memory_id" \
        " WHERE m.content != 'The user paints watercolours.' ORDER BY h.id"  # fmt: skip
    assert [tuple(r) for r in query(db, history)] == [tuple(r) for r in app.rows(history)]
    assert query(db, "SELECT COUNT(*) FROM memories")[0][0] == 1 + app.value(
        "SELECT COUNT(*) FROM memories"
    )


async def test_export_needs_full_access_and_reports_bad_lines_on_import(
    make_client: Callable[..., Any], ollama: tuple[FakeOllamaState, str], tmp_path: Path
) -> None:
    _, url = ollama
    app = await make_app(make_client)
    await app.planner.call("GET", "/v1/export", 403)
    await app.as_["inner"].call("GET", "/v1/export", 403)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"type": "memory", "data": {"content": "no id"}}\n'
        '{"type": "spaceship", "data": {}}\n'
        '{"type": "turn", "data": {"id": 1, "session_id": "s", "role": "user", "text": "hi",'
        ' "ts": 1.0}}\n'
        '{"session_id": "s", "role": "user", "text": "an old-format line"}\n',
        encoding="utf-8",
    )
    config = config_file(tmp_path, url, "bad")
    code, out, err = await lobug(config, "memory", "import", str(bad))
    assert code == 1
    assert "line 1: a memory record needs an integer 'id'" in err
    assert "line 2: unknown record type 'spaceship'" in err
    db = tmp_path / "bad" / "lobug.db"
    assert [r[0] for r in query(db, "SELECT text FROM turns ORDER BY id")] == [
        "hi",
        "an old-format line",
    ]


async def test_a_client_leaving_mid_export_frees_the_reader(
    make_client: Callable[..., Any],
) -> None:
    app = await make_app(make_client, **{"storage.read_connections": 1})

    def many(conn: Any) -> None:
        for i in range(3000):
            store.insert_memory(
                conn, user_id="default", kind="fact", now=1.0, actor="test",
                content=f"The user wrote note {i}: " + "lorem ipsum dolor sit amet " * 8,
            )  # fmt: skip

    await app.client.app[keys.DB].write(many)
    resp = await app.client.get("/v1/export")
    assert resp.status == 200 and resp.content_type == "application/x-ndjson"
    first = await resp.content.readline()
    assert json.loads(first)["type"] == "meta"
    resp.close()  # gone while the reader still has ~1 MB to send
    # The only reader connection is free again: reads answer, and teardown does not hang.
    stats = await app.local.get("/v1/stats")
    assert stats["memories"]["total"] == 3000
