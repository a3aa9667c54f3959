"""A class trains at once: N students submit the same preset within a few seconds; how the queue and the workers
carry them. Measured, never asserted in tests.

Each student is a session of its own (an owner) submitting through the app's :class:`seqviz.jobs.RunManager`,
at a random moment within ``--spread`` seconds. Two clusters:

- ``local``: the app's own (a LocalCluster of worker processes, sized by seqviz.cluster.local_worker_count, or
  ``--workers``);
- ``external``: a cluster the benchmark starts as separate processes on loopback, ``dask scheduler`` plus
  ``--workers`` ``dask worker`` processes of one thread each, reached through SEQVIZ_DASK_SCHEDULER as a
  university's cluster would be.

Meanwhile a thread asks a real web server's /_stcore/health every 0.2 s (``streamlit run app.py``, started here,
its training not used) so the health check's latency during the class is measured on the same machine.

Figures: accepted, refused, seconds from the first submission to the last run's end, each run's wait and training
seconds, the error of the waiting estimate (the expected start the page shows against the actual start), the
workers' peak resident memory, the health check's p50/p95.

    python -m benchmarks.classroom --cluster local --students 30 --steps 400      # the quick translator itself
    python -m benchmarks.classroom --cluster external --workers 2 --steps 100 --out benchmarks/classroom-ext.json
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRESET = "Quick: attention translator"


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


class Health(threading.Thread):
    """Asks ``url``/_stcore/health every 0.2 s; latencies in seconds (a failure counts as 10 s)."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url = url
        self.latencies: list[float] = []
        self.failures = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            began = time.perf_counter()
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=10) as answer:
                    answer.read()
                self.latencies.append(time.perf_counter() - began)
            except OSError:
                self.failures += 1
                self.latencies.append(10.0)
            self.done.wait(0.2)


def measure(cluster_kind: str, students: int, steps: int, workers: int | None, spread: float, seed: int) -> dict:
    import psutil

    from seqviz import browser as harness
    from seqviz.cluster import Cluster, separate_processes
    from seqviz.jobs import RunManager, RunRefused
    from seqviz.runs import preset

    spec = dataclasses.replace(preset(PRESET).spec, steps=steps)
    separate = contextlib.ExitStack()
    if cluster_kind == "external":
        address, _ = separate.enter_context(separate_processes(workers or 2, ROOT))
        cluster = Cluster(address=address)
    else:
        cluster = Cluster(workers=workers)
    url = separate.enter_context(harness.streamlit_server(ROOT / "test-output" / "benchmark-classroom-web.log")).url
    manager = RunManager(orphan_timeout_s=3600, cluster=cluster)
    health = Health(url)
    try:
        if cluster.external:
            deadline = time.monotonic() + 60
            while manager.unavailable(wait_s=5) and time.monotonic() < deadline:
                time.sleep(0.5)
            deadline = time.monotonic() + 60
            while cluster.slots() < (workers or 2) and time.monotonic() < deadline:
                time.sleep(0.5)
        health.start()
        rng = random.Random(seed)
        moments = sorted(rng.uniform(0, spread) for _ in range(students))
        began = time.monotonic()
        runs, refused, expected = [], [], {}
        for n, moment in enumerate(moments):
            time.sleep(max(0.0, began + moment - time.monotonic()))
            try:
                runs.append(manager.submit(f"student-{n}", spec))
            except RunRefused as error:
                refused.append(str(error))
        peak_workers_mb = 0.0
        reported: set[str] = set()
        while not all(run.wait(0) for run in runs):
            for run in runs:
                if run.wait(0) and run.id not in reported:  # a line per ended run, as it ends
                    reported.add(run.id)
                    state = run.state()
                    print(f"{time.monotonic() - began:7.1f} s: run {len(reported)} {state.status}, waited "
                          f"{state.waited_s or 0:.0f} s, trained {state.train_seconds or 0:.0f} s, metric "
                          f"{state.metric}", file=sys.stderr, flush=True)
            for run in runs:
                state = run.state()
                if state.status == "queued" and state.expected_start_at is not None:
                    expected.setdefault(run.id, []).append((time.time(), state.expected_start_at))
            if cluster.started:
                try:
                    sizes = cluster.client().run(lambda: psutil.Process().memory_info().rss)
                    peak_workers_mb = max(peak_workers_mb, max(sizes.values()) / 2**20)
                except Exception:  # a worker restarting
                    pass
            time.sleep(1.0)
        ended = time.monotonic()
        health.done.set()
        health.join(15)
        states = [run.state() for run in runs]
        first_submit = min(s.submitted_at for s in states)
        errors = []  # the expected start shown on the page against the actual start, for estimates made while waiting
        for state in states:
            for seen_at, guess in expected.get(state.id, []):
                if state.started_at is not None and state.started_at - seen_at > 5:
                    errors.append(abs(guess - state.started_at) / (state.started_at - seen_at))
        waits = [s.waited_s for s in states if s.waited_s is not None]
        trains = [s.train_seconds for s in states if s.train_seconds]
        figures = {
            "cluster": cluster_kind, "workers": cluster.slots() if cluster.started else None, "students": students,
            "spec": f"{PRESET}, {steps} steps (the preset has {preset(PRESET).spec.steps})",
            "spread_s": spread, "accepted": len(runs), "refused": len(refused),
            "statuses": {status: sum(s.status == status for s in states) for status in {s.status for s in states}},
            "seconds_to_last_end": round(max(s.ended_at for s in states) - first_submit, 1),
            "longest_wait_s": round(max(waits), 1) if waits else None,
            "median_wait_s": round(statistics.median(waits), 1) if waits else None,
            "train_seconds_median": round(statistics.median(trains), 1) if trains else None,
            "train_seconds_max": round(max(trains), 1) if trains else None,
            "run_seconds_median": round(statistics.median(s.ended_at - s.started_at for s in states
                                                          if s.started_at and s.ended_at), 1),
            "final_metric_median": round(statistics.median(s.metric for s in states if s.metric is not None), 4),
            "estimate_relative_error_median": quantile(errors, 0.5),
            "estimate_relative_error_p90": quantile(errors, 0.9),
            "workers_peak_rss_mb": round(peak_workers_mb, 1),
            "health_p50_s": quantile(health.latencies, 0.5), "health_p95_s": quantile(health.latencies, 0.95),
            "health_failures": health.failures, "benchmark_seconds": round(ended - began, 1),
            "load_average_at_end": os.getloadavg(), "cpus": os.cpu_count(),
            "refusals": refused[:3],
        }
    finally:
        health.done.set()
        manager.close(timeout=30)
        cluster.close()
        separate.close()  # the web server, then the separate cluster's processes
    return figures


