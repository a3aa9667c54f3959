"""A class trains at once: N students press Start within a few seconds; how the store, the queue and the workers
carry them. Measured, never asserted in tests.

Each student is a lab of its own in a fresh lab store (SQLite in a temporary folder), submitting through the app's
:class:`seqviz.jobs.RunManager` at a random moment within ``--spread`` seconds, and read back as a page does
(:func:`seqviz.store.runs.states`). Two classes:

- ``same`` (the default): everyone the same preset and seed, the teacher's "now train the quick translator". Identical
  runs are trained once, so the class follows one run; ONE student alone on a fresh store and cluster is measured
  first, and the class's slowest student is set against it (the issue's goal: within 2.5x).
- ``mixed``: each student a different seed, so each run trains, as many at once as there are workers.

Two clusters:

- ``local``: the app's own (a LocalCluster of worker processes, sized by seqviz.cluster.local_worker_count, or
  ``--workers``);
- ``external``: a cluster the benchmark starts as separate processes on loopback, ``dask scheduler`` plus
  ``--workers`` ``dask worker`` processes of one thread each, reached as a university's cluster would be.

The cluster is started (and its workers up) before the clock starts, fresh for each measurement. Meanwhile a thread
asks a real web server's /_stcore/health every 0.2 s (``streamlit run app.py``, started here, its training not
used) so the health check's latency during the class is measured on the same machine.

Figures: accepted, refused, each student's seconds from pressing Start to having the model in their lab (the
model's arrival in the lab's models), seconds from the first press to the last model, runs actually trained and
their followers, waits, training seconds, the error of the waiting estimate (the expected start the page shows
against the actual start), the workers' peak resident memory, the health check's p50/p95.

    python -m benchmarks.classroom --class same --students 30 --out benchmarks/classroom-same.json
    python -m benchmarks.classroom --class mixed --students 30 --steps 100 --out benchmarks/classroom-mixed.json
    python -m benchmarks.classroom --report benchmarks/classroom-same.json benchmarks/classroom-mixed.json
    python -m benchmarks.classroom --cluster external --workers 2 --class mixed --steps 100
    python -m benchmarks.classroom --typing      # typing to painted on /attention, quiet and while runs train
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from benchmarks.classroom_figures import class_summary, markdown, ratio_to_alone, write_report

ROOT = Path(__file__).resolve().parents[1]
PRESET = "Quick: attention translator"
DEADLINE_S = 4 * 3600.0  # a measurement gives up after this long
NO_MODEL_GRACE_S = 30.0  # a student whose run ended without their model is waited for this long, then reported


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


def student_specs(kind: str, students: int, steps: int, base=None) -> list:
    """The run each student asks for: ``same``, the preset (cut to ``steps``) for all; ``mixed``, a seed each."""
    from seqviz.runs import preset

    spec = dataclasses.replace(base if base is not None else preset(PRESET).spec, steps=steps)
    if kind == "same":
        return [spec] * students
    if kind == "mixed":
        return [dataclasses.replace(spec, seed=spec.seed + n) for n in range(students)]
    raise ValueError(f"unknown class {kind!r}: same or mixed")


@contextlib.contextmanager
def _cluster(kind: str, workers: int | None, db_url: str):
    """A fresh cluster, its workers up: the app's own, or separate processes on loopback reading ``db_url``."""
    from seqviz.cluster import Cluster, separate_processes
    from seqviz.store.engine import URL_ENV

    with contextlib.ExitStack() as stack:
        if kind == "external":
            before = os.environ.get(URL_ENV)
            os.environ[URL_ENV] = db_url  # an external cluster's workers read their own setting
            try:
                address, _ = stack.enter_context(separate_processes(workers or 2, ROOT))
            finally:
                os.environ.pop(URL_ENV) if before is None else os.environ.__setitem__(URL_ENV, before)
            cluster = Cluster(address=address)
        else:
            cluster = Cluster(workers=workers)
        stack.callback(cluster.close)
        wanted = workers or (2 if cluster.external else None)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                cluster.client()
                if cluster.slots() >= (wanted or 1):
                    break
            except Exception:  # the separate scheduler still starting
                pass
            time.sleep(0.5)
        yield cluster


