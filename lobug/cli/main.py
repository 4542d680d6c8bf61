"""`lobug` entry point: parse arguments, load config once, dispatch to a command module.

Exit codes: 0 success, 1 the command ran and found a problem, 2 bad usage or bad config.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lobug import __version__
from lobug.access import load_config_checked
from lobug.config import Config, ConfigError

EXIT_OK, EXIT_PROBLEM, EXIT_USAGE = 0, 1, 2

# Each command module exposes `register(subparsers)`; it sets `func(args, config) -> int`.
COMMAND_MODULES = (
    "lobug.cli.jobs_cmd",
    "lobug.cli.db_cmd",
    "lobug.cli.ops_cmd",
    "lobug.cli.memory",
    "lobug.cli.mcp_cmd",
    "lobug.cli.devices_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lobug", description="Lo-Bug voice assistant daemon")
    parser.add_argument("--version", action="version", version=f"lobug {__version__}")
    parser.add_argument("--config", type=Path, help="TOML config file")
    parser.add_argument("--data-dir", type=Path, help="directory for the database and models")
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the daemon")
    serve.add_argument("--host", help="listen address (default from config: 0.0.0.0)")
    serve.add_argument("--port", type=int, help="listen port (default from config: 8321)")
    serve.set_defaults(func=_serve)

    config = sub.add_parser("config", help="configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    show = config_sub.add_parser("show", help="print the effective configuration as JSON")
    show.set_defaults(func=_config_show)

    completion = sub.add_parser("completion", help="print a shell completion script")
    completion.add_argument("shell", choices=["bash", "zsh"])

    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if args.data_dir is not None:
        result["storage.data_dir"] = str(args.data_dir)
    if args.log_level is not None:
        result["log.level"] = args.log_level
    if getattr(args, "host", None) is not None:
        result["server.host"] = args.host
    if getattr(args, "port", None) is not None:
        result["server.port"] = args.port
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "completion":  # needs no config: a broken one must not break the shell
        import shtab

        print(shtab.complete(parser, args.shell))
        return EXIT_OK
    try:
        config = load_config_checked(args.config, overrides=overrides_from_args(args))
    except ConfigError as exc:
        print(f"lobug: config error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from lobug.host.logs import setup_logging

    setup_logging(config.log.level)
    func: Callable[[argparse.Namespace, Config], int] = args.func
    try:
        return func(args, config)
    except KeyboardInterrupt:
        return 130


def _serve(args: argparse.Namespace, config: Config) -> int:
    from lobug.cli.serve import serve
    from lobug.memory.vectors.gate import EmbeddingMismatch
    from lobug.ops.lock import DataDirLocked

    try:
        asyncio.run(serve(config))
    except (DataDirLocked, EmbeddingMismatch) as exc:
        # Exit 2 like a config error: retrying cannot help (the unit sets
        # RestartPreventExitStatus=2 so systemd does not loop on it).
        print(f"lobug: refusing to start: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _config_show(args: argparse.Namespace, config: Config) -> int:
    print(json.dumps(config.to_dict(), indent=2, sort_keys=False, ensure_ascii=False))
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
