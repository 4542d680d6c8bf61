"""Issue 43's growth test: a store shared by four users, 100,000 turns over a year and more,
every question word in thousands of turns. A user's own turn is found for a question about a
named speaker and for a plain question whose best matches across the whole store are other
users' turns (the context list ranks within the user, `context.QuestionWords`), and for a
question about a period (the `when` list) whose words no turn holds.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fake_ollama import FakeOllamaState
from memory_kit import MemoryEnv, memory_config, memory_env
from script_kit import load_script

from lobug.conversation import insert_turn
from lobug.memory.query import QueryRequest, Reach
from lobug.parts import open_database

pytestmark = pytest.mark.timeout(300)  # a hang guard on a loaded machine, not a speed bound

NOW = datetime(2026, 3, 15, 12, tzinfo=UTC).timestamp()
DAY = 86_400.0
USERS = ("default", "ana", "ben", "cleo")  # "default": the /v1 door's user, the one asking
PER_USER = 25_000
SESSION = 20  # turns, a minute apart
SPAN = 500 * DAY  # the log's first session to its last
CAST = ("Noor", "Tomas", "Ines", "Omar")  # who speaks in the imported conversations
# scripts/bench_api_query.py's small vocabulary: every word is in thousands of turns.
BENCH = load_script("bench_api_query")
VERBS, ADJS, NOUNS, PLACES = BENCH.VERBS, BENCH.ADJS, BENCH.NOUNS, BENCH.PLACES

# What the household talks about all the time, each pair in thousands of turns (10% of a
# user's). "default" says each but once where its question looks: the violin never but once,
# the kayak never in March 2025 but once, the lighthouse never by Noor but once.
PAIRS = (("electric", "violin"), ("wooden", "kayak"), ("frozen", "lighthouse"))
# Planted for "default", each longer than the generated turns (bm25 prefers short rows: the
# thousands of others rank first).
VIOLIN = "The electric violin is in the red case under the stairs next to the door"
KAYAK = "Tomas and I painted the wooden kayak green in the shed behind the house"
LIGHTHOUSE = "Noor photographed the frozen lighthouse from the ferry on a grey morning"
MARCH = (datetime(2025, 3, 1, tzinfo=UTC).timestamp(), datetime(2025, 4, 1, tzinfo=UTC).timestamp())


def said(rng: random.Random, user: str, speaker: str, ts: float) -> str:
    """A short turn, "I <verb> the <adj> <noun> in <place> today", of a small vocabulary:
    every word is in thousands of turns (scripts/bench_api_query.py)."""
    pair = rng.choice(PAIRS) if rng.random() < 0.3 else None
    if user == "default" and (
        pair == PAIRS[0]
        or (pair == PAIRS[1] and MARCH[0] - DAY <= ts < MARCH[1] + DAY)  # any zone's March
        or (pair == PAIRS[2] and speaker == "Noor")
    ):
        pair = None
    adj, noun = pair or (rng.choice(ADJS), rng.choice(NOUNS))
    if pair is None and (adj, noun) in PAIRS:
        adj = "old"
    return f"I {rng.choice(VERBS)} the {adj} {noun} in {rng.choice(PLACES)} today"


def fill(conn: Any, user: str, rng: random.Random) -> None:
    """The user's 25k turns in sessions of 20 over SPAN, two of CAST speaking in each."""
    sessions = PER_USER // SESSION
    for s in range(sessions):
        start = NOW - SPAN - DAY + s * SPAN / sessions
        pair = rng.sample(CAST, 2)
        for t in range(SESSION):
            ts = start + 60 * t
            insert_turn(
                conn,
                session_id=f"{user}-{s}",
                role=("user", "assistant")[t % 2],
                text=said(rng, user, pair[t % 2], ts),
                ts=ts,
                user_id=user,
                ref=f"{user}-{s}/{t}",
                speaker=pair[t % 2],
            )


