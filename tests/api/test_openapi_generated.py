"""lobug/api/openapi.json is generated from the shapes' models: the checked-in copy is current."""

from __future__ import annotations

from lobug.api import openapi


def test_the_checked_in_document_is_the_generated_one() -> None:
    current = openapi.DOC_PATH.read_text(encoding="utf-8")
    assert current == openapi.render(), "stale: run `python -m lobug.api.openapi`"