def measure(cluster_kind: str, specs: list, workers: int | None, spread: float, seed: int, label: str = "") -> dict:
    """One class (``specs``: a run per student) on a fresh store, cluster and web server; its figures."""
    import psutil

    from seqviz import browser as harness
    from seqviz.jobs import RunManager, RunRefused
    from seqviz.store import Database, labs, models, runs

    with tempfile.TemporaryDirectory(prefix="seqviz-classroom-") as tmp, contextlib.ExitStack() as stack:
        db = Database(f"sqlite:///{tmp}/seqviz.db")
        stack.callback(db.dispose)
        cluster = stack.enter_context(_cluster(cluster_kind, workers, db.url))
        web = stack.enter_context(harness.streamlit_server(
            ROOT / "test-output" / "benchmark-classroom-web.log",
            env={"SEQVIZ_DATABASE_URL": f"sqlite:///{tmp}/web.db"}))  # its own store: its training not used
        manager = RunManager(db, cluster=cluster, orphan_timeout_s=DEADLINE_S)
        stack.callback(manager.close, timeout=30)
        health = Health(web.url)
        stack.callback(health.done.set)
        class_labs = [labs.open_lab(db, None).id for _ in specs]
        health.start()
        rng = random.Random(seed)
        moments = sorted(rng.uniform(0, spread) for _ in specs)
        began, cpu_began = time.monotonic(), time.process_time()
        pressed: dict[str, float] = {}  # lab -> time.time() it pressed Start
        run_of: dict[str, str] = {}  # lab -> the run it follows
        refused: list[str] = []
        for lab, spec, moment in zip(class_labs, specs, moments, strict=True):
            time.sleep(max(0.0, began + moment - time.monotonic()))
            pressed[lab] = time.time()
            try:
                run_of[lab] = manager.submit(lab, spec)
            except RunRefused as error:
                refused.append(str(error))
        expected: dict[str, list[tuple[float, float]]] = {}  # lab -> (seen at, expected start) while it waited
        unsteady: dict[str, list[tuple[float, float]]] = {}  # the same, the estimate as made (not kept steady)
        done: dict[str, object] = {}  # lab -> its final RunState
        ended_without_model: dict[str, float] = {}
        peak_workers_mb, polls, reported = 0.0, 0, set()
        while len(done) < len(run_of) and time.monotonic() - began < DEADLINE_S:
            polls += 1
            for lab, run_id in run_of.items():
                if lab in done:
                    continue
                [state] = runs.states(db, lab, run_id, snapshots=False) or [None]
                if state is None or (state.ended and (state.fingerprint or state.status != "finished")):
                    done[lab] = state
                elif state.ended and time.monotonic() - ended_without_model.setdefault(lab, time.monotonic()) \
                        > NO_MODEL_GRACE_S:
                    done[lab] = state  # its run finished, its model never came: reported as such
                elif state.status == "queued" and polls % 5 == 0:  # the page's expected start, every 5 s
                    [shown] = [s for s in manager.runs_of(lab, snapshots=False) if s.id == run_id] or [None]
                    if shown is not None and shown.expected_start_at is not None:
                        expected.setdefault(lab, []).append((time.time(), shown.expected_start_at))
                        # and the estimate before it is kept steady (seqviz.queue_estimate.steady), to compare
                        raw = manager._starts().get(run_id)
                        if raw is not None:
                            unsteady.setdefault(lab, []).append((time.time(), time.time() + raw))
            for state in done.values():
                if state is not None and state.id not in reported:  # a line per ended run, as it ends
                    reported.add(state.id)
                    print(f"{label}{time.monotonic() - began:7.1f} s: run {len(reported)} {state.status}, "
                          f"{state.followers} following, trained {state.train_seconds or 0:.0f} s, metric "
                          f"{state.metric}", file=sys.stderr, flush=True)
            try:
                sizes = cluster.client().run(lambda: psutil.Process().memory_info().rss)
                peak_workers_mb = max(peak_workers_mb, max(sizes.values()) / 2**20)
            except Exception:  # a worker restarting
                pass
            time.sleep(1.0)
        finished_at, cpu_ended = time.monotonic(), time.process_time()
        health.done.set()
        health.join(15)
        students = []
        for lab in class_labs:
            state = done.get(lab)
            arrived = [m.created_at for m in models.listed(db, lab)
                       if state is not None and m.fingerprint == state.fingerprint]
            students.append({"pressed_at": pressed[lab], "run": run_of.get(lab), "refused": lab not in run_of,
                             "status": None if state is None else state.status,
                             "model_at": arrived[0] if arrived else None,
                             "started_at": None if state is None else state.started_at,
                             "ended_at": None if state is None else state.ended_at,
                             "train_seconds": None if state is None else state.train_seconds,
                             "followers": None if state is None else state.followers,
                             "metric": None if state is None else state.metric,
                             "fingerprint": None if state is None else state.fingerprint,
                             "expected": expected.get(lab, [])})
        as_made = class_summary([{**s, "expected": unsteady.get(lab, [])} for s, lab in zip(students, class_labs,
                                                                                           strict=True)])
        figures = {
            "cluster": cluster_kind, "workers": cluster.slots(), "students": len(specs),
            "spread_s": spread, **class_summary(students),
            "estimate_as_made": {k: v for k, v in as_made.items() if k.startswith("estimate_")},
            "workers_peak_rss_mb": round(peak_workers_mb, 1),
            "health_p50_s": _quantile(health.latencies, 0.5), "health_p95_s": _quantile(health.latencies, 0.95),
            "health_failures": health.failures, "benchmark_seconds": round(finished_at - began, 1),
            "benchmark_cpu_s": round(cpu_ended - cpu_began, 1),  # this process: submitting, polling, health
            "load_average_at_end": os.getloadavg(), "cpus": os.cpu_count(), "refusals": refused[:3],
        }
    return figures


