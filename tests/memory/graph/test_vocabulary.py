"""The memory's words for the recogniser (lobug.memory.graph.vocabulary) through the app's own
wiring: the SpeechService's hints for a caller's trust, from facts written through /v1.
The user's name first, then the household's names; never a name from a store above the
caller's trust; refreshed when the memory changes, cached while it does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from api_kit import make_app

from lobug import keys
from lobug.memory.graph.vocabulary import REFRESH_S, MemoryVocabulary

FACTS = {
    "private": "The user's sister Rosalind lives in Bristol.",
    "shared": "The user has a puppy called Biscuit.",
    "social": "The user's brother Oliver plays chess in the park.",
}


async def vocabulary_app(make_client: Callable[..., Any], **overrides: Any) -> Any:
    app = await make_app(make_client, **{"memory.enabled": True, **overrides})
    for store, content in FACTS.items():
        await app.remember(content, store=store)
    return app


def words(hint: str | None) -> set[str]:
    return {w.strip(".,") for w in (hint or "").split()}


async def test_hints_hold_only_names_from_stores_the_caller_may_read(
    make_client: Callable[..., Any],
) -> None:
    app = await vocabulary_app(make_client)
    speech = app.client.app[keys.SPEECH]
    full = words((await speech.hints("full")).hotwords)
    assert {"Rosalind", "Bristol", "Biscuit", "Oliver"} <= full
    inner = words((await speech.hints("inner")).hotwords)
    assert {"Biscuit", "Oliver"} <= inner and not {"Rosalind", "Bristol"} & inner
    familiar = words((await speech.hints("familiar")).hotwords)
    assert "Oliver" in familiar and not {"Rosalind", "Bristol", "Biscuit"} & familiar
    assert (await speech.hints("public")).empty  # a stranger is told no names at all


async def test_the_users_own_name_comes_first_and_the_hint_is_bounded(
    make_client: Callable[..., Any],
) -> None:
    app = await vocabulary_app(make_client, **{"speech.vocabulary_max_tokens": 12})
    for n in range(12):
        await app.remember(f"Guest{n} Carraway visited the user in Cornwall{n} on holiday.")
    await app.remember("The user's name is Marguerite.")
    hint = (await app.client.app[keys.SPEECH].hints("full")).hotwords
    assert hint is not None and hint.startswith("Marguerite, ")
    assert len(hint) < 12 * 4  # the budget holds a few names, not the whole graph


async def test_the_prompt_form_and_off(make_client: Callable[..., Any]) -> None:
    app = await vocabulary_app(make_client, **{"speech.vocabulary": "prompt"})
    hints = await app.client.app[keys.SPEECH].hints("full")
    assert hints.hotwords is None and "Biscuit" in words(hints.initial_prompt)
    app = await vocabulary_app(make_client, **{"speech.vocabulary": "off"})
    assert (await app.client.app[keys.SPEECH].hints("full")).empty


async def test_a_new_name_is_heard_at_once_and_a_deleted_one_is_forgotten(
    make_client: Callable[..., Any],
) -> None:
    app = await vocabulary_app(make_client)
    vocabulary = MemoryVocabulary(app.client.app[keys.DB])
    assert "Pirukas" not in await vocabulary("full")
    cat = await app.remember("The user's cat Pirukas sleeps on the radiator.", store="social")
    assert "Pirukas" in await vocabulary("full")
    assert "Pirukas" in await vocabulary("familiar")
    await app.local.delete(f"/v1/memories/{cat['id']}")
    assert "Pirukas" not in await vocabulary("full")


async def test_an_unchanged_memory_is_answered_from_the_cache(
    make_client: Callable[..., Any],
) -> None:
    app = await vocabulary_app(make_client)
    await app.client.app[keys.RUNNER].stop()  # no job changes the memory between the reads
    db = app.client.app[keys.DB]
    vocabulary = MemoryVocabulary(db)
    first = await vocabulary("full")
    reads: list[str] = []
    original = db.read

    async def counting(fn: Any, *args: Any) -> Any:
        reads.append(getattr(fn, "__name__", "?"))
        result = await original(fn, *args)
        return result

    db.read = counting  # type: ignore[method-assign]
    try:
        again = await vocabulary("full")
    finally:
        del db.read
    assert again == first and reads == ["_read"]
    assert again is first  # the cached list itself: the graph was not read again


async def test_a_fact_moved_to_a_lower_store_is_heard_by_that_trust_at_once(
    make_client: Callable[..., Any],
) -> None:
    app = await vocabulary_app(make_client)
    vocabulary = MemoryVocabulary(app.client.app[keys.DB])
    assert "Rosalind" not in await vocabulary("familiar")
    (memory_id,) = [r[0] for r in app.rows("SELECT id FROM memories WHERE content LIKE '%Rosal%'")]
    await app.local.patch(f"/v1/memories/{memory_id}", {"store": "social"})
    assert "Rosalind" in await vocabulary("familiar")


async def test_an_alias_merged_without_a_memory_write_is_heard_after_the_refresh(
    make_client: Callable[..., Any],
) -> None:
    app = await vocabulary_app(make_client)
    db = app.client.app[keys.DB]
    now = [1000.0]
    vocabulary = MemoryVocabulary(db, monotonic=lambda: now[0])
    assert "Ros" not in await vocabulary("full")

    def enrich(conn: Any) -> None:  # what the enrichment job's alias merge writes
        conn.execute("UPDATE entities SET aliases = '[\"Ros\"]' WHERE canonical_name = 'Rosalind'")

    await db.write(enrich)
    assert "Ros" not in await vocabulary("full")  # cached: no memory changed
    now[0] += REFRESH_S + 1
    assert "Ros" in await vocabulary("full")


async def test_names_of_expired_and_forgotten_memories_leave_the_hints_and_the_people_index(
    make_client: Callable[..., Any], clock: Any
) -> None:
    """Issue 38, finding 15: a name stayed in Whisper's hints and in the people index after its
    memory expired (until a GC pass, or for good in the index) or was forgotten."""
    app = await vocabulary_app(make_client)
    speech = app.client.app[keys.SPEECH]
    now = clock()
    await app.remember("The user's friend Gwendolyn visits on Fridays.", expires_at=now + 60)
    cat = await app.remember("The user's cat Pirukas sleeps on the radiator.")

    async def people() -> set[str]:
        listed = await app.local.get("/v1/entities?type=person&limit=100")
        return {e["canonical_name"] for e in listed["entities"]}

    assert "Gwendolyn" in words((await speech.hints("full")).hotwords)
    assert "Gwendolyn" in await people()
    clock.advance(120)  # past its expiry; no GC pass has run
    assert "Gwendolyn" not in words((await speech.hints("full")).hotwords)
    assert "Gwendolyn" not in await people()
    await app.local.delete(f"/v1/memories/{cat['id']}")  # forgotten (soft-deleted)
    assert "Pirukas" not in words((await speech.hints("full")).hotwords)
    listed = await app.local.get("/v1/entities?q=Pirukas")
    assert listed["entities"] == []
    assert "Rosalind" in await people()  # a live memory's name stays
