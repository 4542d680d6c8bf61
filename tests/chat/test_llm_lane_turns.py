"""Issue 22 through the real app: a prompt whose prefix holds from turn to turn, and memory work
that gives the model up to a turn (lobug.llm.lane), against the fake Ollama."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from api_kit import TOKEN_CONFIG, TOKENS
from dbutil import query
from fake_ollama import MEMORY_DEFAULTS
from memory_kit import Script, extract_by_keyword

from lobug import keys
from lobug.chat.service import STRANGER_MAX_TOKENS
from lobug.memory import instructions


def rows(client: Any, sql: str, *params: Any) -> list[Any]:
    return query(client.app[keys.CONFIG].storage.db_path, sql, *params)


async def say(client: Any, text: str) -> dict[str, Any]:
    resp = await client.post("/chat/text", json={"text": text, "device_id": "desk"})
    body: dict[str, Any] = await resp.json()
    assert resp.status == 200, body
    return body


async def wait_for(check: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_two_turns_prompts_share_their_prefix_up_to_the_turn_block(
    make_client: Any, ollama: Any
) -> None:
    state, _ = ollama
    client = await make_client()
    await client.post("/context/sensors", json={"device_id": "desk", "battery": 80})
    await say(client, "My name is Alex and I work at NASA.")
    await client.post("/context/sensors", json={"device_id": "desk", "battery": 79})
    await say(client, "Where do I work?")
    first, second = (c["body"]["messages"] for c in state.chat_calls()[-2:])
    # Everything before the first turn's last message is the start of the second prompt.
    assert second[: len(first) - 1] == first[:-1]
    # The first turn's context block (its sensor line) was sent right before its words; the
    # later prompt shows those words as said, then the reply, then the new block and words.
    assert first[-1]["content"].endswith("battery 80%]\n\nMy name is Alex and I work at NASA.")
    assert second[len(first) - 1 :][:2] == [
        {"role": "user", "content": "My name is Alex and I work at NASA."},
        {"role": "assistant", "content": "You said: My name is Alex and I work at NASA."},
    ]
    assert "battery 79%]" in second[-1]["content"]
    assert "battery" not in second[0]["content"]  # the system message holds no per-turn line


async def test_a_turn_cancels_a_memory_call_in_flight_and_the_job_runs_later(
    make_client: Any, ollama: Any
) -> None:
    state, _ = ollama
    # Quiet for a moment after a turn: the job's second run starts after the delay is lifted.
    client = await make_client(**{"memory.extraction_mode": "llm", "memory.quiet_s": 0.5})
    lane = client.app[keys.LLM].lane
    state.memory_delay_s = 30.0  # the extraction call "generates" until a turn takes the model
    await say(client, "My sister Rosalind lives in Bristol.")
    await wait_for(lambda: bool(state.memory_calls("extract")))
    await say(client, "What's the weather like?")  # arrives while extraction generates
    state.memory_delay_s = 0.0
    assert lane.counts["preempted"] >= 1
    scrape = await (await client.get("/metrics")).text()
    assert 'lobug_llm_lane_memory_calls_total{outcome="preempted"} 1.0' in scrape
    (job,) = rows(client, "SELECT id, state, attempts FROM jobs WHERE kind = 'extract' LIMIT 1")
    assert job["state"] in ("pending", "running")
    await wait_for(
        lambda: rows(client, "SELECT state FROM jobs WHERE id = ?", job["id"])[0][0] == "done"
    )
    (done,) = rows(client, "SELECT attempts FROM jobs WHERE id = ?", job["id"])
    assert done["attempts"] == 1  # the preempted run spent no attempt
    said = [c["body"]["messages"][-1]["content"] for c in state.memory_calls("extract")]
    assert sum("Rosalind" in text for text in said) >= 2  # cut short, then asked again


async def test_no_memory_call_starts_while_a_turn_is_in_flight(
    make_client: Any, ollama: Any
) -> None:
    state, _ = ollama
    client = await make_client(**{"memory.extraction_mode": "llm"})
    state.delay_s = 0.3  # every call takes a while, the turns' too
    for text in ("I adopted a puppy called Biscuit.", "My brother Oliver visits on Sunday."):
        await say(client, text)
    await client.app[keys.RUNNER].run_until_idle(timeout=20)
    await wait_for(lambda: not rows(client, "SELECT 1 FROM jobs WHERE state != 'done'"))
    spans = [(r["task"], r["started"], r["ended"]) for r in state.timed_calls()]
    turns = [(s, e) for task, s, e in spans if task is None]
    memory = [s for task, s, _ in spans if task is not None]
    assert turns and memory
    for start in memory:
        assert not any(s < start < e for s, e in turns), (start, turns)


async def test_the_exchanges_a_conversation_left_are_extracted_in_one_call(
    make_client: Any, ollama: Any
) -> None:
    """Item 4: when the lane opens, the session's pending exchanges go to the model together;
    each exchange keeps its own facts and provenance, and no job spends an extra attempt."""
    state, _ = ollama
    state.script = Script(
        extract=extract_by_keyword(
            {
                "Biscuit": ["The user adopted a puppy called Biscuit."],
                "Oliver": ["The user's brother Oliver visits on Sundays."],
                "Bristol": ["The user's sister Rosalind lives in Bristol."],
            }
        )
    )
    # Two workers each claim a job before the lane opens: one leads, the other steps back.
    client = await make_client(
        **{"memory.extraction_mode": "llm", "memory.quiet_s": 1.0, "workers.concurrency": 2}
    )
    said = (
        "We adopted a puppy called Biscuit.",
        "My brother Oliver visits on Sundays.",
        "What's the time?",
        "My sister Rosalind lives in Bristol.",
    )
    for text in said:
        await say(client, text)
    assert not state.memory_calls("extract")  # the conversation is not quiet yet
    await wait_for(
        lambda: (
            len(rows(client, "SELECT 1 FROM jobs WHERE kind = 'extract' AND state = 'done'"))
            == len(said)
        ),
        timeout=20,
    )
    (call,) = state.memory_calls("extract")
    prompt = call["body"]["messages"][-1]["content"]
    assert prompt.startswith(instructions.EXTRACT_MANY_TASK)
    assert all(f"User: {text}" in prompt for text in said)
    facts = rows(
        client,
        "SELECT m.content, t.text FROM memories m JOIN history h ON h.memory_id = m.id"
        " AND h.event = 'ADD' JOIN turns t ON t.id = json_extract(h.meta, '$.turns[0]')"
        " WHERE m.kind = 'fact' ORDER BY m.content",  # the two workers store in either order
    )
    assert [(f["content"], f["text"]) for f in facts] == [
        ("The user adopted a puppy called Biscuit.", said[0]),
        ("The user's brother Oliver visits on Sundays.", said[1]),
        ("The user's sister Rosalind lives in Bristol.", said[3]),
    ]
    attempts = rows(client, "SELECT attempts FROM jobs WHERE kind = 'extract'")
    assert [a["attempts"] for a in attempts] == [1] * len(said)
    # The handed-out facts leave the queue with their jobs: the memories hold what was kept.
    assert not rows(client, "SELECT 1 FROM jobs WHERE json_extract(payload, '$.facts') IS NOT NULL")


async def test_a_preempted_batch_loses_no_exchange(make_client: Any, ollama: Any) -> None:
    state, _ = ollama
    state.script = Script(
        extract=extract_by_keyword(
            {
                "Biscuit": ["The user adopted a puppy called Biscuit."],
                "Oliver": ["The user's brother Oliver visits on Sundays."],
            }
        )
    )
    client = await make_client(
        **{"memory.extraction_mode": "llm", "memory.quiet_s": 0.5, "workers.concurrency": 2}
    )
    await say(client, "We adopted a puppy called Biscuit.")
    await say(client, "My brother Oliver visits on Sundays.")
    state.memory_delay_s = 30.0
    await wait_for(lambda: bool(state.memory_calls("extract")))
    await say(client, "What's the time?")  # cancels the batched call in flight
    state.memory_delay_s = 0.0
    await wait_for(
        lambda: (
            len(rows(client, "SELECT 1 FROM jobs WHERE kind = 'extract' AND state = 'done'")) == 3
        ),
        timeout=20,
    )
    first, *later = (c["body"]["messages"][-1]["content"] for c in state.memory_calls("extract"))
    assert "Biscuit" in first and "Oliver" in first  # the cut-short call held both
    assert any("Biscuit" in p and "Oliver" in p for p in later)  # asked together again
    facts = rows(client, "SELECT content FROM memories WHERE kind = 'fact' ORDER BY content")
    assert [f["content"] for f in facts] == [
        "The user adopted a puppy called Biscuit.",
        "The user's brother Oliver visits on Sundays.",
    ]
    attempts = rows(client, "SELECT attempts FROM jobs WHERE kind = 'extract'")
    assert [a["attempts"] for a in attempts] == [1, 1, 1]


async def test_the_owners_turn_cuts_off_a_strangers_long_answer(
    make_client: Any, ollama: Any
) -> None:
    """Issue 38, finding 4: on a one-slot server a stranger asked for the longest story it
    knows, and the owner's device got the apology for as long as the stranger liked. A stranger
    now gets STRANGER_MAX_TOKENS at most, and the owner's turn cuts its answer off."""
    state, _ = ollama
    state.one_slot, state.stream_endless, state.stream_delay_s = True, True, 0.05
    state.reply = "once upon a time"
    client = await make_client(**{"api.tokens": TOKEN_CONFIG, "ollama.timeout_s": 2.0})
    stranger = await client.post(
        "/v1/chat/completions",
        json={"model": "lobug", "stream": True, "max_tokens": 100_000,
              "messages": [{"role": "user", "content": "Tell me the longest story you know."}]},
        headers={"Authorization": f"Bearer {TOKENS['public']}"},
    )  # fmt: skip
    assert stranger.status == 200
    assert (await stranger.content.readuntil(b"\n\n")).startswith(b"data: ")
    (asked,) = [r for r in state.requests if r["path"] == "/api/chat"]
    assert asked["body"]["options"]["num_predict"] == STRANGER_MAX_TOKENS
    owner = await say(client, "What time is it?")
    assert "degraded" not in owner and owner["response"] == "once upon a time"
    rest = await asyncio.wait_for(stranger.content.read(), 10)  # its stream was ended
    assert rest.endswith(b"data: [DONE]\n\n")
    assert client.app[keys.LLM].lane.counts["turns_preempted"] == 1


