"""The timing-faithful Ollama front of the reply benchmark (scripts/pi_llm.py): its accounting
of the one slot and the KV cache, and answers the daemon's parsers accept. Timing is only
checked within generous bounds; the front runs 100x faster than the model it imitates."""

from __future__ import annotations

import asyncio
import json
from types import ModuleType
from typing import Any

import aiohttp
import pytest
from script_kit import load_script

from lobug.llm.replies import parse_reply
from lobug.memory import instructions
from lobug.memory.extract.llm import parse_facts
from lobug.memory.summaries.cascades import distill_parser, parse_summary

SPEEDUP = 100.0
SYSTEM = {"role": "system", "content": "You are Lo-Bug. Answer with one JSON object, always."}


def pi() -> ModuleType:
    return load_script("pi_llm")


@pytest.fixture
async def front(aiohttp_server: Any) -> tuple[Any, str]:
    module = pi()
    app = module.build_app(module.Options(speedup=SPEEDUP))
    server = await aiohttp_server(app)  # the test server cancels a gone client's handler
    return app[module.MODEL_KEY], str(server.make_url(""))


def turn(*texts: str) -> list[dict[str, str]]:
    messages = [SYSTEM]
    for i, text in enumerate(texts):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return messages


async def chat(
    session: aiohttp.ClientSession, url: str, messages: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    body = {"model": "llama3.2", "messages": messages, "stream": False, **extra}
    async with session.post(url + "/api/chat", json=body) as resp:
        assert resp.status == 200
        return dict(await resp.json())


async def stats(session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
    async with session.get(url + "/_stats") as resp:
        return dict(await resp.json())


async def test_a_new_prompt_prefills_only_what_follows_the_cached_prefix(front: Any) -> None:
    model, url = front
    async with aiohttp.ClientSession() as session:
        first = await chat(session, url, turn("My sister Mara lives in Lisbon."), format="json")
        reply = parse_reply(first["message"]["content"])
        assert reply.action == "RESPOND" and len(reply.response.split()) >= 15
        second_prompt = turn("My sister Mara lives in Lisbon.", reply.response, "And my dog?")
        second = await chat(session, url, second_prompt, format="json")
        found = (await stats(session, url))["records"]
    tokens = pi().prompt_tokens(second_prompt)
    assert first["prompt_eval_count"] == found[0]["prompt_tokens"] == found[0]["prefilled"]
    # The first prompt's tokens (up to the assistant header) are reused; the JSON envelope the
    # model generated is not what the daemon sends back as the assistant's message.
    assert found[1]["cached"] == found[0]["prompt_tokens"]
    assert found[1]["prefilled"] == len(tokens) - found[0]["prompt_tokens"]
    assert second["prompt_eval_count"] == found[1]["prefilled"]
    assert found[1]["generated"] == second["eval_count"] > 20
    assert model.cache[: len(tokens)] == tokens
    # An identical prompt re-evaluates one token only, as llama.cpp does.
    async with aiohttp.ClientSession() as session:
        await chat(session, url, second_prompt, format="json")
        again = (await stats(session, url))["records"][-1]
    assert again["cached"] == len(tokens) - 1 and again["prefilled"] == 1


async def test_one_slot_serves_requests_first_come_first_served(front: Any) -> None:
    _, url = front
    memory_prompt = instructions.extraction_messages(
        [("I love green tea in the morning.", "Nice.")]
    )
    async with aiohttp.ClientSession() as session:
        extraction = asyncio.create_task(chat(session, url, memory_prompt))
        await asyncio.sleep(0.01)
        device_turn = asyncio.create_task(chat(session, url, turn("What time is it?")))
        await asyncio.sleep(0.01)
        third = asyncio.create_task(chat(session, url, turn("Thanks a lot, Lo-Bug.")))
        facts = parse_facts((await extraction)["message"]["content"])
        await asyncio.gather(device_turn, third)
        found = (await stats(session, url))["records"]
    assert [f.content for f in facts] == ["The user loves green tea in the morning."]
    first, second, last = found
    assert [r["task"] for r in found] == ["extract", "chat", "chat"]
    assert first["memory"] and not second["memory"]
    # Never two at once, in arrival order.
    assert first["end"] <= second["start"] and second["end"] <= last["start"]
    assert second["before"] == first["id"] and second["before_memory"]
    assert second["wait_s"] > 0 and second["wait_memory_s"] == pytest.approx(
        first["end"] - second["arrival"], abs=0.5
    )
    assert last["before"] == second["id"] and not last["before_memory"]
    assert last["wait_memory_s"] == pytest.approx(first["end"] - last["arrival"], abs=0.5)
    # Generous bounds on the clock: generation at 5 tokens/s of model time.
    generating = second["end"] - second["start"] - second["prefilled"] / 30.0
    assert 0.5 * second["generated"] / 5.0 < generating < 3.0 * second["generated"] / 5.0


async def test_a_client_that_goes_away_frees_the_slot_and_keeps_what_was_done(
    front: Any,
) -> None:
    model, url = front
    long_prompt = turn(" ".join(f"word{i}" for i in range(300)))  # ~10 s of prefill
    timeout = aiohttp.ClientTimeout(total=0.05)  # 5 s of model time
    async with aiohttp.ClientSession() as session:
        queued_behind = None
        with pytest.raises(asyncio.TimeoutError):
            body = {"model": "llama3.2", "messages": long_prompt, "stream": False}
            blocker = session.post(url + "/api/chat", json=body, timeout=timeout)
            queued_behind = asyncio.create_task(
                asyncio.wait_for(chat(session, url, turn("Are you there?")), 0.02)
            )
            async with blocker as resp:
                await resp.read()
        with pytest.raises(asyncio.TimeoutError):
            await queued_behind
        started = asyncio.get_running_loop().time()
        await chat(session, url, turn("Hello again."))
        waited = asyncio.get_running_loop().time() - started
        found = (await stats(session, url))["records"]
    aborted, gone, after = found
    assert aborted["aborted"] and aborted["aborted_in"] == "prefill"
    assert 0 < aborted["prefilled"] < aborted["prompt_tokens"]
    assert gone["aborted"] and gone["aborted_in"] == "queued" and gone["start"] is None
    # The slot was free at once: the next request did not wait out the long prefill.
    assert after["wait_s"] < 1.0 and waited < 5.0 / SPEEDUP * 2 + 0.2
    # The cache kept the prefilled part of the aborted prompt: the shared system message.
    assert after["cached"] >= len(pi().prompt_tokens([SYSTEM])) - 1
    assert not after["aborted"] and model.current is None


async def test_a_stream_cut_by_its_client_stops_generating(front: Any) -> None:
    model, url = front
    body = {"model": "llama3.2", "messages": turn("Tell me about Lisbon."), "stream": True}
    async with aiohttp.ClientSession() as session:
        async with session.post(url + "/api/chat", json=body) as resp:
            first = json.loads(await resp.content.readline())
            assert first["done"] is False and first["message"]["content"]
        await asyncio.sleep(0.05)
        found = (await stats(session, url))["records"][0]
    assert found["aborted"] and found["aborted_in"] == "generate"
    assert 1 <= found["generated"] < len(pi().tokenize(pi().reply_text("Tell me about Lisbon.")))
    assert model.current is None


async def test_memory_answers_parse_and_embeddings_take_their_shape(front: Any) -> None:
    _, url = front
    transcript = "User: My dog Biscuit is four years old.\nLo-Bug: Lovely.\nUser: I work at NASA."
    async with aiohttp.ClientSession() as session:
        summary = await chat(session, url, instructions.summarize_conversation_messages(transcript))
        facts = ["The user's dog Biscuit is four years old.", "The user works at NASA."]
        distill = instructions.distill_base_memory_messages("", [], facts, 400)
        base = await chat(session, url, distill)
        body = {"model": "nomic-embed-text", "input": ["one", "two words"]}
        async with session.post(url + "/api/embed", json=body) as resp:
            vectors = (await resp.json())["embeddings"]
        found = (await stats(session, url))["records"]
    text = parse_summary(summary["message"]["content"])
    assert 60 <= len(text.split()) <= 130 and "Biscuit" in text
    document = distill_parser(400)(base["message"]["content"])
    assert "User Profile:" in document and "The user works at NASA." in document
    assert len(vectors) == 2 and len(vectors[0]) == 768
    assert [r["task"] for r in found] == ["summarize", "distill", "embed"]
