"""What every section of benchmarks/report.md shares: where the report goes, its Markdown tables and goal lines, the
last report's figures, the machine's load sampled while measuring, and progress on stderr."""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "benchmarks" / "report.md"
REPORT_JSON = ROOT / "benchmarks" / "report.json"


def table(rows: list[dict]) -> str:
    """A Markdown table: the first row's keys as headings, one line per row, floats to two decimals."""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        lines.append("| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row.values()) + " |")
    return "\n".join(lines)


def goal_line(goal: dict) -> str:
    """A goal as the report lists it: "- met: ..." or "- MISSED: ...", then what was measured."""
    return f"- {'met' if goal['met'] else 'MISSED'}: {goal['goal']}. {goal['measured']}."


def previous(key: str, report_json: Path | None = None):
    """The last report.json's ``key`` (None when there is none)."""
    try:
        return json.loads((report_json or REPORT_JSON).read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError):
        return None


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class LoadSampler:
    """Samples the 1-minute load average every ``every_s`` seconds in a daemon thread (``with`` block)."""

    every_s: float = 2.0
    samples: list[float] = field(default_factory=list)

    def __enter__(self) -> LoadSampler:
        self._stop = threading.Event()
        self.samples.append(os.getloadavg()[0])
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.samples.append(os.getloadavg()[0])

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict:
        s = self.samples
        return {"load_min": min(s), "load_mean": sum(s) / len(s), "load_max": max(s)}
