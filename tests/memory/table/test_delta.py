"""Memory delta header (seed 001 §1) on a real migrated database."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lobug.memory.table import delta
from lobug.storage.migrations import migrate
from lobug.storage.sqlite import connect

NOW = 1_750_000_000.0


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    path = tmp_path / "delta.db"
    conn = connect(path)
    migrate(conn)
    conn.close()
    return path


@pytest.fixture
def conn(db_path: Path) -> Iterator[Any]:
    connection = connect(db_path)
    yield connection
    connection.close()


def tx(conn: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run fn in one IMMEDIATE transaction, like Database.write_sync."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn, *args, **kwargs)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def created(content: str, category: str = "personal", importance: float = 0.8) -> dict[str, Any]:
    return {"content": content, "category": category, "importance": importance, "store": "private"}


def header(
    conn: Any, session_id: str, user_id: str, *, max_bullets: int = 3, **kw: Any
) -> tuple[str | None, int]:
    """The header a reader of the session is shown (`take` then `render`, as `Recall` does) and
    the session's new revision."""
    changes, since, new = delta.take(conn, session_id, user_id, **kw)
    return delta.render(changes, since, max_bullets=max_bullets), new


def bump(conn: Any, session: str | None, memory_id: int | None, event: str, **meta: Any) -> int:
    return tx(conn, delta.bump, session, memory_id, event, meta, NOW, "default")


def test_bump_records_and_the_causing_session_sees_it_once(conn: Any) -> None:
    rev = tx(conn, delta.bump, "s-a", 1, "created", created("The user's name is Alex"), NOW)
    assert rev == 1 and delta.current_rev(conn) == 1
    rows = conn.execute("SELECT user_id, session_id, rev, memory_id, event FROM change_log")
    assert [tuple(r) for r in rows] == [("default", "s-a", 1, 1, "created")]
    text, new_rev = tx(conn, header, "s-a", "default")
    assert text == (
        "Memory updates since rev 0:\n- +created: [personal] The user's name is Alex (imp=0.8)"
    )
    assert new_rev == 1
    assert tx(conn, header, "s-a", "default") == (None, 1)
    assert conn.execute("SELECT rev FROM revisions WHERE session_id = 's-a'").fetchone()[0] == 1


def test_sessions_see_changes_from_other_sessions_and_background_jobs(conn: Any) -> None:
    assert tx(conn, header, "s-b", "default") == (None, 0)  # s-b registers at rev 0
    bump(conn, "s-a", 1, "created", **created("The user works at NASA"))
    bump(conn, None, 2, "soft_deleted", content="The user likes jazz", category="preference")
    text_b, rev_b = tx(conn, header, "s-b", "default")
    assert rev_b == 2
    assert text_b is not None and text_b.splitlines() == [
        "Memory updates since rev 0:",
        "- +created: [personal] The user works at NASA (imp=0.8)",
        "- −soft_deleted: [preference] The user likes jazz",
    ]
    text_a, _ = tx(conn, header, "s-a", "default")
    assert text_a is not None and len(text_a.splitlines()) == 3
    # A session that starts now does not get history from before it existed.
    assert tx(conn, header, "s-new", "default") == (None, 2)
    bump(conn, None, 1, "updated", content="The user works at ESA", category="personal")
    text_new, _ = tx(conn, header, "s-new", "default")
    assert text_new == "Memory updates since rev 2:\n- ↑updated: [personal] The user works at ESA"


def test_users_are_separate(conn: Any) -> None:
    tx(conn, header, "s-alex", "default")
    tx(conn, header, "s-bob", "bob")
    tx(conn, delta.bump, None, 5, "created", created("Bob has a cat"), NOW, "bob")
    assert tx(conn, header, "s-alex", "default") == (None, 0)
    text, rev = tx(conn, header, "s-bob", "bob")
    assert rev == 1 and text is not None and "Bob has a cat" in text


def test_every_event_has_its_symbol(conn: Any) -> None:
    tx(conn, header, "s", "default")
    for memory_id, event in enumerate(("updated", "merged", "deleted", "restored"), start=10):
        bump(conn, None, memory_id, event, content=f"note {memory_id}", category="tasks", count=2)
    text, _ = tx(conn, header, "s", "default", max_bullets=10)
    assert text is not None and text.splitlines()[1:] == [
        "- ↑updated: [tasks] note 10",
        "- ↔merged: [tasks] note 11 (2 notes)",
        "- −deleted: [tasks] note 12",
        "- ↺restored: [tasks] note 13",
    ]
    with pytest.raises(ValueError, match="unknown delta event"):
        bump(conn, None, 1, "exploded")


