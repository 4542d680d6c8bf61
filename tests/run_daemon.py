"""Launch the real daemon (`lobug.cli.serve.serve`) with a fake transcriber swapped in.

The real process, config loading, HTTP server, workers and shutdown path; only Whisper (for
which no weights exist on a test machine) is replaced. Used by process tests and load tests:
`python tests/run_daemon.py [--stt-delay S] [--stt-text T] -- <lobug global args>`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from audio_fixtures import FakeTranscriber  # noqa: E402

from lobug.app import Overrides  # noqa: E402
from lobug.cli.main import overrides_from_args  # noqa: E402
from lobug.cli.serve import serve  # noqa: E402
from lobug.config import load_config  # noqa: E402
from lobug.host import connections  # noqa: E402
from lobug.host.logs import setup_logging  # noqa: E402
from lobug.llm import client  # noqa: E402
from lobug.memory.vectors.gate import EmbeddingMismatch  # noqa: E402
from lobug.ops.lock import DataDirLocked  # noqa: E402
from lobug.workers import runner  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stt-delay", type=float, default=0.0)
    parser.add_argument("--stt-text", default="what's the weather like")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--log-level")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--header-timeout-s", type=float, help="connections.HEADER_TIMEOUT_S")
    parser.add_argument("--body-timeout-s", type=float, help="connections.BODY_TIMEOUT_S")
    args = parser.parse_args()
    # The test daemon's pace: every health check asks the fake Ollama, idle workers look often.
    client.HEALTH_CACHE_S = 0.0
    runner.POLL_INTERVAL_S = 0.1
    if args.header_timeout_s is not None:
        connections.HEADER_TIMEOUT_S = args.header_timeout_s
    if args.body_timeout_s is not None:
        connections.BODY_TIMEOUT_S = args.body_timeout_s
    config = load_config(args.config, overrides=overrides_from_args(args))
    setup_logging(config.log.level)
    transcriber = FakeTranscriber(args.stt_text, delay_s=args.stt_delay)
    try:
        asyncio.run(serve(config, Overrides(transcriber=transcriber)))
    except (DataDirLocked, EmbeddingMismatch) as exc:  # the same exit as `lobug serve`
        print(f"lobug: refusing to start: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
