#!/usr/bin/env python3
"""Check that every row of docs/seeds.md names a caller and a test that exist (issue 44).

The audit's tables have the columns `caller` and `test`. A cell names code by backticked tokens:
  `path/file.py`                       a file (under `lobug/` unless the path starts with
                                       `lobug/`, `tests/` or `scripts/`)
  `path/file.py:Name` or `:Class.attr` a symbol in that file: a function, class, method,
                                       module- or class-level name, or an attribute
                                       `__init__` sets on `self` (the file parsed by `ast`)
  `tests/path/test_x.py::test_name`    a test function (also `::Class::test_name`)
  `::test_name`                        a test function of the last test file named in that cell
  `section.key`                        a setting, when `section` is a section of the config
                                       (`memory.top_k`): a field of that section's class
Every such token in a row must exist (but in `what it says`, which quotes the seed). A `wired`
row's caller cell names code in `lobug/`, and its test cell names a test, or for a speed goal the
benchmark under `scripts/` that measures it (tests never time speed), or says `no test yet`
(counted). The status is one of `wired`, `decided against`, `open`. The counts are printed, and
the summary table of the doc (the one whose first header cell is `seed`) must state them.

Usage: python scripts/check_seeds.py [docs/seeds.md]   (non-zero exit and one line per problem)
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ROOT_DIRS = ("lobug/", "tests/", "scripts/")  # a token's path under these is from the root
STATUSES = ("wired", "decided against", "open")
NO_TEST = "no test yet"
SEEDS = ("004", "000", "001", "002", "003")
QUOTED = "what it says"  # the seed's own words (its names, not ours): not checked

TICKS = re.compile(r"`([^`]+)`")
CODE = re.compile(r"^(?P<path>[\w./-]+\.py)(?::(?P<symbol>[A-Za-z_][\w.]*))?$")
TEST = re.compile(r"^(?P<path>tests/[\w./-]+\.py)?::(?P<symbol>\w+(?:::\w+)?)$")
SETTING = re.compile(r"^(?P<section>[a-z_]+)\.(?P<key>[a-z_0-9]+)$")
CONFIG_FILES = ("lobug/config/models.py", "lobug/config/memory_sections.py")


@dataclass
class Row:
    """One audit row: its number, the cells by header, and the doc's line."""

    line: int
    cells: dict[str, str]

    @property
    def label(self) -> str:
        return f"row {self.cells.get('#', '?')} (line {self.line})"


@dataclass
class Report:
    """What the check found: problems, and the counts by seed and status."""

    problems: list[str] = field(default_factory=list)
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    no_test: int = 0


class Names:
    """The names each file defines, kept between runs in the temp directory by the file's size
    and modification time: parsing ~180 files is most of a run, and few change between two."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.changed = False
        try:
            self.known: dict[str, list[Any]] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.known = {}

    def __call__(self, file: Path) -> frozenset[str]:
        stat = file.stat()
        key, stamp = str(file), [stat.st_mtime_ns, stat.st_size]
        entry = self.known.get(key)
        if entry is None or entry[:2] != stamp:
            entry = [*stamp, sorted(parse_names(file))]
            self.known[key] = entry
            self.changed = True
        return frozenset(entry[2])

    def save(self) -> None:
        if self.changed:
            own = self.path.with_suffix(f".{os.getpid()}")  # then renamed: a reader never
            try:  # sees half a file
                own.write_text(json.dumps(self.known), encoding="utf-8")
                os.replace(own, self.path)
            except OSError:
                pass  # only slower next time


module_names = Names(Path(tempfile.gettempdir()) / f"lobug-check-seeds-{os.getuid()}.json")


def parse_names(path: Path) -> set[str]:
    """The dotted names a file defines: top-level names, and `Class.member` down the classes."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    _collect(tree.body, "", found)
    return found


def _collect(body: list[ast.stmt], prefix: str, found: set[str]) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add(prefix + node.name)
            if prefix and node.name == "__init__":  # what it sets on self: the class's too
                owner = prefix
                for sub in ast.walk(node):
                    if (
                        isinstance(sub, ast.Attribute)
                        and isinstance(sub.ctx, ast.Store)
                        and isinstance(sub.value, ast.Name)
                        and sub.value.id == "self"
                    ):
                        found.add(owner + sub.attr)
        elif isinstance(node, ast.ClassDef):
            found.add(prefix + node.name)
            _collect(node.body, f"{prefix}{node.name}.", found)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found.add(prefix + name.id)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            found.add(prefix + node.target.id)
        elif isinstance(node, (ast.If, ast.Try)):  # names defined under a guard
            _collect(node.body, prefix, found)
            for handler in getattr(node, "handlers", []):
                _collect(handler.body, prefix, found)
            _collect(node.orelse, prefix, found)


