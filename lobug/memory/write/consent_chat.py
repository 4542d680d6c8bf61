"""A yes or a no in the conversation decides a pending consent proposal (seed 001 §10).

"yes, remember that", "yes that's right", "correct, remember it" accept; "no, that's wrong",
"don't remember that", "forget that" reject — the whole utterance, so "I don't remember that
film" decides nothing. They apply to the pending proposals of the same session from the last
`ACK_WINDOW` turns: the ones the assistant's last words named (it was asked to confirm them,
see `consent.to_confirm`), else the newest. A bare "yes" or "no" counts only when the
assistant's last words named the proposed value ("Shall I remember that you are Alex?").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from lobug.conversation import TurnRecord
from lobug.memory.settings import WritePolicy
from lobug.memory.write.consent import accept, mentions, reject

ACK_WINDOW = 6  # a yes/no applies to proposals from this many previous turns of the session
CHAT = "chat"  # the actor of a yes/no said in the conversation

_YES = r"(?:yes|yeah|yep|yup|sure|correct|right|exactly|ok|okay)"
_NO = r"(?:no|nope|nah)"
_POLITE = r"(?: please| thanks| thank you)?"
_ACCEPT = re.compile(
    rf"^(?:{_YES}(?: please)? )?(?:(?:please )?(?:do )?(?:remember|save|keep|note) "
    rf"(?:that|it|this)|that'?s (?:right|correct)|that is (?:right|correct)|you got it"
    rf"(?: right)?){_POLITE}$"
)
_REJECT = re.compile(
    rf"^(?:{_NO}(?: no)? )?(?:that'?s (?:wrong|not right|not correct|not true|incorrect)|"
    rf"that is (?:wrong|not right|not correct|not true|incorrect)|(?:please )?(?:don'?t|do not)"
    rf" (?:remember|save|keep|store) (?:that|it|this)|forget (?:that|it|this)|wrong){_POLITE}$"
)
# A bare yes/no counts only when the assistant's last words named the proposed value.
_BARE_YES = re.compile(rf"^{_YES}(?: please| it is| i am| that's me)?{_POLITE}$")
_BARE_NO = re.compile(rf"^{_NO}(?: thanks| thank you)?$")


@dataclass(frozen=True)
class Ack:
    decision: str  # accept | reject
    explicit: bool  # "yes, remember that" (True) or a bare "yes" (False)


def ack(text: str) -> Ack | None:
    """What a user's words say about a pending proposal, if anything."""
    said = " ".join(re.sub(r"[^\w' ]", " ", text.replace("’", "'").casefold()).split())
    for decision, explicit, pattern in (
        ("accept", True, _ACCEPT), ("reject", True, _REJECT),
        ("accept", False, _BARE_YES), ("reject", False, _BARE_NO),
    ):  # fmt: skip
        if pattern.match(said):
            return Ack(decision, explicit)
    return None


def on_user_turn(
    conn: Any,
    turn: TurnRecord,
    *,
    now: float,
    policy: WritePolicy | None = None,
) -> list[dict[str, Any]]:
    """In the transaction that commits a user turn: "yes, remember that" accepts (and "no,
    that's wrong" rejects) the newest pending proposals of this session from the last
    ACK_WINDOW turns — only those the assistant's last words name, when it named any (a bare
    "yes" needs that). Returns the decided proposals."""
    said = ack(turn.text) if turn.role == "user" else None
    if said is None:
        return []
    recent = [r[0] for r in conn.execute(
        "SELECT id FROM turns WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
        (turn.session_id, turn.id, ACK_WINDOW),
    )]  # fmt: skip
    if not recent:
        return []
    rows = [
        r
        for r in conn.execute(
            "SELECT * FROM proposals WHERE user_id = ? AND session_id = ? AND status = 'pending'"
            " AND expires_at > ? ORDER BY id DESC",
            (turn.user_id, turn.session_id, now),
        ).fetchall()
        if set(json.loads(r["turn_ids"])) & set(recent)
    ]
    if not rows:
        return []
    asked = conn.execute(
        "SELECT text FROM turns WHERE session_id = ? AND id < ? AND role = 'assistant'"
        " ORDER BY id DESC LIMIT 1",
        (turn.session_id, turn.id),
    ).fetchone()
    named = [r for r in rows if asked and mentions(asked[0], r["value"])]
    if named:
        chosen = named
    elif said.explicit:
        newest = max(max(json.loads(r["turn_ids"])) for r in rows)
        chosen = [r for r in rows if max(json.loads(r["turn_ids"])) == newest]
    else:
        return []
    decided = []
    for row in chosen:
        if said.decision == "accept":
            decided.append(accept(conn, row["id"], actor=CHAT, now=now, policy=policy))  # fmt: skip
        else:
            decided.append(reject(conn, row["id"], actor=CHAT, now=now))
    return decided
