"""A reply's key (`memory.vectors.replies`): the question it answers with the reply, embedded by
the turn's embed job and by `lobug memory reembed`, and the nearer of its two vectors in search."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from dbutil import query
from memory_kit import MemoryEnv, drain

from lobug import keys
from lobug.llm.embedders import HashingEmbedder
from lobug.memory.query import QueryRequest
from lobug.memory.search import who
from lobug.memory.vectors import replies
from lobug.memory.vectors.reembed import reembed

QUESTION = "What genre is your screenplay?"
REPLY = "A mix of drama and romance!"


def said(ref: str, speaker: str, text: str, ts: float, role: str) -> dict[str, Any]:
    return {"session_id": ref.split("/")[0], "role": role, "text": text, "ts": ts, "ref": ref,
            "speaker": speaker}  # fmt: skip


async def conversation(mem: MemoryEnv) -> dict[str, int]:
    start = mem.clock() - 3600
    return await mem.imported(
        [
            said("s1/t1", "Nate", f"Congrats, Joanna! {QUESTION}", start, "assistant"),
            said("s1/t2", "Joanna", REPLY, start + 10, "user"),
            said("s1/t3", "Joanna", "I walked the dog in the park.", start + 20, "user"),
            said("s2/t1", "Joanna", "Then I went home.", start + 900, "user"),
        ],
    )


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_the_key_is_the_last_question_before_and_the_reply() -> None:
    assert replies.key_text(f"Congrats! {QUESTION}", REPLY) == f"{QUESTION}\n{REPLY}"
    assert replies.key_text("Is it done? Which genre is it? Great.", REPLY) == (
        f"Which genre is it?\n{REPLY}"
    )
    assert replies.key_text("I walked the dog.", REPLY) is None
    assert replies.key_text("???", REPLY) is None


async def test_the_embed_job_keys_only_a_reply_and_search_takes_the_nearer_vector(
    mem: MemoryEnv,
) -> None:
    """Only t2 answers a question of its session (t3 follows a statement, s2/t1 opens a
    session). For "What genre is Joanna's screenplay?" the reply is as near as its key, at
    KEY_WEIGHT, which is nearer than the reply's own words: a threshold between the two keeps it."""
    refs = await conversation(mem)
    keyed = [tuple(r) for r in mem.rows("SELECT turn_id, length(embedding) FROM turn_reply_keys")]
    assert keyed == [(refs["s1/t2"], mem.config.embedding.dim * 4)]

    ask = "What genre is Joanna's screenplay?"
    embed = HashingEmbedder(mem.config.embedding.dim).embed_one
    asked = embed(who.without_speakers(ask, ["Nate", "Joanna"]))  # as the search embeds it
    own = cosine(asked, embed(REPLY))
    key = replies.KEY_WEIGHT * cosine(asked, embed(f"{QUESTION}\n{REPLY}"))
    assert key > own + 0.1

    found = await mem.service.query(QueryRequest(query=ask, kinds=["episode"], top_k=10))
    reply = next(r for r in found if r.id == refs["s1/t2"])
    assert reply.explain["similarity"] == pytest.approx(key, abs=1e-5)
    floor = (own + key) / 2
    kept = await mem.service.query(
        QueryRequest(query=ask, kinds=["episode"], top_k=10, threshold=floor)
    )
    assert refs["s1/t2"] in [r.id for r in kept]


async def test_reembed_rebuilds_the_keys_with_the_new_embedder(mem: MemoryEnv) -> None:
    refs = await conversation(mem)
    result = await reembed(mem.db, HashingEmbedder(32))
    assert result.turns == 4
    assert [
        tuple(r) for r in mem.rows("SELECT turn_id, length(embedding) FROM turn_reply_keys")
    ] == [(refs["s1/t2"], 32 * 4)]


def test_a_long_turn_without_a_sentence_end_is_read_in_linear_time() -> None:
    """Issue 38: the pattern that found the questions took quadratic time in one call holding
    the GIL (64 KB: 17 s with /health frozen). A megabyte now takes a moment; the bound only
    guards the hang."""
    endless = "and then the dragon flew over the hills " * 25_000  # 1 MB, no . ! ? or line
    began = time.monotonic()
    assert replies.key_text(endless, REPLY) is None
    assert replies.key_text(endless + "?", REPLY) == f"{endless.strip()}?\n{REPLY}"
    assert time.monotonic() - began < 5


async def test_a_reply_without_a_sentence_end_keys_the_next_turn_without_a_freeze(
    client: Any, ollama: Any
) -> None:
    """Through the door: the model rambles 100 KB without a sentence end; the owner's next
    turn is embedded and keyed by it (no question: no key) in moments, /health answering."""
    state, _ = ollama
    state.reply = "once upon a time there was a very long story " * 2300
    resp = await client.post("/chat/text", json={"text": "Tell me the longest story you know."})
    assert resp.status == 200
    state.reply = None
    resp = await client.post("/chat/text", json={"text": "That was long."})
    assert resp.status == 200
    began = time.monotonic()
    await drain(client.app[keys.CONFIG].storage.db_path, client.app[keys.MEMORY].clock, 15)
    assert time.monotonic() - began < 15
    assert (await client.get("/health")).status == 200
    rows = query(client.app[keys.CONFIG].storage.db_path, "SELECT state FROM jobs")
    assert {r[0] for r in rows} <= {"done"}, rows
