"""Parsing model output defensively: RESPOND/IGNORE replies and JSON in the wild."""

from __future__ import annotations

import pytest

from lobug.llm.replies import Reply, find_json, parse_reply


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"action": "RESPOND", "response": "Hi!"}', Reply("RESPOND", "Hi!")),
        ('{"action": "ignore", "response": ""}', Reply("IGNORE", "")),
        ('```json\n{"action": "RESPOND", "response": "Fenced."}\n```', Reply("RESPOND", "Fenced.")),
        (
            'Sure: {"action": "RESPOND", "response": "Wrapped."} hope that helps',
            Reply("RESPOND", "Wrapped."),
        ),
        ("Just plain words.", Reply("RESPOND", "Just plain words.")),
        ("IGNORE", Reply("IGNORE", "")),
        ('{"action": "RESPOND", "response": ""}', Reply("IGNORE", "")),
        ('{"answer": "Other shape."}', Reply("RESPOND", "Other shape.")),
        ('{"action": "RESPOND"}', Reply("IGNORE", "")),
    ],
)
def test_parse_reply(raw: str, expected: Reply) -> None:
    assert parse_reply(raw) == expected


def test_find_json_shapes() -> None:
    assert find_json('[{"fact": "a"}] trailing') == [{"fact": "a"}]
    assert find_json('```\n{"fact": "a"}\n```') == {"fact": "a"}
    assert find_json('broken [1, 2 then {"ok": true}') == {"ok": True}
    for text in ("no json here", "noise [1, 2"):
        with pytest.raises(ValueError):
            find_json(text)
