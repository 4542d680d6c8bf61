"""The seeds audit's checker (scripts/check_seeds.py), run as `scripts/test` runs it: a row naming
a file, a symbol, a test or a setting that does not exist fails it, by row and token."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from script_kit import ROOT

HEADER = (
    "| # | seed | § | what it says | where in `lobug/` | caller | test | status | note |\n"
    "|---|---|---|---|---|---|---|---|---|\n"
)
GOOD = (
    "| 1 | 004 | §1 | The device contract | `api/device.py:chat_text`, `memory.top_k` "
    "| `app.py:create_app` | `tests/api/test_device_routes.py::test_audio_wav_turn`, "
    "`::test_health_reports_real_checks` | wired | |\n"
    "| 2 | 000 | Notes | A prompt's wording | `memory/instructions.py:MEMORY_SYSTEM` "
    "| `memory/extract/job.py:ExtractJob._model_facts` | no test yet | wired | |\n"
    "| 3 | 001 | §15 | `memory.query` in PostgreSQL | — | — | — | decided against | |\n"
)


def summary(rows: dict[str, tuple[int, int, int]]) -> str:
    lines = ["| seed | wired | decided against | open | rows |", "|---|---|---|---|---|"]
    for seed in ("004", "000", "001", "002", "003", "all"):
        counts = rows.get(seed, (0, 0, 0))
        lines.append(f"| {seed} | {' | '.join(map(str, counts))} | {sum(counts)} |")
    return "\n".join(lines) + "\n\n"


COUNTS = {"004": (1, 0, 0), "000": (1, 0, 0), "001": (0, 1, 0), "all": (2, 1, 0)}


def run(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    doc = tmp_path / "seeds.md"
    doc.write_text(text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_seeds.py"), str(doc)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_rows_naming_what_exists_pass_and_are_counted(tmp_path: Path) -> None:
    done = run(tmp_path, summary(COUNTS) + HEADER + GOOD)
    assert done.returncode == 0, done.stderr
    assert "| all | 2 | 1 | 0 | 3 |" in done.stdout
    assert "no test yet: 1" in done.stdout


def test_a_missing_file_or_symbol_fails_naming_the_row_and_the_token(tmp_path: Path) -> None:
    bad = GOOD.replace("`api/device.py:chat_text`", "`api/device.py:read_stores`").replace(
        "`memory/instructions.py:MEMORY_SYSTEM`", "`memory/prompts.py:MEMORY_SYSTEM`"
    )
    done = run(tmp_path, summary(COUNTS) + HEADER + bad)
    assert done.returncode == 1
    problems = done.stderr.splitlines()
    assert any("row 1 " in p and "`api/device.py:read_stores`" in p for p in problems)
    assert any("row 2 " in p and "no file lobug/memory/prompts.py" in p for p in problems)
    assert len(problems) == 2, done.stderr


def test_a_missing_test_setting_or_method_fails(tmp_path: Path) -> None:
    bad = (
        GOOD.replace("::test_health_reports_real_checks", "::test_gone")
        .replace("`memory.top_k`", "`memory.context_tokens`")
        .replace("ExtractJob._model_facts", "ExtractJob._nothing")
    )
    done = run(tmp_path, summary(COUNTS) + HEADER + bad)
    assert done.returncode == 1
    assert "no test test_gone in tests/api/test_device_routes.py" in done.stderr
    assert "no setting context_tokens in [memory]" in done.stderr
    assert "no ExtractJob._nothing in lobug/memory/extract/job.py" in done.stderr


def test_a_wired_row_needs_a_caller_and_a_test(tmp_path: Path) -> None:
    bad = GOOD.replace("| no test yet | wired |", "| — | wired |").replace(
        "| `app.py:create_app` |", "| the app |"
    )
    done = run(tmp_path, summary(COUNTS) + HEADER + bad)
    assert done.returncode == 1
    assert "row 1 (line 12): wired, but its caller names no code in lobug/" in done.stderr
    assert "row 2 (line 13): wired, but its test names no test" in done.stderr


def test_a_summary_that_disagrees_with_the_rows_fails(tmp_path: Path) -> None:
    stale = dict(COUNTS, all=(3, 0, 0))
    done = run(tmp_path, summary(stale) + HEADER + GOOD)
    assert done.returncode == 1
    assert "summary row all says ['all', '3', '0', '0', '3'], the rows count" in done.stderr


def test_the_audit_itself_passes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_seeds.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
