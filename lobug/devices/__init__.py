"""Devices heard on the firmware routes, and pairing: the owner's device remembers with the
firmware it has (issue 40; the policy: docs/security.md, "Pairing a device").

A device with no token is known by its device id and its address together. It is a stranger
(`api.unknown_device_trust`) until the owner pairs it: `lobug devices pair`, the Devices page
or POST /v1/devices/pair opens a short window, and the next device that talks in it becomes
the owner's (and the window closes). The same id at another address is a new row, a stranger
until the owner confirms it (`trust`), which moves the trust there. Only a full-trust caller
with every category manages devices (the doors check it: `Records.scope(...).
require_unrestricted`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lobug import errors
from lobug.access import STORES_BY_TRUST, Principal, peer_owner
from lobug.config import TRUST_LEVELS
from lobug.storage.database import Database

log = logging.getLogger(__name__)

WINDOW_S = 120.0  # how long `pair` listens by default: time to walk to the device and speak
MAX_WINDOW_S = 3600.0
# Strangers kept in the list (the least recently heard go first): a LAN peer that sends a new
# device id with every request must not grow the table without end. Paired rows are never
# pruned.
MAX_STRANGERS = 256
_WINDOW_UNTIL = "devices.pair_until"  # meta: when the open window closes (epoch seconds)
_WINDOW_BY = "devices.pair_opened_by"  # meta: who opened it, for the paired row


@dataclass(frozen=True)
class Caller:
    """A firmware route's caller: what its prompt may draw on, and whose its conversations are
    (`conversation.resolve_session`)."""

    trust: str
    owner: str

    @property
    def stores(self) -> tuple[str, ...]:
        return STORES_BY_TRUST[self.trust]


@dataclass(frozen=True)
class Device:
    id: int
    device_id: str
    address: str
    first_seen: float
    last_seen: float
    turns: int
    trust: str | None  # None: not paired (a stranger)
    paired_at: float | None
    paired_by: str | None
    paired_elsewhere: str | None  # the address this id is paired at, when it is not this one

    @classmethod
    def from_row(cls, row: Any) -> Device:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))

    def describe(self) -> str:
        """For the log and the command: which device, where, as what."""
        state = f"paired at trust {self.trust}" if self.trust else "a stranger"
        moved = f"; paired at {self.paired_elsewhere}" if self.paired_elsewhere else ""
        return f"#{self.id} {self.device_id!r} at {self.address} ({state}{moved})"


HOW_TO_PAIR = (
    "devices without the device token are answered without memory until one is paired: run "
    "`lobug devices pair` (or open the Devices page of /ui) and say something to Lo-Bug "
    "within 2 minutes"
)


def unpaired_note(paired: int, *, device_token: bool, unknown_trust: str) -> str | None:
    """What /health, `lobug doctor` and the start-up log say while no device can remember:
    nothing paired, no device token and strangers answered without memory; else None."""
    if paired or device_token or unknown_trust == "full":
        return None
    return HOW_TO_PAIR


def device_owner(device_id: str) -> str:
    """Whose the conversations of a paired device are: the device's own (by id, so that a
    device the owner confirmed at a new address keeps its conversation)."""
    return f"device:{device_id}"


_SELECT = """
SELECT d.*, (SELECT p.address FROM devices p WHERE p.device_id = d.device_id
             AND p.id != d.id AND p.trust IS NOT NULL LIMIT 1) AS paired_elsewhere
