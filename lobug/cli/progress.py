"""A dependency-free progress bar on stderr (a redrawn line on a terminal, sparse lines in logs)."""

from __future__ import annotations

import sys
import time

WIDTH = 30  # characters of the bar


class ProgressBar:
    def __init__(self, label: str) -> None:
        self.label = label
        self.stream = sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self._last_draw = 0.0
        self._last_pct = -10
        self.done = 0
        self.total = 0

    def update(self, done: int, total: int) -> None:
        self.done, self.total = done, max(total, done)
        now = time.monotonic()
        pct = int(100 * done / self.total) if self.total else 100
        if self.tty:
            if now - self._last_draw >= 0.1 or done >= self.total:
                filled = int(WIDTH * pct / 100)
                bar = "#" * filled + "." * (WIDTH - filled)
                self.stream.write(f"\r{self.label} [{bar}] {done}/{self.total} {pct:3d}%")
                self.stream.flush()
                self._last_draw = now
        elif pct >= self._last_pct + 10 or (done >= self.total and pct != self._last_pct):
            # Not a terminal (journal, CI): a line every 10 %, no carriage returns.
            self.stream.write(f"{self.label}: {done}/{self.total} ({pct}%)\n")
            self.stream.flush()
            self._last_pct = pct

    def close(self) -> None:
        if self.tty and self._last_draw:
            self.stream.write(f"  {time.monotonic() - self.started:.1f}s\n")
            self.stream.flush()
