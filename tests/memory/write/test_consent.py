"""Consent for profile fields heard by voice (seed 001 §10), on a real database: spoken
sensitive fields become proposals, an explicit yes (API/CLI/chat) writes them through reconcile,
benign ones apply once corroborated, overdue ones expire, and every decision is in history."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest
from memory_kit import MemoryEnv

from lobug import errors
from lobug.access import cli_principal
from lobug.conversation import TurnRecord
from lobug.memory.write import consent, consent_chat
from lobug.memory.write.candidate import Candidate
from lobug.memory.write.reconcile import Origin

ALEX = "The user's name is Alex."
SAM = "The user's name is Sam."
TERSE = "The user prefers short answers."
DAY = 86400.0


async def said(
    mem: MemoryEnv,
    content: str,
    *,
    voice: bool = True,
    text: str = "(what the user said)",
    reply: str = "OK.",
    session: str = "s-test",
    category: str | None = "profile",
) -> tuple[bool, TurnRecord]:
    """One exchange, then its extracted `content` through consent.intercept as the extract job
    calls it (the exchange's own extract job is left pending)."""
    user, assistant = await mem.exchange(text, reply, session_id=session)
    assert assistant is not None
    origin = Origin(session_id=session, turn_ids=[user.id, assistant.id], job_id=None)
    cand = Candidate(content, category, 0.9, ())

    def run(conn: Any) -> bool:
        return consent.intercept(
            conn,
            cand,
            None,
            origin=origin,
            voice=voice,
            cfg=mem.config.memory,
            policy=mem.service.policy,
            now=mem.clock(),
        )

    return await mem.db.write(run), user


async def remember(mem: MemoryEnv, content: str) -> int:
    row = await mem.service.remember(content=content, category="profile", actor="test")
    return int(row["id"])


def proposals(mem: MemoryEnv) -> list[dict[str, Any]]:
    return [dict(r) for r in mem.rows("SELECT * FROM proposals ORDER BY id")]


def history(mem: MemoryEnv) -> list[tuple[str, int | None, dict[str, Any]]]:
    rows = mem.rows(
        "SELECT event, memory_id, meta FROM history WHERE event IN"
        " ('PROPOSE', 'ACCEPT', 'REJECT', 'EXPIRE') ORDER BY id"
    )
    return [(r[0], r[1], json.loads(r[2])) for r in rows]


async def accept(mem: MemoryEnv, proposal_id: int, actor: str = "api:local") -> dict[str, Any]:
    return await mem.db.write(
        partial(consent.accept, actor=actor, now=mem.clock(), policy=mem.service.policy),
        proposal_id,
    )


@pytest.mark.parametrize(
    ("content", "field", "value"),
    [
        (SAM, "preferred_name", "Sam"),
        ("The user goes by Al.", "preferred_name", "Al"),
        ("The user prefers to be called Al.", "preferred_name", "Al"),
        ("The user's pronouns are they/them.", "pronouns", "they/them"),
        ("The user uses she/her pronouns.", "pronouns", "she/her"),
        ("The user lives in Lisbon.", "city", "Lisbon"),
        ("The user moved to Porto.", "city", "Porto"),
        ("The user speaks French.", "language", "French"),
        ("The user's preferred language is German.", "language", "German"),
        (TERSE, "tone", "short answers"),
        ("The user prefers to be addressed formally.", "tone", "formally"),
        ("The user's goal is to run a marathon.", "goals", "to run a marathon"),
        ("The user likes jazz.", None, None),
        ("The user works at NASA.", None, None),
        ("The user prefers Python.", None, None),
        ("The user's sister Jen lives in Denver.", None, None),  # not the user's own city
    ],
)
def test_detect_profile_fields(content: str, field: str | None, value: str | None) -> None:
    found = consent.detect(content)
    assert (found.name, found.value) == (field, value) if found else field is None


async def test_typed_profile_fields_are_written_as_before(mem: MemoryEnv) -> None:
    held, _ = await said(mem, SAM, voice=False)
    assert held is False and proposals(mem) == []


async def test_a_spoken_name_waits_for_a_yes_then_supersedes_the_old_one(mem: MemoryEnv) -> None:
    alex = await remember(mem, ALEX)
    held, user = await said(mem, SAM)
    assert held is True
    assert mem.facts() == [ALEX]  # nothing written silently
    (prop,) = proposals(mem)
    assert (prop["field"], prop["value"], prop["status"], prop["sensitive"]) == (
        "preferred_name", "Sam", "pending", 1,
    )  # fmt: skip
    assert prop["expires_at"] == mem.clock() + 7 * DAY  # memory.consent_days
    assert json.loads(prop["turn_ids"])[0] == user.id and prop["session_id"] == "s-test"
    assert history(mem) == [
        ("PROPOSE", None, {"proposal": prop["id"], "field": "preferred_name", "value": "Sam",
                           "decision": "proposed", "actor": "extractor", "sensitive": True}),
    ]  # fmt: skip
    assert (await mem.service.proposals().listing(cli_principal()))["proposals"] == [
        consent.proposal_dict(mem.rows("SELECT * FROM proposals")[0])
    ]

    done = await accept(mem, prop["id"])
    assert (done["status"], done["action"], done["decided_by"]) == (
        "accepted", "superseded", "api:local",
    )  # fmt: skip
    assert mem.facts() == [SAM]
    old = mem.rows("SELECT status, valid_until FROM memories WHERE id = ?", alex)[0]
    assert tuple(old) == ("archived", mem.clock())
    new = mem.rows("SELECT * FROM memories WHERE content = ?", SAM)[0]
    assert new["supersedes"] == alex and done["memory_id"] == new["id"]
    assert json.loads(new["attributes"])["source"] == "consent"
    # The accepted fact keeps its provenance (the spoken turn) and gets a vector later.
    assert mem.value("SELECT turn_id FROM memory_sources WHERE memory_id = ?", new["id"]) == user.id
    embeds = [json.loads(j["payload"])["memory_id"] for j in mem.jobs("embed_memory")]
    assert embeds == [alex, new["id"]]
    event, memory_id, meta = history(mem)[-1]
    assert (event, memory_id, meta["decision"], meta["action"]) == (
        "ACCEPT", new["id"], "accepted", "superseded",
    )  # fmt: skip


async def test_a_value_already_known_is_not_held(mem: MemoryEnv) -> None:
    await remember(mem, "The user lives in Lisbon.")
    held, _ = await said(mem, "The user is living in Lisbon.")
    assert held is False and proposals(mem) == []  # no change: reconcile counts the repeat
    held, _ = await said(mem, "The user moved to Porto.")
    assert held is True


async def test_decisions_are_final_and_unknown_ids_are_404(mem: MemoryEnv) -> None:
    _, _ = await said(mem, SAM)
    (prop,) = proposals(mem)
    rejected = await mem.db.write(
        partial(consent.reject, actor="cli:cli", now=mem.clock()), prop["id"]
    )
    assert (rejected["status"], rejected["memory_id"]) == ("rejected", None)
    assert mem.facts() == []
    assert history(mem)[-1][:2] == ("REJECT", None)
    with pytest.raises(errors.ApiError) as again:
        await accept(mem, prop["id"])
    assert (again.value.status, again.value.message) == (
        409,
        f"proposal {prop['id']} is already rejected",
    )
    with pytest.raises(errors.ApiError) as unknown:
        await accept(mem, 999)
    assert unknown.value.status == 404
    # A re-run for the same turn (the LLM pass after an outage) does not propose it again.
    origin = Origin(session_id="s-test", turn_ids=json.loads(prop["turn_ids"]), job_id=None)

    def rerun(conn: Any) -> bool:
        return consent.intercept(conn, Candidate(SAM, "profile", 0.9, ()), origin=origin,
                                 voice=True, cfg=mem.config.memory, policy=mem.service.policy,
                                 now=mem.clock())  # fmt: skip

    assert await mem.db.write(rerun) is True
    assert len(proposals(mem)) == 1 and mem.facts() == []


async def test_overdue_proposals_expire(mem: MemoryEnv, clock: Any) -> None:
    await said(mem, "The user's pronouns are they/them.")
    (prop,) = proposals(mem)
    clock.advance(7 * DAY + 1)
    with pytest.raises(errors.ApiError) as late:
        await accept(mem, prop["id"])
    assert late.value.status == 409
    assert (await mem.service.proposals().listing(cli_principal()))["proposals"] == []
    assert await mem.db.write(partial(consent.expire_due, now=clock())) == 1
    assert await mem.db.write(partial(consent.expire_due, now=clock())) == 0
    assert proposals(mem)[0]["status"] == "expired"
    event, _, meta = history(mem)[-1]
    assert (event, meta["decision"], meta["actor"]) == ("EXPIRE", "expired", "consent")


async def test_a_newer_value_replaces_a_pending_one(mem: MemoryEnv) -> None:
    await said(mem, ALEX)
    await said(mem, SAM)
    old, new = proposals(mem)
    assert (old["status"], new["status"]) == ("expired", "pending")
    assert [(e, m["decision"]) for e, _, m in history(mem)] == [
        ("PROPOSE", "proposed"), ("EXPIRE", "replaced"), ("PROPOSE", "proposed"),
    ]  # fmt: skip


async def test_benign_fields_apply_once_two_turns_corroborate(mem: MemoryEnv) -> None:
    held, first = await said(mem, TERSE, category="preference")
    assert held is True and mem.facts() == []
    (prop,) = proposals(mem)
    assert (prop["sensitive"], prop["signals"]) == (0, 1)
    # The same turn saying it twice (model and rules) is one signal.
    origin = Origin(session_id="s-test", turn_ids=[first.id], job_id=None)

    def again(conn: Any) -> bool:
        cand = Candidate("The user prefers short answers!", "preference", 0.6, ())
        return consent.intercept(conn, cand, origin=origin, voice=True, cfg=mem.config.memory,
                                 policy=mem.service.policy, now=mem.clock())  # fmt: skip

    assert await mem.db.write(again) is True
    assert proposals(mem)[0]["signals"] == 1
    held, _ = await said(mem, TERSE, category="preference", session="s-other")
    assert held is True  # consent wrote it itself
    assert mem.facts() == [TERSE]
    (prop,) = proposals(mem)
    assert (prop["status"], prop["signals"], prop["decided_by"]) == ("accepted", 2, "consent")
    event, memory_id, meta = history(mem)[-1]
    assert (event, meta["decision"]) == ("ACCEPT", "auto_applied")
    assert memory_id == mem.value("SELECT id FROM memories WHERE content = ?", TERSE)
    # Typed, a benign field is simply written.
    assert (await said(mem, "The user prefers a casual tone.", voice=False))[0] is False


@pytest.mark.parametrize(
    ("text", "decision", "explicit"),
    [
        ("Yes, remember that.", "accept", True),
        ("yes that's right", "accept", True),
        ("Correct, remember it.", "accept", True),
        ("That's right!", "accept", True),
        ("Please remember that, thanks.", "accept", True),
        ("No, that's wrong.", "reject", True),
        ("Don't remember that.", "reject", True),
        ("no, forget it", "reject", True),
        ("Yes.", "accept", False),
        ("Yeah please", "accept", False),
        ("Nope", "reject", False),
        ("I don't remember that film.", None, None),
        ("Yes, remember that I have a dentist appointment on Friday.", None, None),
        ("What's the weather like?", None, None),
    ],
)
def test_chat_acknowledgements(text: str, decision: str | None, explicit: bool | None) -> None:
    said = consent_chat.ack(text)
    assert (said.decision, said.explicit) == (decision, explicit) if said else decision is None


async def test_yes_in_the_conversation_accepts_the_newest_pending_of_the_session(
    mem: MemoryEnv,
) -> None:
    await said(mem, "The user lives in Lisbon.", text="I live in Lisbon")
    await said(mem, "The user's name is Sam.", text="My name is Sam")
    await said(mem, "The user speaks French.", session="s-other")
    await mem.exchange("Yes, remember that.", "Done.")
    city, name, language = proposals(mem)
    # The newest of this session only; the other session's proposal is not this yes's.
    assert (city["status"], name["status"], language["status"]) == (
        "pending", "accepted", "pending",
    )  # fmt: skip
    assert (name["decided_by"], mem.facts()) == ("chat", [SAM])
    # A "no" names nothing new: the last pending proposal of the session goes.
    await mem.exchange("No, that's wrong.", "Sorry.")
    assert proposals(mem)[0]["status"] == "rejected"
    assert [e for e, _, _ in history(mem)][-2:] == ["ACCEPT", "REJECT"]


async def test_a_bare_yes_needs_the_question_and_the_window(mem: MemoryEnv) -> None:
    await said(mem, "The user's pronouns are they/them.")
    await mem.exchange("Yes.", "Lovely weather today.")  # nobody asked: a plain yes
    assert proposals(mem)[0]["status"] == "pending"
    await mem.exchange("Tell me a joke.", "Shall I remember that your pronouns are they/them?")
    await mem.exchange("Yes.", "Noted.")
    assert proposals(mem)[0]["status"] == "accepted"
    # A yes long after the proposal (beyond the last few turns) decides nothing.
    await said(mem, "The user lives in Lisbon.")
    for i in range(4):
        await mem.exchange(f"Something else {i}.", "OK.")
    await mem.exchange("Yes, remember that.", "OK.")
    assert proposals(mem)[1]["status"] == "pending"


async def test_a_failing_consent_check_never_costs_the_turn(
    mem: MemoryEnv, monkeypatch: Any
) -> None:
    await said(mem, SAM)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(consent_chat, "accept", broken)
    user, _ = await mem.exchange("Yes, remember that.", "OK.")
    assert mem.value("SELECT text FROM turns WHERE id = ?", user.id) == "Yes, remember that."
    assert proposals(mem)[0]["status"] == "pending"
    assert mem.jobs("embed_turn")  # the turn's own memory work is still enqueued