@cache
def settings() -> dict[str, frozenset[str]]:
    """The config's sections and their keys: `Config`'s fields, each typed by a section class."""
    fields: dict[str, dict[str, str]] = {}  # class -> field -> annotation
    for path in CONFIG_FILES:
        for node in ast.parse((ROOT / path).read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                fields[node.name] = {
                    item.target.id: ast.unparse(item.annotation)
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
    return {
        section: frozenset(fields.get(kind, {}))
        for section, kind in fields.get("Config", {}).items()
    }


def resolve(path: str) -> Path:
    """A token's file: from the root when it starts with a root folder, else under lobug/."""
    return ROOT / path if path.startswith(ROOT_DIRS) else ROOT / "lobug" / path


def check_token(token: str, last_test_file: str | None) -> tuple[str | None, str | None]:
    """(problem or None, the test file this token names, if any) for one backticked token."""
    test = TEST.match(token)
    if test:
        path = test["path"] or last_test_file
        if path is None:
            return f"`{token}` names a test without its file", None
        file = ROOT / path
        if not file.is_file():
            return f"`{token}`: no file {path}", None
        symbol = test["symbol"].replace("::", ".")
        if symbol not in module_names(file):
            return f"`{token}`: no test {symbol} in {path}", path
        return None, path
    setting = SETTING.match(token)
    if setting and setting["section"] in settings():
        if setting["key"] not in settings()[setting["section"]]:
            return f"`{token}`: no setting {setting['key']} in [{setting['section']}]", None
        return None, None
    code = CODE.match(token)
    if code is None:
        return None, None  # a table, a value, a route: not a code token
    file = resolve(code["path"])
    if not file.is_file():
        return f"`{token}`: no file {file.relative_to(ROOT)}", None
    symbol = code["symbol"]
    if symbol and symbol not in module_names(file):
        return f"`{token}`: no {symbol} in {file.relative_to(ROOT)}", None
    return None, None


def cell_tokens(cell: str) -> list[str]:
    return TICKS.findall(cell)


def check_cell(row: Row, column: str, report: Report) -> list[str]:
    """Check every token of one cell; return the tokens that resolved to code or tests."""
    good: list[str] = []
    last_test_file: str | None = None
    for token in cell_tokens(row.cells.get(column, "")):
        problem, test_file = check_token(token, last_test_file)
        last_test_file = test_file or last_test_file
        if problem:
            report.problems.append(f"{row.label}, column {column}: {problem}")
        elif CODE.match(token) or TEST.match(token):
            good.append(token)
    return good


def check_row(row: Row, report: Report) -> None:
    status = row.cells.get("status", "").strip()
    if status not in STATUSES:
        report.problems.append(f"{row.label}: status {status!r} is not one of {STATUSES}")
    tokens: dict[str, list[str]] = {}
    for column in row.cells:
        if column != QUOTED:
            tokens[column] = check_cell(row, column, report)
    report.counts[(row.cells.get("seed", "?").strip(), status)] += 1
    callers = [t for t in tokens.get("caller", []) if not t.startswith(("tests/", "::"))]
    tests = [t for t in tokens.get("test", []) if TEST.match(t) or t.startswith("scripts/")]
    no_test = NO_TEST in row.cells.get("test", "")
    report.no_test += no_test
    if status != "wired":
        return
    if not callers:
        report.problems.append(f"{row.label}: wired, but its caller names no code in lobug/")
    if not tests and not no_test:
        report.problems.append(f"{row.label}: wired, but its test names no test (or {NO_TEST!r})")


def split_row(line: str) -> list[str]:
    # a `|` inside backticks is a value's alternatives, not a column
    cells, depth, current = [], False, ""
    for char in line.strip().strip("|"):
        if char == "`":
            depth = not depth
        if char == "|" and not depth and not current.endswith("\\"):
            cells.append(current.strip())
            current = ""
        else:
            current += char
    cells.append(current.strip())
    return cells


def read_tables(text: str) -> tuple[list[Row], dict[str, list[str]]]:
    """The audit rows (tables with `caller` and `test` columns) and the summary's rows."""
    rows: list[Row] = []
    summary: dict[str, list[str]] = {}
    header: list[str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith("|"):
            header = None
            continue
        cells = split_row(line)
        if header is None:
            header = cells
            continue
        if set(cells) <= {"---", ":---", "---:"}:
            continue
        if "caller" in header and "test" in header:
            rows.append(Row(number, dict(zip(header, cells, strict=False))))
        elif header[0] == "seed":
            summary[cells[0]] = cells
    return rows, summary


def summary_rows(report: Report) -> dict[str, list[str]]:
    """The summary table as it should read: per seed and `all`, the counts by status."""
    table: dict[str, list[str]] = {}
    for seed in (*SEEDS, "all"):
        counts = [
            sum(n for (s, st), n in report.counts.items() if st == status and seed in (s, "all"))
            for status in STATUSES
        ]
        table[seed] = [seed, *map(str, counts), str(sum(counts))]
    return table


def check(doc: Path) -> Report:
    rows, summary = read_tables(doc.read_text(encoding="utf-8"))
    report = Report()
    if not rows:
        report.problems.append(f"{doc}: no table with `caller` and `test` columns")
    for row in rows:
        check_row(row, report)
    numbers = Counter(row.cells.get("#") for row in rows)
    report.problems += [f"row {n} appears {k} times" for n, k in numbers.items() if k > 1]
    module_names.save()
    for seed, cells in summary_rows(report).items():
        if summary.get(seed) != cells:
            report.problems.append(
                f"summary row {seed} says {summary.get(seed)}, the rows count {cells}"
            )
    return report


def main(argv: list[str]) -> int:
    doc = Path(argv[0]) if argv else ROOT / "docs" / "seeds.md"
    report = check(doc)
    print(f"| seed | {' | '.join(STATUSES)} | rows |")
    for cells in summary_rows(report).values():
        print(f"| {' | '.join(cells)} |")
    print(f"{NO_TEST}: {report.no_test}")
    for problem in report.problems:
        print(f"{doc.name}: {problem}", file=sys.stderr)
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
