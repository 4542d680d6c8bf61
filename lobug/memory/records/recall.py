"""Recall: turns in, context and the single query tool out (POST /v1/turns, /v1/context,
/v1/query and their CLI twins), with trust and allowlists enforced here.

A user turn posted with `auto_extract` gets the daemon's own durable `extract` job; the caller
waits for it at most `extract_wait_s` and gets what it extracted, or `[]` with
`extraction: "pending"` when the job needs longer (an outage, a backlog): it still runs later.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from lobug import conversation as turns
from lobug import errors
from lobug.access import Principal
from lobug.memory import enqueue
from lobug.memory.query import EPISODE, QueryFilters, QueryRequest, QueryResult, Reach, tokens_of
from lobug.memory.records.scope import Scope, memory_dict
from lobug.memory.records.service import USER, Records
from lobug.memory.search import prompt_context
from lobug.memory.summaries import base_memory
from lobug.memory.summaries.cascades import short_cascade_due
from lobug.memory.table import delta
from lobug.storage.sqlite import placeholders

API_DEVICE = "api"
MAX_DELTA = 50  # per response; the header itself shows at most 3
# Reconciliation's history event (meta.job = the extract job) → what the API calls it.
ACTIONS = {"exact_duplicate": "repeated", "near_duplicate": "merged", "same_fact": "merged"}


class Recall:
    def __init__(
        self,
        records: Records,
        *,
        max_text_chars: int = 4000,
        working_memory_size: int = 20,
        extract_wait_s: float = 10.0,
    ) -> None:
        self.records = records
        self.db = records.db
        self.max_text_chars = max_text_chars
        self.working_memory_size = working_memory_size
        self.extract_wait_s = extract_wait_s
        # The CLI has no workers: it sets this to run the queue while add_turn waits.
        self.drive: Callable[[float], Awaitable[Any]] | None = None

    # -- POST /v1/turns ---------------------------------------------------------------------------
    async def add_turn(
        self, principal: Principal, fields: dict[str, Any], *, user_id: str = USER
    ) -> dict[str, Any]:
        scope = self.records.scope(principal)
        scope.require_turns()
        commit = partial(self._commit, user_id=user_id, principal=principal)
        turn, job_id = await self.db.write(commit, fields)
        if self.records.memory is not None:
            self.records.memory.wake()
        state, extracted = "off", []
        if job_id is not None:
            state = await self._await(job_id, self.extract_wait_s)
            extracted = await self.db.read(extracted_by, turn.id, job_id, scope)
        return {
            "turn_id": turn.id,
            "session_id": turn.session_id,
            "extracted": extracted,
            "extraction": state,
        }

    def _commit(
        self, conn: Any, fields: dict[str, Any], *, user_id: str, principal: Principal
    ) -> tuple[turns.TurnRecord, int | None]:
        now = self.records.clock()
        ts = fields["ts"] if fields["ts"] is not None else now
        sid = turns.resolve_session(
            conn, device_id=API_DEVICE, session_id=fields["session_id"], now=ts, idle_s=0,
            user_id=user_id, owner=principal.owner, trust=principal.trust,
        )  # fmt: skip
        turn = turns.insert_turn(
            conn, session_id=sid, role=fields["role"], text=fields["text"], ts=ts,
            device_id=API_DEVICE, user_id=user_id, ref=fields["ref"], action="RESPOND",
            speaker=fields["speaker"],
        )  # fmt: skip
        memory = self.records.memory
        if memory is None:
            return turn, None
        memory.on_user_turn(conn, turn, now=now)  # its embedding
        if turn.role == "user" and fields["auto_extract"]:
            memory.on_exchange(conn, turn, None, now=now)  # extraction and the cascade check
            row = conn.execute(
                "SELECT id FROM jobs WHERE kind = ? AND dedupe_key = ? ORDER BY id DESC LIMIT 1",
                (enqueue.EXTRACT, f"{enqueue.EXTRACT}:{turn.id}"),
            ).fetchone()
            return turn, None if row is None else int(row[0])
        if short_cascade_due(conn, user_id):
            enqueue.per_user(conn, enqueue.CASCADE_SHORT, user_id=user_id, now=now)
        return turn, None

    async def _await(self, job_id: int, wait_s: float) -> str:
        """done | failed | pending (waiting out an outage or past the deadline: runs later)."""
        drive = asyncio.ensure_future(self.drive(wait_s)) if self.drive else None
        deadline, pause = time.monotonic() + wait_s, 0.01
        try:
            while True:
                state, error = await self.db.read(job_state, job_id)
                if state in ("done", "failed"):
                    return state
                if (state == "pending" and error is not None) or time.monotonic() >= deadline:
                    return "pending"
                await asyncio.sleep(pause)
                pause = min(0.1, pause * 1.5)
        finally:
            if drive is not None:
                await drive

    # -- GET /v1/context --------------------------------------------------------------------------
    async def context(
        self,
        principal: Principal,
        session_id: str,
        *,
        q: str | None = None,
        k: int = 5,
        user_id: str = USER,
    ) -> dict[str, Any]:
        scope = self.records.scope(principal)

        def read(conn: Any) -> tuple[list[Any], str, str | None, float | None]:
            if not scope.reads_turns:  # the conversation and the profile distilled from it
                return [], "", None, None
            recent = turns.recent_context_turns(conn, session_id, self.working_memory_size)
            last = next((t.text for t in reversed(recent) if t.role == "user"), None)
            older = (
                bool(recent)
                and conn.execute(
                    "SELECT 1 FROM turns WHERE session_id = ? AND id < ? LIMIT 1",
                    (session_id, recent[0].id),
                ).fetchone()
            )
            # As the chat's window: what it holds is left out of the search, what fell out
            # of it comes back (`working_memory.window_start`).
            start = recent[0].ts if older else None
            return recent, base_memory.get_base(conn, user_id), last, start

        recent, base, last, window_start = await self.db.read(read)
        text = q or last
        memory = self.records.memory
        if text and memory is not None:
            # The chat prompt's memory, by the chat's own function (issue 39): the sections
            # the next prompt would get for `text`, and what they show.
            got = await memory.turn_memory(
                user_id=user_id,
                session_id=session_id,
                text=text,
                stores=scope.stores,
                categories=scope.categories,
                window_start=window_start,
                k=k,
            )
            always, memories = (
                got.always,
                [{**s.result.dump("bullets"), "shown": s.text} for s in got.found],
            )
            sections = {"stable": got.sections.stable, "turn": got.sections.turn}
        else:
            request = QueryRequest.model_construct(query="", reach=reach_of(scope, user_id, None))
            always = await self.db.read(
                prompt_context.read_always_for, request, self.records.policy, self.records.clock()
            )
            memories, sections = [], None
        changes, since = await self._take_delta(scope, session_id, user_id)
        return {
            "session_id": session_id,
            "short_term": [t.to_dict() for t in recent],
            "always": [a.to_dict() for a in always],
            "memories": memories,
            "sections": sections,
            "base_memory": base,
            "delta": [c.to_dict() for c in changes],
            "delta_header": delta.render(changes, since, max_bullets=3),
        }

    # -- POST /v1/query ---------------------------------------------------------------------------
    async def query(
        self, principal: Principal, req: QueryRequest, *, user_id: str = USER
    ) -> dict[str, Any]:
        """Seed 001 §6: `agent` may only narrow; categories within its allowlist and stores
        within its trust's (else 403, seed 002); facts a newer one replaced only on request
        (`include_superseded`, seed 003)."""
        policy = self.records.policy
        principal = policy.act_as(principal, req.agent)
        scope = self.records.scope(principal)
        categories = policy.check_categories(principal, req.categories)
        if EPISODE in req.wanted:
            scope.require_turns()
        filters = req.filters or QueryFilters()
        check_user(filters, user_id)
        reach = reach_of(
            scope,
            user_id,
            categories,
            stores=scope.readable(req.stores),
            superseded=req.include_superseded,
        )
        request = req.model_copy(update={"reach": reach})
        self.records.service("query")
        found = await self._search(request)
        if req.return_ == "full":
            await self._attach_memories(found, user_id)
        results = within_budget([r.dump(req.return_) for r in found], req.budget_tokens)
        session = req.session_id or filters.session_id
        changes = (await self._take_delta(scope, session, user_id))[0] if session else []
        return {"results": results, "delta": [c.to_dict() for c in changes]}

    async def _search(self, request: QueryRequest) -> list[QueryResult]:
        if not request.reach.stores or request.reach.categories == ():
            return []  # public trust, or an agent without categories: nothing to find
        return list(await self.records.service("query").query(request))

    async def _attach_memories(self, results: list[QueryResult], user_id: str) -> None:
        ids = [r.id for r in results if r.kind != EPISODE]
        if not ids:
            return
        rows = await self.db.read(
            lambda c: c.execute(
                f"SELECT * FROM memories WHERE user_id = ? AND id IN ({placeholders(ids)})",
                (user_id, *ids),
            ).fetchall()
        )
        by_id = {row["id"]: memory_dict(row) for row in rows}
        for result in results:
            if result.id in by_id and result.kind != EPISODE:
                result.memory = by_id[result.id]

    async def _take_delta(
        self, scope: Scope, session_id: str, user_id: str
    ) -> tuple[list[delta.Change], int]:
        """The session's changes this caller has not seen, marked seen for this caller only
        (`reader_of`): another caller reading the same session never empties its delta.
        A caller that may see no change (a stranger) has no delta, and no `revisions` row is
        written for it: one per fresh session id would pile up unpruned (issue 38)."""
        if not scope.stores or scope.categories == frozenset():
            return [], 0
        changes, since, _ = await self.db.write(
            partial(
                delta.take,
                user_id=user_id,
                visible=scope.sees_change,
                reader=reader_of(scope.principal),
            ),
            session_id,
        )
        return changes[-MAX_DELTA:], since


def reader_of(principal: Principal) -> str:
    """Whose delta "seen" state a read moves: the principal (how it came in, its agent — after
    `act_as` — its trust and token name), never the session's own (the chat path's)."""
    who = f"{principal.via}:{principal.agent}:{principal.trust}"
    return f"{who}:{principal.token_name}" if principal.token_name else who


def reach_of(
    scope: Scope,
    user_id: str,
    categories: list[str] | None,
    *,
    stores: tuple[str, ...] | None = None,
    superseded: bool = False,
) -> Reach:
    """What the caller's search may see: its user, its stores (those asked for, already
    trust-checked by `Scope.readable`, else every store its trust reads), its categories (those
    asked for, already allowlist-checked, else its whole allowlist), and the facts a newer one
    replaced only when `superseded` (seed 003: a query reads current facts)."""
    if categories is None and scope.categories is not None:
        categories = sorted(scope.categories)
    return Reach(
        user_id=user_id,
        stores=scope.stores if stores is None else stores,
        categories=None if categories is None else tuple(categories),
        superseded=superseded,
    )


def check_user(filters: QueryFilters, user_id: str) -> None:
    """The user is the door's (HTTP: `default`; the CLI's `--user`), as on every other route;
    `filters.user_id` may only repeat it. Another user's memories are not the caller's to read
    (every other route reports them missing), so naming another user is 403."""
    named = filters.user_id
    if named is not None and named != user_id:
        raise errors.ApiError(
            403,
            "forbidden",
            f"'filters.user_id' may only name this caller's user ('{user_id}'), got '{named}'",
            details={"field": "filters.user_id"},
        )


def within_budget(results: list[dict[str, Any]], budget: int | None) -> list[dict[str, Any]]:
    """Stop before the text would pass about `budget` tokens; always keep the first result."""
    if budget is None:
        return results
    kept: list[dict[str, Any]] = []
    used = 0
    for result in results:
        used += tokens_of(result["text"])
        if kept and used > budget:
            break
        kept.append(result)
    return kept


def job_state(conn: Any, job_id: int) -> tuple[str | None, str | None]:
    row = conn.execute("SELECT state, last_error FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return (None, None) if row is None else (row["state"], row["last_error"])


def extracted_by(conn: Any, turn_id: int, job_id: int, scope: Scope) -> list[dict[str, Any]]:
    """The memories the turn's extract job wrote or confirmed, with what it did to each."""
    where, params = scope.where("m")
    rows = conn.execute(
        f"SELECT m.id, m.content, h.event, json_extract(h.meta, '$.reason') AS reason,"
        f" json_extract(h.meta, '$.supersedes') AS supersedes FROM history h"
        f" JOIN memories m ON m.id = h.memory_id WHERE json_extract(h.meta, '$.job') = ?"
        f" AND h.event IN ('ADD', 'MERGE', 'UPDATE') AND EXISTS (SELECT 1 FROM memory_sources s"
        f" WHERE s.memory_id = m.id AND s.turn_id = ?) AND {where} ORDER BY h.id",
        (job_id, turn_id, *params),
    ).fetchall()
    found: dict[int, dict[str, Any]] = {}
    for row in rows:
        if row["event"] == "ADD":
            action = "superseded" if row["supersedes"] else "added"
        elif row["event"] == "MERGE":
            action = ACTIONS.get(row["reason"], "merged")
        else:
            action = "updated"
        found.setdefault(row["id"], {"id": row["id"], "content": row["content"], "action": action})
    return list(found.values())