def typing_while_training(per_page: int = 12, runs: int = 2, page: str = "attention") -> dict:
    """Typing to painted on ``page`` (benchmarks/browser.py's measure) on a quiet server, then while ``runs``
    visitors train the quick translator on that server's ``runs`` local workers."""
    import re

    from benchmarks import browser
    from seqviz import browser as harness

    os.environ["SEQVIZ_TRAIN_WORKERS"] = str(runs)  # the server started below reads it
    sentences = browser.Sentences()
    step = re.compile(r"Step \d+ of \d+")
    with browser.running_server("benchmark-classroom-streamlit.log") as server, harness.chromium() as chrome:
        quiet = browser.typing(chrome, server, sentences, per_page, pages=[page])["pages"][f"/{page}"]
        trainers = []
        for _ in range(runs):
            tab = browser.Tab(chrome, server)
            tab.page.goto(f"{server.url}/train")
            main = tab.page.get_by_test_id("stMain")
            main.get_by_role("button", name="Start training", exact=True).click(timeout=120_000)
            trainers.append(tab)
        for tab in trainers:  # both past their first step before typing begins
            tab.page.get_by_test_id("stMain").get_by_text(step).first.wait_for(timeout=180_000)
        busy = browser.typing(chrome, server, sentences, per_page, pages=[page])["pages"][f"/{page}"]
        still = [bool(tab.page.get_by_test_id("stMain").get_by_text(step).count()) for tab in trainers]
        for tab in trainers:
            tab.close()
    return {"page": f"/{page}", "sentences_each": per_page, "runs_training": runs,
            "quiet_median_s": round(quiet["median_s"], 3), "training_median_s": round(busy["median_s"], 3),
            "ratio": round(busy["median_s"] / quiet["median_s"], 2), "quiet_max_s": round(quiet["max_s"], 3),
            "training_max_s": round(busy["max_s"], 3), "runs_still_training_at_the_end": still,
            "load_average_at_end": os.getloadavg()}


ROWS = [("cluster", "cluster"), ("workers", "workers"), ("students", "students"), ("spec", "run"),
        ("accepted", "accepted"), ("refused", "refused"), ("seconds_to_last_end", "first submit to last end, s"),
        ("longest_wait_s", "longest wait, s"), ("median_wait_s", "median wait, s"),
        ("train_seconds_median", "training per run (median), s"), ("run_seconds_median", "a run, start to end "
         "(median), s"), ("estimate_relative_error_median", "expected start's error (median, of the wait left)"),
        ("workers_peak_rss_mb", "a worker's peak RSS, MB"), ("health_p95_s", "health check p95, s"),
        ("health_failures", "health check failures"), ("load_average_at_end", "load average at the end")]


def table(paths: list[Path]) -> str:
    """The figures of several measurements side by side, as a Markdown table."""
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    lines = ["| | " + " | ".join(f"measure {n + 1}" for n in range(len(runs))) + " |",
             "|---|" + "---|" * len(runs)]
    for key, label in ROWS:
        values = []
        for figures in runs:
            value = figures.get(key)
            if isinstance(value, list | tuple):
                value = " / ".join(f"{v:.1f}" for v in value)
            values.append("–" if value is None else str(value))
        lines.append(f"| {label} | " + " | ".join(values) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cluster", choices=("local", "external"), default="local")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--steps", type=int, default=400, help="steps of the quick translator (the preset: 400)")
    parser.add_argument("--workers", type=int, default=None, help="local: SEQVIZ_TRAIN_WORKERS; external: 2")
    parser.add_argument("--spread", type=float, default=5.0, help="seconds over which the class submits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="also write the figures here (JSON)")
    parser.add_argument("--table", type=Path, nargs="+", default=None,
                        help="measure nothing: print these JSON files' figures as one Markdown table")
    parser.add_argument("--typing", action="store_true",
                        help="measure typing to painted on /attention quiet and while runs train, instead")
    parser.add_argument("--training-runs", type=int, default=2, help="with --typing: runs (and workers) training")
    args = parser.parse_args(argv)
    if args.typing:
        figures = typing_while_training(runs=args.training_runs)
        print(json.dumps(figures, indent=2), flush=True)
        if args.out:
            args.out.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        return 0
    if args.table:
        print(table(args.table))
        return 0
    figures = measure(args.cluster, args.students, args.steps, args.workers, args.spread, args.seed)
    text = json.dumps(figures, indent=2)
    print(text, flush=True)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
