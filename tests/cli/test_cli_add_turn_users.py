"""Issue 38, finding 16, through the real console script: `lobug memory add-turn --user bob`
never joins another user's session of the same name, so no session (and no extraction batch
of one) mixes users; bob keeps a conversation of his own under that name."""

from __future__ import annotations

from pathlib import Path

from cli_kit import config_file, lobug_json
from dbutil import query
from fake_ollama import FakeOllamaState


async def test_add_turn_for_another_user_does_not_join_a_users_session(
    tmp_path: Path, ollama: tuple[FakeOllamaState, str]
) -> None:
    config = config_file(tmp_path, ollama[1])
    db = tmp_path / "data" / "lobug.db"
    mine = await lobug_json(config, "memory", "add-turn", "chat-1", "user", "my PIN is 7311",
                            "--no-extract")  # fmt: skip
    assert mine["session_id"] == "chat-1"
    bobs = [
        await lobug_json(
            config, "memory", "add-turn", "chat-1", "user", words, "--user", "bob", "--no-extract"
        )  # fmt: skip
        for words in ("hello", "it's Bob again")
    ]
    assert bobs[0]["session_id"] != "chat-1"
    assert bobs[1]["session_id"] == bobs[0]["session_id"]  # his own conversation of that name
    sessions = query(db, "SELECT DISTINCT session_id, user_id FROM turns ORDER BY user_id")
    assert [tuple(r) for r in sessions] == [(bobs[0]["session_id"], "bob"), ("chat-1", "default")]
    owners = query(db, "SELECT id, user_id FROM sessions ORDER BY user_id")
    assert [tuple(r) for r in owners] == [(bobs[0]["session_id"], "bob"), ("chat-1", "default")]
    # The first user's session goes on as before.
    again = await lobug_json(config, "memory", "add-turn", "chat-1", "user", "and again",
                             "--no-extract")  # fmt: skip
    assert again["session_id"] == "chat-1"
