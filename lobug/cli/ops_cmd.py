"""`lobug backup PATH`, `lobug restore PATH`, `lobug doctor`: keeping an install healthy."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from lobug.cli.main import EXIT_OK, EXIT_PROBLEM
from lobug.config import Config
from lobug.ops import doctor
from lobug.ops.backup import BackupError, backup_database
from lobug.ops.lock import DataDirLocked
from lobug.ops.restore import RestoreError, restore_database


def register(sub: Any) -> None:
    backup = sub.add_parser(
        "backup", help="copy the database to PATH while the daemon runs, then verify the copy"
    )
    backup.add_argument("path", help="backup file (or an existing directory to put it in)")
    backup.add_argument("--quiet", action="store_true", help="print only errors")
    backup.set_defaults(func=_backup)

    restore = sub.add_parser(
        "restore", help="replace the database with a verified backup (the daemon must be stopped)"
    )
    restore.add_argument("path", help="a file made by `lobug backup`")
    restore.set_defaults(func=_restore)

    check = sub.add_parser("doctor", help="check Ollama, models, database, disk and queue")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.set_defaults(func=_doctor)


def _backup(args: argparse.Namespace, config: Config) -> int:
    source = config.storage.db_path
    try:
        result = backup_database(source, args.path, busy_timeout_ms=config.storage.busy_timeout_ms)
    except BackupError as exc:
        print(f"lobug: backup failed: {exc}", file=sys.stderr)
        return EXIT_PROBLEM
    if not result.ok:
        print(f"lobug: backup of {source} did not verify; nothing was written:", file=sys.stderr)
        for problem in result.verification.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_PROBLEM
    if not args.quiet:
        rows = ", ".join(f"{n} {t}" for t, n in result.verification.tables.items())
        print(
            f"backed up {source} to {result.path}: {_mib(result.size_bytes)} "
            f"({result.pages} pages) in {result.seconds:.1f} s; integrity_check ok; {rows}"
        )
    return EXIT_OK


def _restore(args: argparse.Namespace, config: Config) -> int:
    storage = config.storage
    try:
        result = restore_database(storage.data_dir, storage.db_path, args.path)
    except DataDirLocked as exc:
        pid = f" (pid {exc.pid})" if exc.pid else ""
        print(
            f"lobug: refusing to restore: the daemon{pid} is using {storage.data_dir}. "
            f"Stop it first (sudo systemctl stop lobug), restore, then start it again.",
            file=sys.stderr,
        )
        return EXIT_PROBLEM
    except RestoreError as exc:
        print(f"lobug: restore failed: {exc}", file=sys.stderr)
        return EXIT_PROBLEM
    except PermissionError as exc:
        print(
            f"lobug: restore failed, nothing was changed: {exc}; run it as the service user "
            f"(sudo -u lobug …) or root",
            file=sys.stderr,
        )
        return EXIT_PROBLEM
    rows = ", ".join(f"{n} {t}" for t, n in result.backup.tables.items())
    print(f"restored {storage.db_path} from {args.path} (integrity_check ok; {rows})")
    if result.kept is not None:
        print(f"the previous database is kept as {result.kept}")
    return EXIT_OK


def _doctor(args: argparse.Namespace, config: Config) -> int:
    checks = asyncio.run(doctor.run_checks(config))
    if args.json:
        print(json.dumps(doctor.as_json(checks), indent=2))
    else:
        print(doctor.render(checks))
    return EXIT_PROBLEM if doctor.failed(checks) else EXIT_OK


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"