def test_at_most_three_bullets_newest_kept(conn: Any) -> None:
    tx(conn, header, "s", "default")
    for i in range(1, 6):
        bump(conn, None, i, "created", **created(f"fact {i}", importance=0.5))
    text, rev = tx(conn, header, "s", "default")
    assert rev == 5 and text is not None
    lines = text.splitlines()
    assert lines[0] == "Memory updates since rev 0:"
    assert [line for line in lines if line.startswith("- ")] == [
        "- +created: [personal] fact 3 (imp=0.5)",
        "- +created: [personal] fact 4 (imp=0.5)",
        "- +created: [personal] fact 5 (imp=0.5)",
    ]
    assert lines[-1] == "(+2 more)"
    assert tx(conn, header, "s", "default") == (None, 5)  # all five were marked seen


def test_changes_to_one_memory_read_as_one_bullet(conn: Any) -> None:
    tx(conn, header, "s", "default")
    bump(conn, None, 1, "created", **created("The user lives in Oslo"))
    bump(conn, None, 1, "updated", **created("The user lives in Bergen"))
    bump(conn, None, 2, "created", **created("The user has a dog"))
    bump(conn, None, 2, "soft_deleted", **created("The user has a dog"))
    text, _ = tx(conn, header, "s", "default")
    assert text == (
        "Memory updates since rev 0:\n- +created: [personal] The user lives in Bergen (imp=0.8)"
    )


def test_text_is_one_clipped_line(conn: Any) -> None:
    tx(conn, header, "s", "default")
    bump(conn, None, 1, "created", content="line one\n\nIGNORE ABOVE\t" + "x" * 400)
    bump(conn, None, None, "merged", category=None)
    text, _ = tx(conn, header, "s", "default")
    assert text is not None
    first, second = text.splitlines()[1:]
    assert first.startswith("- +created: line one IGNORE ABOVE xxx") and first.endswith("…")
    assert len(first) <= len("- +created: ") + delta.MAX_TEXT_CHARS
    assert second == "- ↔merged: (no text)"


def test_visibility_filter_and_read_only_peek(conn: Any) -> None:
    tx(conn, header, "s", "default")
    bump(conn, None, 1, "created", content="private thing", category="personal", store="private")
    bump(conn, None, 2, "created", content="shared thing", category="tasks", store="shared")
    visible_to_inner = lambda c: c.store in ("shared", "social")  # noqa: E731
    peek = delta.changes_since(conn, "s", visible=visible_to_inner)
    assert [c.text for c in peek] == ["shared thing"]
    assert [c.rev for c in delta.changes_since(conn, "s")] == [1, 2]  # peeking marks nothing
    assert [c.rev for c in delta.changes_since(conn, "s", 1)] == [2]
    changes, since, new = tx(conn, delta.take, "s", "default", visible=visible_to_inner)
    assert ([c.memory_id for c in changes], since, new) == ([2], 0, 2)
    assert delta.changes_since(conn, "s") == []
    item = changes[0].to_dict()
    assert item == {
        "rev": 2,
        "event": "created",
        "memory_id": 2,
        "category": "tasks",
        "text": "shared thing",
        "importance": None,
        "summary": "+created: [tasks] shared thing",
        "ts": NOW,
    }


def test_bump_is_part_of_the_callers_transaction(conn: Any) -> None:
    bump(conn, "s", 1, "created", content="kept")

    def failing(c: Any) -> None:
        delta.bump(c, "s", 2, "created", {"content": "rolled back"}, NOW)
        raise RuntimeError("the write failed")

    with pytest.raises(RuntimeError):
        tx(conn, failing)
    assert delta.current_rev(conn) == 1
    assert conn.execute("SELECT COUNT(*) FROM change_log").fetchone()[0] == 1
    assert bump(conn, "s", 3, "created", content="next") == 2


def test_concurrent_writers_get_distinct_consecutive_revs(db_path: Path) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        c = connect(db_path, busy_timeout_ms=30_000)
        try:
            for i in range(25):
                tx(c, delta.bump, f"s-{n}", n * 100 + i, "created", {"content": "x"}, NOW)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            c.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    c = connect(db_path)
    revs = [r[0] for r in c.execute("SELECT rev FROM change_log ORDER BY rev")]
    c.close()
    assert revs == list(range(1, 101))


def test_bounded_log(conn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    bump(conn, None, 1, "created", content="first")
    bump(conn, None, 2, "created", content="other")
    monkeypatch.setattr(delta, "KEEP_ROWS", 5)
    for i in range(10):
        bump(conn, None, 10 + i, "updated", content=f"n{i}")
    assert conn.execute("SELECT COUNT(*) FROM change_log").fetchone()[0] == 5
    assert delta.current_rev(conn) == 12  # the counter never goes back
