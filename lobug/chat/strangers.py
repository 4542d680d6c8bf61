"""What strangers' turns may take of the disk (docs/security.md, "A stranger's turns and the
disk"): all public-trust callers together store at most `chat.stranger_bytes_per_day` of text a
day, and none of the space the owner needs. Past either, a stranger's turn is refused (503)
before anything is stored; the owner's turns are never counted or refused here."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from lobug import errors
from lobug.access import STRANGER
from lobug.conversation import session_trust
from lobug.memory.upkeep import budget
from lobug.storage.sqlite import MIB, MIN_FREE_BYTES, pages_in_use

BUDGET = "stranger_turns"  # the daily byte count in `meta` (memory.upkeep.budget)
HOUSEHOLD = "default"  # one count for every stranger: they can pose as any number of callers
# Disk kept for the owner beyond what SQLite itself needs: months of the owner's turns.
OWNER_RESERVE_BYTES = 256 * MIB
OWNER_RESERVE_PAGES = 0.1  # of storage.max_page_count, when one is set


class StrangerAllowance:
    """The disk strangers' turns may use; `admit` and `count` run in the writer's transaction."""

    def __init__(self, db_path: Path, max_pages: int, bytes_per_day: int) -> None:
        self.db_path = db_path
        self.max_pages = max_pages
        self.bytes_per_day = bytes_per_day

    def admit(self, conn: Any, trust: str, text: str, now: float) -> None:
        """Count a stranger's new turn, or refuse it (ApiError 503, nothing stored)."""
        if trust != STRANGER:
            return
        if not self._owner_space_left(conn):
            raise errors.unavailable(
                "Lo-Bug keeps its remaining disk space for its owner; an unrecognised caller's"
                " turn is not stored. Pair the device (api.device_token) to be recognised."
            )
        if not budget.take(conn, BUDGET, HOUSEHOLD, now, self.bytes_per_day, _size(text)):
            raise errors.unavailable(
                "today's allowance for unrecognised callers' turns"
                f" ({self.bytes_per_day // 1024} KiB, chat.stranger_bytes_per_day) is used up;"
                " try again tomorrow, or pair the device (api.device_token)"
            )

    def count(self, conn: Any, session_id: str, text: str, now: float) -> None:
        """A reply to a stranger's accepted turn is stored whatever is left, and counted."""
        if session_trust(conn, session_id) == STRANGER:
            budget.spend(conn, BUDGET, HOUSEHOLD, now, _size(text))

    def _owner_space_left(self, conn: Any) -> bool:
        free = shutil.disk_usage(self.db_path.parent).free
        if free < MIN_FREE_BYTES + OWNER_RESERVE_BYTES:
            return False
        if self.max_pages > 0:
            return pages_in_use(conn) < self.max_pages * (1 - OWNER_RESERVE_PAGES)
        return True


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))