def _quantile(values: list[float], q: float) -> float | None:
    from benchmarks.classroom_figures import quantile

    return quantile(values, q)


def class_figure(kind: str, cluster: str, students: int, steps: int, workers: int | None, spread: float,
                 seed: int) -> dict:
    """The issue's class figure: ``same``, one student alone and then the class; ``mixed``, the class."""
    from seqviz.runs import preset

    base = preset(PRESET).spec
    spec_text = f"{PRESET}, {steps} steps (the preset has {base.steps})" + (
        ", everyone the same seed" if kind == "same" else ", a different seed each")
    started = time.strftime("%Y-%m-%d %H:%M")
    load = os.getloadavg()
    figures: dict = {"class": kind, "spec": spec_text, "measured": started, "load_average_at_start": load}
    if kind == "same":
        print(f"one student alone ({spec_text})", file=sys.stderr, flush=True)
        figures["alone"] = measure(cluster, student_specs("same", 1, steps, base), workers, 0.0, seed, "alone ")
    print(f"a class of {students} ({spec_text})", file=sys.stderr, flush=True)
    figures["class_of_students"] = measure(cluster, student_specs(kind, students, steps, base), workers, spread, seed,
                                           "class ")
    if kind == "same":
        figures["slowest_to_alone"] = ratio_to_alone(figures["class_of_students"], figures["alone"])
    figures["load_average_at_end"] = os.getloadavg()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class", dest="kind", choices=("same", "mixed"), default="same",
                        help="same: everyone the same preset and seed (one student alone measured first); "
                             "mixed: each student a different seed")
    parser.add_argument("--cluster", choices=("local", "external"), default="local")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--steps", type=int, default=400, help="steps of the quick translator (the preset: 400)")
    parser.add_argument("--workers", type=int, default=None, help="local: SEQVIZ_TRAIN_WORKERS; external: 2")
    parser.add_argument("--spread", type=float, default=5.0, help="seconds over which the class submits")
    parser.add_argument("--seed", type=int, default=0, help="of the moments students press Start")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures here (JSON)")
    parser.add_argument("--report", type=Path, nargs="+", default=None,
                        help="measure nothing: put these JSON files' figures in benchmarks/report.md and report.json")
    parser.add_argument("--typing", action="store_true",
                        help="measure typing to painted on /attention quiet and while runs train, instead")
    parser.add_argument("--training-runs", type=int, default=2, help="with --typing: runs (and workers) training")
    args = parser.parse_args(argv)
    if args.report:
        print(markdown([json.loads(path.read_text(encoding="utf-8")) for path in args.report]))
        write_report([json.loads(path.read_text(encoding="utf-8")) for path in args.report])
        return 0
    if args.typing:
        from benchmarks.classroom_typing import typing_while_training

        figures = typing_while_training(runs=args.training_runs)
    else:
        figures = class_figure(args.kind, args.cluster, args.students, args.steps, args.workers, args.spread,
                               args.seed)
    text = json.dumps(figures, indent=2)
    print(text, flush=True)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