def plant(conn: Any) -> None:
    for ref, speaker, text, ts in (
        ("violin/1", "Ines", VIOLIN, NOW - 100 * DAY),
        ("kayak/1", "Tomas", KAYAK, datetime(2025, 3, 14, 15, tzinfo=UTC).timestamp()),
        ("lighthouse/1", "Noor", LIGHTHOUSE, NOW - 200 * DAY),
        # "march" said of something else, at other times: the month is not the subject.
        ("march/1", "Omar", "We march with the school band in the parade", NOW - 50 * DAY),
        ("march/2", "Ines", "The band will march past the bakery at noon", NOW - 300 * DAY),
    ):
        session = ref.split("/")[0]
        insert_turn(
            conn, session_id=session, role="user", text=text, ts=ts, user_id="default",
            ref=ref, speaker=speaker,
        )  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 100k turns, built once: each test searches a copy. Bulk inserts (the FTS5 triggers
    index them), no hooks: no memory jobs, no vectors (turns are ranked by their words)."""
    data = tmp_path_factory.mktemp("growth") / "data"
    config = memory_config(data.parent, "http://127.0.0.1:9")
    db = open_database(config)
    try:
        for n, user in enumerate(USERS):
            db.write_sync(fill, user, random.Random(43 + n))
        db.write_sync(plant)
    finally:
        db.close_sync()
    return config.storage.db_path


@pytest.fixture
async def mem(
    store: Path, tmp_path: Path, ollama: tuple[FakeOllamaState, str], clock: Any
) -> AsyncIterator[MemoryEnv]:
    target = memory_config(tmp_path, ollama[1]).storage.db_path
    target.parent.mkdir(parents=True)
    shutil.copyfile(store, target)
    clock.now = NOW  # the suite's controllable clock (conftest), at the store's "now"
    async with memory_env(tmp_path, ollama[1], clock) as env:
        yield env


async def found(
    mem: MemoryEnv, question: str, lists: dict[str, set[str]] | None = None
) -> list[tuple[str, str]]:
    """(user, ref) of the first 10 turns /v1/query returns to "default", best first; `lists`
    gets the ranked lists each of them was in, by ref (its `explain`)."""
    req = QueryRequest(query=question, kinds=["episode"], top_k=10, reach=Reach("default"))
    results = await mem.service.query(req)
    rows = {i: (u, r) for i, u, r in mem.rows("SELECT id, user_id, ref FROM turns")}
    got = [rows[r.id] for r in results]
    assert {user for user, _ in got} <= {"default"}  # never another user's turn
    if lists is not None:
        lists.update({rows[r.id][1]: set(r.explain["ranks"]) for r in results})
    return got


async def test_a_period_question_finds_the_turn_said_then(mem: MemoryEnv) -> None:
    """No turn says "2025", two say "march" of a parade: the words naming the period are
    left out of the search words (`when.period_words`) and words no row holds out of the
    match (`fts.found_words`); as the rarest words, either was asked for in every group and
    the `when` list found nothing."""
    assert ("default", "kayak/1") in await found(mem, "Where was the wooden kayak in March 2025?")


async def test_a_speaker_question_finds_the_turn_they_said(mem: MemoryEnv) -> None:
    got = await found(mem, "What did Noor photograph at the frozen lighthouse?")
    assert ("default", "lighthouse/1") in got


async def test_other_users_turns_do_not_crowd_out_the_users_own(mem: MemoryEnv) -> None:
    """The best matches of the whole store are other users' (thousands of shorter turns hold
    both words): ranked over every user, the context list (200 deep) and the bm25 list (4096
    at most) held none of this user's; ranked within the user, both find it."""
    best = mem.rows(
        "SELECT d.user_id FROM turns_fts CROSS JOIN turns d ON d.id = turns_fts.rowid"
        ' WHERE turns_fts MATCH \'"electric" AND "violin"\' ORDER BY bm25(turns_fts)'
        " LIMIT 4096"
    )
    assert len(best) == 4096 and "default" not in {r[0] for r in best}
    lists: dict[str, set[str]] = {}
    assert ("default", "violin/1") in await found(mem, "Where is the electric violin?", lists)
    assert {"bm25", "context"} <= lists["violin/1"], lists
