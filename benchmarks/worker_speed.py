"""A run on a training worker against the same run from the command line (issue 26: "within 1.15x").

The spec is the quick translator preset (dot attention, embedding 64, hidden 128, 400 steps, seed 0). It is
trained, alternately, ``rounds`` times each way, one after the other:

- ``command line``: ``python -m seqviz train --task ... --out FILE`` in a subprocess, at the worker's Unix nice
  (``seqviz.worker.WORKER_NICE``): on a machine that others load, a nice-0 command against a niced worker measures
  the nice, not the engine (on a quiet one, nice changes nothing). ``nice=N`` runs both at N instead (the benchmark
  renices the worker processes): on a machine loaded by others' nice-0 work, a nice-10 run barely moves;
- ``worker``: submitted to a :class:`seqviz.jobs.RunManager` on its own local Dask cluster (one worker, started
  before the first round: a cold cluster's start is the server's first run only), with the "watch it learn"
  snapshots the /train page asks for (its sentence and views), its live held-out measures and saved points, and
  the store polled every ``seqviz.ui.training.POLL_S`` (2 s) with snapshots, as an open /train page polls it.

Each run gives its seconds of training (the checkpoint's ``train_seconds``: the training loop's own clock, the
same for both) and its wall time (the subprocess's, or submission to the end in the store). The figures are the
medians, their ratio (worker / command line), and the 1-minute load average at each run's start and end: the
machine may be shared, so read them beside it. Timings are never asserted anywhere.

    .venv/bin/python -c "import json, benchmarks.worker_speed as w; print(json.dumps(w.figures(), indent=1))"
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRESET = "Quick: attention translator"
POLL_S = 2.0  # as seqviz.ui.training.POLL_S: an open /train page looks at its run this often
TIMEOUT_S = 900.0  # a run not ended after this long fails the benchmark


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def cli_args(spec, out: Path) -> list[str]:
    """The command line that trains ``spec`` (a translator's RunSpec) into ``out``."""
    return ["train", "--task", spec.task, "--family", spec.family, "--embedding", str(spec.embedding),
            "--hidden", str(spec.hidden), "--steps", str(spec.steps), "--lr", f"{spec.lr:g}",
            "--batch-size", str(spec.batch_size), "--seed", str(spec.seed), "--out", str(out)]


def train_cli(spec, folder: Path, env: dict, nice: int) -> dict:
    """``spec`` trained by ``python -m seqviz train`` in a subprocess at Unix ``nice``, with the environment ``env``:
    its seconds of training and wall time."""
    from seqviz import checkpoints

    out = folder / f"cli-{time.monotonic_ns()}.safetensors"
    load_before = _load()
    began = time.perf_counter()
    command = ["nice", "-n", str(nice), sys.executable, "-m", "seqviz", *cli_args(spec, out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the command line failed ({done.returncode}): {done.stderr[-2000:]}")
    wall = time.perf_counter() - began
    meta = checkpoints.read_meta(out)
    out.unlink()
    return {"how": f"command line (nice {nice})", "train_seconds": meta["train_seconds"],
            "wall_seconds": round(wall, 2), "exact_match_le30": meta["metrics"].get("exact_match_le30"),
            "load": [load_before, _load()]}


def train_worker(manager, db, spec, tokens) -> dict:
    """``spec`` trained through ``manager`` as the /train page starts it (its snapshot views on ``tokens``), the
    store polled as the page polls it; its seconds of training, wall time, live measures and snapshots."""
    from seqviz import story
    from seqviz.store import labs, runs
    from seqviz.worker import SnapshotView

    lab = labs.open_lab(db, None).id
    watch = SnapshotView.for_run(spec, tokens, story.models("watch"))
    load_before = _load()
    began = time.perf_counter()
    run_id = manager.submit(lab, spec, watch=watch)
    while True:
        state = manager.runs_of(lab)[0]  # snapshots too, as the page reads them
        labs.open_lab(db, None)  # (a page's look also refreshes its lab's last-seen time: a store write)
        if state.ended:
            break
        if time.perf_counter() - began > TIMEOUT_S:
            raise RuntimeError(f"the worker's run has not ended after {TIMEOUT_S:.0f} s")
        time.sleep(POLL_S)
    wall = time.perf_counter() - began
    if state.status != "finished":
        raise RuntimeError(f"the worker's run ended {state.status}: {state.error or state.stop_reason}")
    stored = runs.states(db, lab, run_id)[0]
    return {"how": "worker", "train_seconds": stored.train_seconds, "wall_seconds": round(wall, 2),
            "started_after_s": round(stored.waited_s or 0.0, 2),
            "exact_match_le30": (stored.metrics or {}).get("exact_match_le30"),
            "live_measures": len(stored.metric_history), "snapshots": len(stored.snapshots),
            "load": [load_before, _load()]}


def figures(rounds: int = 2, spec=None, sentence: str | None = None, nice: int | None = None) -> dict:
    """``rounds`` runs each way, alternating (command line first); the medians and their ratio. ``sentence``: the
    sidebar's (None: the app's default sentence), which the snapshots read; ``nice``: both ways' Unix nice (None:
    the worker's own, seqviz.worker.WORKER_NICE)."""
    import psutil

    from seqviz.cluster import Cluster
    from seqviz.jobs import RunManager
    from seqviz.runs import preset
    from seqviz.store import Database
    from seqviz.text import prepare
    from seqviz.ui import DEFAULT_SENTENCE
    from seqviz.worker import WORKER_NICE

    spec = spec if spec is not None else preset(PRESET).spec
    sentence = sentence if sentence is not None else DEFAULT_SENTENCE
    tokens = tuple(prepare(sentence).tokens)
    # Before the cluster starts: Dask's nannies, in this process, write their workers' environment into it
    # (distributed.nanny.pre-spawn-environ), which a command started after them would inherit.
    env = dict(os.environ)
    cli_nice = WORKER_NICE if nice is None else nice
    cli: list[dict] = []
    worker: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="seqviz-worker-speed-") as tmp:
        folder = Path(tmp)
        db = Database(f"sqlite:///{folder / 'seqviz.db'}")
        cluster = Cluster(workers=1)
        manager = RunManager(db, cluster=cluster, train_identical_once=False, orphan_timeout_s=3600,
                             max_seconds=3600)
        try:
            started = time.perf_counter()
            cluster.client()  # the workers up (and torch loaded in them) before the first round
            cluster_s = time.perf_counter() - started
            if nice is not None:  # (root may lower a nice; the worker set its own as it started, once)
                for pid in cluster.client().run(os.getpid).values():
                    psutil.Process(pid).nice(nice)
            for _ in range(rounds):
                cli.append(train_cli(spec, folder, env, cli_nice))
                worker.append(train_worker(manager, db, spec, tokens))
        finally:
            manager.close()
            cluster.close()
            db.dispose()

    def median(runs: list[dict], key: str) -> float:
        return round(statistics.median(run[key] for run in runs), 2)

    summary = {key: {"command line": median(cli, key), "worker": median(worker, key)}
               for key in ("train_seconds", "wall_seconds")}
    return {
        "spec": {"family": spec.family, "embedding": spec.embedding, "hidden": spec.hidden, "steps": spec.steps,
                 "batch_size": spec.batch_size, "seed": spec.seed},
        "sentence": sentence, "rounds": rounds, "nice": cli_nice, "cluster_start_s": round(cluster_s, 2),
        "cli": cli, "worker": worker, "median": summary,
        "ratio_train": round(summary["train_seconds"]["worker"] / summary["train_seconds"]["command line"], 3),
        "ratio_wall": round(summary["wall_seconds"]["worker"] / summary["wall_seconds"]["command line"], 3),
        "goal": "a worker's run within 1.15x of the command line's (issue 26)",
    }


def markdown(figures: dict) -> str:
    """The report's section: the medians each way, their ratio against the goal, and the load around the runs."""
    from benchmarks.report import goal_line, table

    spec = figures["spec"]
    rows = [{"way": way, "training s (median)": figures["median"]["train_seconds"][way],
             "submission to end s (median)": figures["median"]["wall_seconds"][way]}
            for way in ("command line", "worker")]
    loads = [load for run in figures["cli"] + figures["worker"] for load in run["load"]]
    goal = {"goal": "a run on a training worker within 1.15x of the same run from the command line",
            "met": figures["ratio_train"] <= 1.15,
            "measured": f"{figures['ratio_train']:.2f}x its training seconds, {figures['ratio_wall']:.2f}x from "
                        "submission to the end"}
    return "\n\n".join([
        "## A training worker against the command line",
        f"The quick translator ({spec['family']}, embedding {spec['embedding']}, hidden {spec['hidden']}, "
        f"{spec['steps']} steps, seed {spec['seed']}), {figures['rounds']} run{'s' if figures['rounds'] != 1 else ''} "
        f"each way, alternating, both at nice "
        f"{figures['nice']}; the worker's with the snapshots, live measures and saved points of /train, and the "
        f"store polled every {POLL_S:g} s as an open /train page does (benchmarks/worker_speed.py). The cluster "
        f"started in {figures['cluster_start_s']:.1f} s, before the first run."
        + f" Load average {min(loads):.1f} to {max(loads):.1f} around the runs.",
        table(rows), goal_line(goal)])


if __name__ == "__main__":
    import json

    print(json.dumps(figures(int(sys.argv[1]) if len(sys.argv) > 1 else 2), indent=1))