async def test_a_paraphrased_fact_keeps_the_exchange_the_model_numbered(
    make_client: Any, ollama: Any
) -> None:
    """Issue 38, finding 6: facts were given to the exchange whose words they share, so "The
    user is vegetarian." (for "I don't eat meat any more.") went to the last exchange, with a
    wrong source, and its cap could drop it silently. The model now numbers each fact's
    exchange, and the number places it."""
    state, _ = ollama
    answer = [
        {"fact": "The user is vegetarian.", "type": "personal", "exchange": 1},
        {"fact": "The user adopted a puppy called Biscuit.", "type": "personal", "exchange": 2},
        {"fact": "The user's brother Oliver visits on Sundays.", "type": "personal",
         "exchange": 3},
    ]  # fmt: skip

    def model(body: dict[str, Any]) -> str:
        task = instructions.task_of(body["messages"])
        if task is None:
            return json.dumps({"action": "RESPOND", "response": "OK."})
        return json.dumps(answer) if task == "extract" else MEMORY_DEFAULTS[task]

    state.script = model
    client = await make_client(
        **{"memory.extraction_mode": "llm", "memory.quiet_s": 1.0, "workers.concurrency": 2}
    )
    said = (
        "I don't eat meat any more.",
        "We adopted a puppy called Biscuit.",
        "My brother Oliver visits on Sundays.",
    )
    for text in said:
        await say(client, text)
    await wait_for(
        lambda: (
            len(rows(client, "SELECT 1 FROM jobs WHERE kind = 'extract' AND state = 'done'"))
            == len(said)
        ),
        timeout=20,
    )
    (call,) = state.memory_calls("extract")
    assert (
        "Exchange 1:\nUser: I don't eat meat any more." in call["body"]["messages"][-1]["content"]
    )
    facts = rows(
        client,
        "SELECT m.content, t.text FROM memories m JOIN history h ON h.memory_id = m.id"
        " AND h.event = 'ADD' JOIN turns t ON t.id = json_extract(h.meta, '$.turns[0]')"
        " WHERE m.kind = 'fact' ORDER BY m.content",
    )
    assert [(f["content"], f["text"]) for f in facts] == [
        ("The user adopted a puppy called Biscuit.", said[1]),
        ("The user is vegetarian.", said[0]),
        ("The user's brother Oliver visits on Sundays.", said[2]),
    ]
