"""`lobug devices [pair|trust|forget]`: the devices heard on the firmware routes, and pairing
the owner's (issue 40; the rules: lobug/devices/). The CLI is the owner (full trust)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from lobug import errors
from lobug.access import cli_principal
from lobug.cli.main import EXIT_OK, EXIT_PROBLEM, EXIT_USAGE
from lobug.cli.tables import table, when
from lobug.config import TRUST_LEVELS, Config
from lobug.devices import MAX_WINDOW_S, WINDOW_S, Device, Devices
from lobug.parts import make_database
from lobug.storage.migrations import migrate

POLL_S = 0.25  # how often `pair` looks for the device that answered the window
COLUMNS = [
    ("id", "ID", 6),
    ("device_id", "DEVICE", 24),
    ("address", "ADDRESS", 40),
    ("trust", "TRUST", 8),
    ("turns", "TURNS", 6),
    ("last_seen", "LAST SEEN", 19),
    ("note", "NOTE", 0),
]


def register(sub: Any) -> None:
    devices = sub.add_parser("devices", help="devices heard on the device routes; pairing")
    devices.add_argument("--json", action="store_true", help="machine-readable output")
    devices.set_defaults(func=_command(_list))
    actions = devices.add_subparsers(dest="devices_command", metavar="ACTION")
    pair = actions.add_parser(
        "pair", help="open the pairing window: the next device that talks is yours"
    )
    pair.add_argument("--seconds", type=float, default=WINDOW_S,
                      help=f"how long the window stays open (default {WINDOW_S:g})")  # fmt: skip
    pair.add_argument("--no-wait", action="store_true",
                      help="open the window and return (the log says who is paired)")  # fmt: skip
    pair.add_argument("--json", action="store_true", help="machine-readable output")
    pair.set_defaults(func=_command(_pair))
    trust = actions.add_parser("trust", help="pair a listed device, or confirm its new address")
    trust.add_argument("id", type=int, help="the ID column of `lobug devices`")
    trust.add_argument("--trust", choices=TRUST_LEVELS, default="full")
    trust.add_argument("--json", action="store_true", help="machine-readable output")
    trust.set_defaults(func=_command(_trust))
    forget = actions.add_parser("forget", help="forget a device: a paired one is a stranger again")
    forget.add_argument("id", type=int, help="the ID column of `lobug devices`")
    forget.add_argument("--json", action="store_true", help="machine-readable output")
    forget.set_defaults(func=_command(_forget))


Action = Callable[[argparse.Namespace, Devices], Awaitable[int]]


def _command(action: Action) -> Callable[[argparse.Namespace, Config], int]:
    def run(args: argparse.Namespace, config: Config) -> int:
        try:
            return asyncio.run(_with_devices(config, args, action))
        except errors.ApiError as exc:
            print(f"lobug: {exc.message}", file=sys.stderr)
            return EXIT_PROBLEM if exc.status == 404 else EXIT_USAGE

    return run


async def _with_devices(config: Config, args: argparse.Namespace, action: Action) -> int:
    async with _devices(config) as devices:
        return await action(args, devices)


@asynccontextmanager
async def _devices(config: Config) -> AsyncIterator[Devices]:
    db = make_database(config)
    await db.open()
    try:
        await db.write_raw(migrate)
        yield Devices(db, time.time)
    finally:
        await db.close()


def _row(device: Device) -> dict[str, Any]:
    row = device.to_dict()
    if device.paired_elsewhere:
        row["note"] = f"new address: paired at {device.paired_elsewhere}; `trust` confirms it"
    elif device.trust is None:
        row["note"] = "a stranger: answered without memory"
    else:
        row["note"] = f"paired {when(device.paired_at)} by {device.paired_by}"
    return row


async def _list(args: argparse.Namespace, devices: Devices) -> int:
    listed, until = await devices.list(), await devices.window()
    if args.json:
        body = {"devices": [d.to_dict() for d in listed], "pairing_until": until}
        print(json.dumps(body, indent=2))
        return EXIT_OK
    print(table([_row(d) for d in listed], COLUMNS, "no device has called the device routes yet"))
    if until is not None:
        print(f"pairing window open until {when(until)} UTC")
    elif not any(d.trust for d in listed):
        print("nothing is paired: run `lobug devices pair` and say something to Lo-Bug")
    return EXIT_OK


async def _pair(args: argparse.Namespace, devices: Devices) -> int:
    if not 0 < args.seconds <= MAX_WINDOW_S:
        raise errors.invalid_request(f"--seconds must be more than 0 and at most {MAX_WINDOW_S:g}")
    principal = cli_principal()
    opened = time.time()
    until = await devices.open_window(principal, args.seconds)
    if not args.json:
        print(f"pairing window open for {args.seconds:g} s (until {when(until)} UTC): "
              "say something to Lo-Bug now", flush=True)  # fmt: skip
    if args.no_wait:
        if args.json:
            print(json.dumps({"pairing_until": until, "seconds": args.seconds}))
        return EXIT_OK
    paired = await _wait_for_pairing(devices, opened, until)
    if args.json:
        print(json.dumps({"paired": paired.to_dict() if paired else None}, indent=2))
    elif paired is None:
        print("the window closed and no device talked; nothing was paired")
    else:
        print(f"paired {paired.describe()}\n"
              f"not yours? undo it now: lobug devices forget {paired.id}")  # fmt: skip
    return EXIT_OK if paired else EXIT_PROBLEM


async def _wait_for_pairing(devices: Devices, opened: float, until: float) -> Device | None:
    """The device the window paired, once it closes by pairing one; None when it runs out."""
    while True:
        still_open = await devices.window()
        found = [d for d in await devices.list() if d.paired_at and d.paired_at >= opened]
        if found:
            return max(found, key=lambda d: d.paired_at or 0.0)
        if still_open is None or time.time() > until:
            return None
        await asyncio.sleep(POLL_S)


async def _trust(args: argparse.Namespace, devices: Devices) -> int:
    device = await devices.trust(cli_principal(), args.id, args.trust)
    if args.json:
        print(json.dumps(device.to_dict(), indent=2))
    else:
        print(f"trusted {device.describe()}")
    return EXIT_OK


async def _forget(args: argparse.Namespace, devices: Devices) -> int:
    device = await devices.forget(cli_principal(), args.id)
    if args.json:
        print(json.dumps(device.to_dict(), indent=2))
    else:
        print(f"forgot {device.describe()}")
    return EXIT_OK