FROM devices d
"""


class Devices:
    """The device list of one database, shared by the daemon, the CLI, /v1 and /ui."""

    def __init__(self, db: Database, clock: Callable[[], float]) -> None:
        self.db = db
        self.clock = clock

    # -- the firmware routes ----------------------------------------------------------------------
    async def admit(
        self, device_id: str, address: str | None, *, unknown_trust: str, turn: bool
    ) -> Caller:
        """A tokenless caller of a firmware route, known by `address`: recorded (a `turn` is
        counted), paired when a window is open, answered at its trust or as a stranger."""
        if not address:  # a Unix socket: no address to know it by, never paired
            return Caller(unknown_trust, peer_owner(address))
        device, paired_now = await self.db.write(self._admit, device_id, address, turn)
        if paired_now:
            log.warning(
                "paired device %s in the pairing window; if that was not your device, "
                "undo it now: lobug devices forget %d",
                device.describe(),
                device.id,
            )
        if device.trust is None:
            return Caller(unknown_trust, peer_owner(address))
        return Caller(device.trust, device_owner(device.device_id))

    def _admit(self, conn: Any, device_id: str, address: str, turn: bool) -> tuple[Device, bool]:
        now = self.clock()
        conn.execute(
            "INSERT INTO devices (device_id, address, first_seen, last_seen, turns)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (device_id, address) DO UPDATE SET"
            " last_seen = MAX(last_seen, excluded.last_seen), turns = turns + excluded.turns",
            (device_id, address, now, now, int(turn)),
        )
        device = _get(conn, device_id=device_id, address=address)
        if device.trust is not None:
            return device, False
        until, opened_by = _window(conn)
        if until is None or now >= until:
            _prune_strangers(conn)
            return device, False
        _close_window(conn)  # one device per window
        return _set_trust(conn, device.id, "full", now, opened_by or "pairing window"), True

    # -- the owner's commands ---------------------------------------------------------------------
    async def list(self) -> list[Device]:
        return await self.db.read(_list)

    async def window(self) -> float | None:
        """When the open pairing window closes; None when none is open."""
        until, _ = await self.db.read(_window)
        return until if until is not None and until > self.clock() else None

    async def open_window(self, principal: Principal, seconds: float = WINDOW_S) -> float:
        if not 0 < seconds <= MAX_WINDOW_S:
            raise errors.invalid_request(
                f"'seconds' must be more than 0 and at most {MAX_WINDOW_S:g}", field="seconds"
            )
        until = self.clock() + seconds
        await self.db.write(_open_window, until, principal.describe())
        log.warning(
            "pairing window open for %g s (by %s): the next device that talks is paired as "
            "the owner's",
            seconds,
            principal.describe(),
        )
        return until

    async def close_window(self) -> None:
        await self.db.write(_close_window)

    async def trust(self, principal: Principal, row_id: int, trust: str = "full") -> Device:
        """Pair a listed device (or confirm it at a new address: the trust moves here)."""
        if trust not in TRUST_LEVELS:
            raise errors.invalid_request(
                f"'trust' must be one of {', '.join(TRUST_LEVELS)}, got {trust!r}", field="trust"
            )

        def run(conn: Any) -> Device:
            _require(conn, row_id)
            return _set_trust(conn, row_id, trust, self.clock(), principal.describe())

        device = await self.db.write(run)
        log.warning("device %s trusted by %s", device.describe(), principal.describe())
        return device

    async def forget(self, principal: Principal, row_id: int) -> Device:
        """Drop a device from the list: a paired one is a stranger again at once."""

        def run(conn: Any) -> Device:
            device = _require(conn, row_id)
            conn.execute("DELETE FROM devices WHERE id = ?", (row_id,))
            return device

        device = await self.db.write(run)
        log.warning("device %s forgotten by %s", device.describe(), principal.describe())
        return device

    async def paired_count(self) -> int:
        return int(await self.db.read(_paired_count))

    async def status(self, *, device_token: bool, unknown_trust: str) -> dict[str, Any]:
        """For /health: how many devices are paired, an open window, and the note when no
        device can remember (`unpaired_note`)."""
        # On the health checks' own thread: /health never waits behind busy readers.
        paired, (until, _) = await self.db.probe(lambda c: (_paired_count(c), _window(c)))
        until = until if until is not None and until > self.clock() else None
        note = unpaired_note(paired, device_token=device_token, unknown_trust=unknown_trust)
        return {
            "paired": paired,
            "device_token": device_token,
            "pairing_until": until,
            **({"note": note} if note else {}),
        }


def _list(conn: Any) -> list[Device]:
    rows = conn.execute(_SELECT + " ORDER BY d.trust IS NULL, d.last_seen DESC").fetchall()
    return [Device.from_row(r) for r in rows]


def _paired_count(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM devices WHERE trust IS NOT NULL").fetchone()[0])


def _get(conn: Any, *, device_id: str | None = None, address: str | None = None,
         row_id: int | None = None) -> Device:  # fmt: skip
    if row_id is not None:
        row = conn.execute(_SELECT + " WHERE d.id = ?", (row_id,)).fetchone()
    else:
        row = conn.execute(
            _SELECT + " WHERE d.device_id = ? AND d.address = ?", (device_id, address)
        ).fetchone()
    return Device.from_row(row)


def _require(conn: Any, row_id: int) -> Device:
    if conn.execute("SELECT 1 FROM devices WHERE id = ?", (row_id,)).fetchone() is None:
        raise errors.not_found(f"no device #{row_id} (lobug devices lists them)")
    return _get(conn, row_id=row_id)


def _set_trust(conn: Any, row_id: int, trust: str, now: float, by: str) -> Device:
    device = _get(conn, row_id=row_id)
    # One address per device id: confirming it here is the owner saying it moved (a router's
    # DHCP gave it another address), so the old address is a stranger's again.
    conn.execute(
        "UPDATE devices SET trust = NULL, paired_at = NULL, paired_by = NULL"
        " WHERE device_id = ? AND id != ?",
        (device.device_id, row_id),
    )
    conn.execute(
        "UPDATE devices SET trust = ?, paired_at = ?, paired_by = ? WHERE id = ?",
        (trust, now, by, row_id),
    )
    return _get(conn, row_id=row_id)


def _window(conn: Any) -> tuple[float | None, str | None]:
    rows = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN (?, ?)", (_WINDOW_UNTIL, _WINDOW_BY)
        ).fetchall()
    )
    until = rows.get(_WINDOW_UNTIL)
    return (None if until is None else float(until)), rows.get(_WINDOW_BY)


def _open_window(conn: Any, until: float, by: str) -> None:
    for key, value in ((_WINDOW_UNTIL, repr(until)), (_WINDOW_BY, by)):
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


def _close_window(conn: Any) -> None:
    conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (_WINDOW_UNTIL, _WINDOW_BY))


def _prune_strangers(conn: Any) -> None:
    conn.execute(
        "DELETE FROM devices WHERE trust IS NULL AND id NOT IN (SELECT id FROM devices"
        " WHERE trust IS NULL ORDER BY last_seen DESC, id DESC LIMIT ?)",
        (MAX_STRANGERS,),
    )
