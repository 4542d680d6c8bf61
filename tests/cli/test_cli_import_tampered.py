"""Issue 38, finding 12: a tampered export (`importance: "high"`, `tags: "not json"`) given to
`lobug memory import` was stored as it was, and /v1/query, /v1/gc, /v1/stats and /ui answered
500 for everyone; rows a CHECK refused were reported as "skipped". Now each such row is refused
with its line and column, the good rows are imported, and every route still answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli_kit import config_file, lobug
from dbutil import query
from fake_ollama import FakeOllamaState

NOW = 1_750_000_000.0


def memory(n: int, content: str, **changes: Any) -> str:
    data = {
        "id": n,
        "kind": "fact",
        "content": content,
        "category": "preferences",
        "store": "private",
        "importance": 0.6,
        "tags": '["food"]',
        "attributes": "{}",
        "created_at": NOW + n,
        "updated_at": NOW + n,
        **changes,
    }
    return json.dumps({"type": "memory", "data": data})


def tampered(path: Path) -> Path:
    lines = [
        json.dumps({"type": "meta", "data": {"format": "lobug-export", "version": 1}}),  # 1
        memory(1, "The user likes olives."),  # 2
        memory(2, "The user likes figs.", importance="high"),  # 3
        memory(3, "The user likes dates.", tags="not json"),  # 4
        memory(4, "The user likes plums.", kind="gossip"),  # 5: refused by a CHECK
        memory(5, "The user likes pears.", attributes="[1, 2]"),  # 6: JSON, not an object
        memory(6, "The user likes limes.", confidence=None),  # 7: NOT NULL
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def test_a_tampered_export_is_refused_row_by_row_and_every_route_still_answers(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str], make_client: Callable[..., Any]
) -> None:
    _, url = ollama
    config = config_file(tmp_path, url)
    source = tampered(tmp_path / "export.jsonl")
    code, out, err = await lobug(config, "memory", "import", str(source), "--json")
    assert code == 1, (out, err)
    assert "Traceback" not in err
    report = json.loads(out)
    assert report["added"] == {"memory": 1}
    assert report["skipped"] == {}  # a refused row is not "already present"
    errors = report["errors"]
    assert len(errors) == 5, errors
    assert errors[0].startswith("line 3: memory 'importance' must be a number, got 'high'")
    assert errors[1].startswith("line 4: memory 'tags' must be a JSON array")
    assert errors[2].startswith("line 5: memory refused by the schema: CHECK constraint")
    assert errors[3].startswith("line 6: memory 'attributes' must be a JSON object")
    assert errors[4].startswith("line 7: memory 'confidence' must not be null")
    db = tmp_path / "data" / "lobug.db"
    assert [r[0] for r in query(db, "SELECT content FROM memories")] == ["The user likes olives."]
    # The text report lists them too.
    code, out, err = await lobug(config, "memory", "import", str(source))
    assert code == 1 and "not imported (5 row(s)):" in out and "line 3: memory" in out

    # The daemon on that data dir answers every read that failed before.
    client = await make_client(**{"storage.data_dir": str(tmp_path / "data")})
    for method, path, body in (
        ("POST", "/v1/query", {"query": "what does the user like?"}),
        ("POST", "/v1/gc", {}),
        ("GET", "/v1/stats", None),
        ("GET", "/ui/", None),
        ("GET", "/ui/facts", None),
        ("GET", "/v1/memories", None),
    ):
        resp = await client.request(method, path, json=body)
        assert resp.status == 200, (path, await resp.text())
