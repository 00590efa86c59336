"""The campaign's progress display: one live line on a terminal, plain log lines elsewhere."""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any, TextIO


def _clock(seconds: float) -> str:
    s = int(max(seconds, 0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    """Counts finished cases by outcome and verdict; shows rate and time left.

    On a TTY the line is redrawn at most 5 times a second; otherwise a log
    line is printed every `log_every` seconds (nightly logs stay short).
    """

    def __init__(self, budget_s: float | None, max_cases: int | None,
                 stream: TextIO | None = None, log_every: float = 10.0):
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty()
        self.budget_s = budget_s
        self.max_cases = max_cases
        self.start = time.monotonic()
        self.log_every = log_every
        self.cases = 0
        self.outcomes: Counter[str] = Counter()
        self.verdicts: Counter[str] = Counter()
        self._last_draw = 0.0
        self._width = 0

    def line(self) -> str:
        el = time.monotonic() - self.start
        rate = self.cases / el * 60 if el > 0 else 0.0
        v = self.verdicts
        bad = {k: n for k, n in self.outcomes.items() if k not in ("ok",)}
        parts = [f"{self.cases} cases" + (f"/{self.max_cases}" if self.max_cases else ""),
                 f"pass {v['pass']} warn {v['warn']} fail {v['fail']}"
                 + (f" inconclusive {v['inconclusive']}" if v["inconclusive"] else "")]
        if bad:
            parts.append(" ".join(f"{k} {n}" for k, n in sorted(bad.items())))
        parts.append(f"{rate:.0f}/min")
        if self.budget_s is not None:
            parts.append(f"{_clock(self.budget_s - el)} left")
        else:
            parts.append(f"{_clock(el)} elapsed")
        return " | ".join(parts)

    def update(self, event: dict[str, Any]) -> None:
        if event.get("type") == "case":
            self.cases += 1
            self.outcomes[str(event.get("outcome"))] += 1
            if event.get("verdict"):
                self.verdicts[str(event["verdict"])] += 1
        elif event.get("type") == "shrunk":
            how = (f"shrunk to {event['minimal']} ({event['steps']} steps, size "
                   f"{event['size_found']} -> {event['size_minimal']})" if event["shrunk"]
                   else f"not shrunk ({event['steps']} steps; "
                        f"{event.get('note') or 'no smaller failing case within the time'})")
            self.message(f"{event['kind']} in {event['cell']}: {how}: {event['bundle']}")
        elif event.get("type") == "log":
            self.message(str(event["text"]))
        self.tick()

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        every = 0.2 if self.tty else self.log_every
        if not force and now - self._last_draw < every:
            return
        self._last_draw = now
        text = self.line()
        if self.tty:
            self.stream.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            self.stream.write(f"[{_clock(now - self.start)}] {text}\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self._width = 0
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        self.tick(force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
