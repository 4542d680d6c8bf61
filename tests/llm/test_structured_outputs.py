"""Structured outputs: each parsed answer's JSON schema sits beside its parser, agrees with
the prompt's own example, is sent as Ollama `format` / OpenAI `response_format` (unless
llm.schemas is off), and every answer is counted per task in /metrics, valid or not."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from fake_ollama import FakeOllamaState
from fake_openai_llm import FakeOpenAIState
from memory_kit import Script, memory_env
from prometheus_client.parser import text_string_to_metric_families

from lobug.chat.prompt import REPLY_FORMAT
from lobug.config import Config
from lobug.llm.client import OutputSchema
from lobug.llm.replies import REPLY_MAX_TOKENS, REPLY_SCHEMA, find_json
from lobug.memory import instructions
from lobug.memory.extract.llm import FACTS_SCHEMA
from lobug.memory.reflect import insights
from lobug.memory.reflect import instructions as thinking
from lobug.memory.write.judge import LABELS_SCHEMA

TEA = "The user likes green tea."
# Each schema and the example its prompt shows the model (a schema the prompt contradicts
# would make a constrained model answer something the prompt never asked for).
EXAMPLES: dict[str, tuple[OutputSchema, str]] = {
    "reply": (REPLY_SCHEMA, REPLY_FORMAT),
    "facts": (FACTS_SCHEMA, instructions.EXTRACTION_REMINDER),
    "labels": (LABELS_SCHEMA, instructions.JUDGE_REMINDER),
    "insights": (insights.SCHEMA, thinking.INSIGHT_REMINDER),
}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_each_schema_is_valid_and_fits_its_prompts_example(name: str) -> None:
    schema, prompt = EXAMPLES[name]
    jsonschema.Draft202012Validator.check_schema(schema.schema)
    jsonschema.validate(find_json(prompt), schema.schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"unexpected": "shape"}, schema.schema)


async def scrape(client: Any) -> dict[tuple[str, str], float]:
    resp = await client.get("/metrics")
    assert resp.status == 200
    found = {}
    for family in text_string_to_metric_families(await resp.text()):
        for sample in family.samples:
            if sample.name.startswith("lobug_llm_") and "task" in sample.labels:
                found[(sample.name, sample.labels["task"])] = sample.value
    return found


async def test_ollama_gets_the_schema_as_format_and_invalid_replies_are_counted(
    make_client: Callable[..., Any], ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    client = await make_client()
    assert (await (await client.post("/chat/text", json={"text": "hi"})).json())["action"]
    assert state.chat_calls()[-1]["body"]["format"] == REPLY_SCHEMA.schema
    # A bounded answer: a model that rambles gives the slot back (num_predict).
    assert state.chat_calls()[-1]["body"]["options"]["num_predict"] == REPLY_MAX_TOKENS
    state.reply = "}{ not json"
    body = await (await client.post("/chat/text", json={"text": "again"})).json()
    assert body["degraded"] is True
    found = await scrape(client)
    assert found[("lobug_llm_outputs_total", "reply")] == 2
    assert found[("lobug_llm_invalid_outputs_total", "reply")] == 1


async def test_schemas_off_sends_none(
    make_client: Callable[..., Any], ollama: tuple[FakeOllamaState, str]
) -> None:
    state, _ = ollama
    client = await make_client(**{"llm.schemas": False})
    await client.post("/chat/text", json={"text": "hi"})
    assert "format" not in state.chat_calls()[-1]["body"]


@pytest.mark.parametrize("ignore", [False, True])
async def test_a_server_that_ignores_the_schema_still_gets_parsed(
    make_client: Callable[..., Any],
    openai_config: Callable[..., Config],
    openai_llm: tuple[FakeOpenAIState, str],
    ignore: bool,
) -> None:
    state, _ = openai_llm
    state.ignore_schema = ignore
    client = await make_client(openai_config())
    state.reply = 'Sure! {"action": "RESPOND", "response": "Hello Alex."} Anything else?'
    body = await (await client.post("/chat/text", json={"text": "hi"})).json()
    chats = [r["body"] for r in state.requests if r["path"].endswith("/chat/completions")]
    assert chats[-1]["max_tokens"] == REPLY_MAX_TOKENS
    # Constrained, the fake answers the smallest value of the schema (the prose broke it);
    # unconstrained, the parser finds the JSON in the prose.
    assert body["action"] == ("RESPOND" if ignore else "IGNORE")
    state.reply = "}{ not json"
    body = await (await client.post("/chat/text", json={"text": "again"})).json()
    assert body.get("degraded", False) is ignore  # only a server that ignores it says this
    found = await scrape(client)
    assert found[("lobug_llm_invalid_outputs_total", "reply")] == (1 if ignore else 0)


async def test_extraction_tolerates_prose_from_a_server_ignoring_the_schema(
    tmp_path: Any,
    openai_llm: tuple[FakeOpenAIState, str],
    openai_overrides: dict[str, Any],
    ollama: tuple[FakeOllamaState, str],
    clock: Any,
) -> None:
    state, _ = openai_llm
    state.ignore_schema = True
    fenced = "Here you go:\n```json\n" + json.dumps([{"fact": TEA, "type": "preference"}])
    state.script = Script(extract=lambda _: fenced + "\n```")
    async with memory_env(tmp_path, ollama[1], clock, **openai_overrides) as mem:
        await mem.exchange("I love green tea", "Lovely!")
        await mem.run()
        assert mem.facts() == [TEA]
        assert mem.service.llm.outputs == {("fact extraction", True): 1}
    sent = state.memory_calls("extract")[-1]["body"]["response_format"]
    assert sent["json_schema"]["schema"] == FACTS_SCHEMA.schema
