"""A reply's key: the question it answers with the reply, embedded beside the reply's own vector.

"A mix of drama and romance!" says nothing of a screenplay on its own; said right after "What
genre is it?" it is the answer to "What genre is Joanna's screenplay?". So a turn whose
previous turn, in the same session, asks something is embedded a second time as that turn's
last question and the reply (`key_text`), and a search takes the nearer of its two vectors,
the key's at KEY_WEIGHT of its similarity (`similarity`): a reply found by the question it
answers ranks a little below a statement that says the same thing itself.

The key is only read for results already found (the vector lists' order, the lead, a
threshold): the KNN lists search the turns' own vectors, so a follow-up question ("So what's
new with you?") cannot pull unrelated turns into them. The stored and shown text stays the
turn as said; a turn is keyed when its own vector is stored (`embed_turn`), so the question
before it exists, and again by `lobug memory reembed`. Turns stored before this existed have
no key until a reembed. Measured on LoCoMo and the synthetic eval: docs/retrieval-eval.md.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from lobug.conversation import CONVERSATION_TURN
from lobug.storage.sqlite import placeholders
from lobug.storage.vectors import pack

TABLE = "turn_reply_keys"
# The key's similarity counts at this share of itself: at 1 the old car's "My old Volvo failed
# its MOT again", keyed by the question before it, outranked "Traded the Volvo in for a Peugeot"
# for "What car does Hannah drive now?" (the synthetic eval; LoCoMo 1–5 alike at 0.9 and 1).
KEY_WEIGHT = 0.9
# Where a sentence ends. Split on it, not matched by `[^.!?\n]*\?`: that pattern starts again at
# every character of a run without an end, so a long reply with none (a model's, unbounded
# in length) took quadratic time in one C call that held the GIL (issue 38: 64 KB froze the
# daemon for 17 s). A split reads each character once.
SENTENCE_END = re.compile(r"([.!?\n])")


def key_text(asked: str, reply: str) -> str | None:
    """The text a reply is keyed by: the last question of the turn before it, then the reply;
    None when that turn asks nothing."""
    parts = SENTENCE_END.split(asked)  # text, end, text, end, …, text
    questions = [
        text.strip() + "?"
        for text, end in zip(parts[::2], parts[1::2], strict=False)
        if end == "?" and text.strip(" ?")
    ]
    return f"{questions[-1]}\n{reply}" if questions else None


def keys_of(conn: Any, turns: Sequence[tuple[int, str]]) -> list[tuple[int, str]]:
    """(turn id, key text) of the `turns` (id, text) that reply to a question: the turn each
    answers (`turns.reply_to`, m015, as `search.context` reads it), of the same session and
    part of the conversation, asks something."""
    if not turns:
        return []
    ids = [turn_id for turn_id, _ in turns]
    by_id = _rows(conn, ids)
    asked = {r[3] for r in by_id.values() if r[3] is not None} - by_id.keys()
    by_id.update(_rows(conn, sorted(asked)))
    keyed = []
    for turn_id, text in turns:
        this = by_id.get(turn_id)
        before = by_id.get(this[3]) if this is not None and this[3] is not None else None
        if this is None or before is None or this[0] is None or before[0] != this[0]:
            continue
        if before[2] and (key := key_text(before[1], text)) is not None:
            keyed.append((turn_id, key))
    return keyed


def _rows(conn: Any, ids: Sequence[int]) -> dict[int, tuple[str | None, str, bool, int | None]]:
    """(session, text, part of the conversation, the turn it answers) of each turn id."""
    if not ids:
        return {}
    marks = placeholders(ids)
    rows = conn.execute(
        f"SELECT id, session_id, text, {CONVERSATION_TURN}, reply_to FROM turns"
        f" WHERE id IN ({marks})",
        list(ids),
    ).fetchall()
    return {
        int(r[0]): (r[1], str(r[2]), bool(r[3]), None if r[4] is None else int(r[4])) for r in rows
    }


def put_keys(
    conn: Any,
    keyed: Sequence[tuple[int, str]],
    vectors: Sequence[Sequence[float]],
    table: str = TABLE,
) -> None:
    """Store the keys' vectors (`table`: reembed's staging table while it rebuilds them)."""
    conn.executemany(
        f"INSERT OR REPLACE INTO {table} (turn_id, embedding) VALUES (?, ?)",
        [(turn_id, pack(v)) for (turn_id, _), v in zip(keyed, vectors, strict=True)],
    )


def similarity(conn: Any, query: np.ndarray, turn_ids: Collection[int]) -> dict[int, float]:
    """KEY_WEIGHT × the cosine similarity of the unit `query` and each keyed turn's key, in
    one read per 500 turns (a key of another dimension, from an embedder the database no
    longer uses, is skipped)."""
    ids = list(turn_ids)
    found: dict[int, float] = {}
    for at in range(0, len(ids), 500):
        chunk = ids[at : at + 500]
        marks = placeholders(chunk)
        rows = [
            (int(turn_id), blob)
            for turn_id, blob in conn.execute(
                f"SELECT turn_id, embedding FROM {TABLE} WHERE turn_id IN ({marks})", chunk
            )
            if len(blob) == 4 * query.shape[0]
        ]
        if not rows:
            continue
        keys = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32)
        keys = keys.reshape(len(rows), query.shape[0])
        norms = np.linalg.norm(keys, axis=1)
        sims = (keys @ query) / np.where(norms > 0, norms, 1.0)
        found.update(
            (turn_id, KEY_WEIGHT * float(sim))
            for (turn_id, _), sim, norm in zip(rows, sims, norms, strict=True)
            if norm > 0
        )
    return found
