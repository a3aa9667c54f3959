"""The run engine on a real Dask cluster (two worker processes, one thread and one "train" resource each) and a real
lab store: runs are records in the store, trained by Dask workers that write their own progress, saved points and
models; the web side (RunManager) admits, queues, stops and recovers them.

- What a run does: it trains in a worker process (never here), its losses, held-out measures and "watch it learn"
  snapshots land in its record, its model in the lab's models; what it does before its first step; bag of words.
- Failures: a failing run says why and the next one starts; a damaged saved point begins again.
- Same weights: the same spec and seed give the same weights alone and under load; the web side's memory does not
  grow with runs.

The queue, the time limit, admission and labs that stop looking: tests/unit/test_jobs_queue.py. Durability (a killed
worker, a restarted server): tests/unit/test_jobs_durability.py. Identical runs trained once:
tests/unit/test_jobs_identical.py, which takes the helpers and fixtures from here (tests/unit/jobs_support.py's).

SQLite in the test's folder for most tests, and PostgreSQL (tests/databases.py) too for the end-to-end run.
Tiny models; every wait is bounded and nothing asserts on timings.
"""

from __future__ import annotations

import gc
import os
import threading
import time

import jobs_support
import psutil
import pytest
import torch
from jobs_support import (
    LONG,  # noqa: F401  (tests/unit/test_jobs_identical.py takes it from here)
    WAIT,
    ended,
    held_keys,
    new_lab,
    reached,
    row,
    same_weights,
    state,
    tiny,
    uninterrupted,
    weights,
    worker_pids,
)
from polling import wait_until
from sqlalchemy import select, update

from seqviz import limits, story
from seqviz.checkpoints import load_bytes
from seqviz.progress import PHASES
from seqviz.runs import RunSpec
from seqviz.store import labs, models, runs
from seqviz.store.schema import Run, RunPoint, Snapshot
from seqviz.watch import Snapshot as WatchSnapshot
from seqviz.watch import watched_view
from seqviz.worker import SnapshotView

cluster, managers, sqlite_db = jobs_support.cluster, jobs_support.managers, jobs_support.sqlite_db  # its fixtures
TOKENS = "win a free prize now".split()


# ---- what a run does -------------------------------------------------------------------------------------------


def test_a_run_trains_in_a_worker_and_lands_in_the_store_with_history_snapshots_and_its_model(db, managers, cluster):
    manager = managers(db, snapshot_every_s=1e-6)  # a snapshot after every step
    lab = new_lab(db)
    spec = tiny(steps=25)
    watch = SnapshotView.for_run(spec, TOKENS, story.models("watch"))
    assert watch is not None
    run_id = manager.submit(lab, spec, watch)
    queued = state(db, lab, run_id)
    assert queued.status in ("queued", "running") and queued.name == spec.label and queued.spec == spec
    done = ended(db, lab, run_id)
    assert done.status == "finished" and done.error is None and done.stop_reason is None, done
    # The web process never trains: the run says which process did, one of the cluster's workers.
    assert done.worker_pid in worker_pids(cluster) and done.worker_pid != os.getpid()
    assert done.worker and done.attempts == 1 and done.note is None
    assert done.step == done.steps == 25 and done.eta_s == 0.0 and done.phase is None
    assert [step for step, _ in done.losses] == list(range(1, 26))
    assert all(loss > 0 for _, loss in done.losses)
    assert done.metric_history[0][0] == 1 and done.metric_history[-1][0] == 25
    assert [step for step, _ in done.metric_history] == sorted({step for step, _ in done.metric_history})
    assert done.metric == done.metrics["test_accuracy"] and done.metric_name
    assert done.submitted_at <= done.started_at <= done.ended_at and done.train_seconds is not None
    view = watched_view(story.models("watch"), "lstm", "emails", TOKENS).name
    assert 0 < len(done.snapshots) <= limits.TRAIN_MAX_SNAPSHOTS and done.snapshots[-1][0] == 25
    assert all(isinstance(shot, WatchSnapshot) and shot.view == view for _, shot in done.snapshots)
    # Its model is the lab's, with its fingerprint, and says what it is.
    [kept] = models.listed(db, lab)
    assert kept.fingerprint == done.fingerprint and kept.origin == "trained here"
    assert (kept.family, kept.task) == ("lstm", "emails")
    checkpoint = load_bytes(models.data(db, lab, kept.fingerprint))
    assert checkpoint.meta["steps"] == 25 and checkpoint.meta["seed"] == 0
    assert checkpoint.meta["spec"]["hidden"] == 4 and checkpoint.meta["train"]["steps"] == 25
    assert checkpoint.metrics["test_accuracy"] == done.metrics["test_accuracy"]
    assert [s.id for s in manager.runs_of(lab)] == [run_id]
    assert runs.counts(db) == {"queued": 0, "running": 0}
    with pytest.raises(AttributeError):
        done.status = "failed"  # states are values


def test_a_run_says_what_it_does_before_its_first_step_and_a_forgotten_lab_leaves_nothing(sqlite_db, managers):
    """A transformer with large batches: its first step takes a moment, its phases show meanwhile. Its lab is then
    forgotten mid-run: the run ends unsaved, and nothing of it remains."""
    db = sqlite_db
    manager = managers(db, snapshot_every_s=1e-6)
    lab = new_lab(db)
    spec = RunSpec(task="emails", family="transformer", embedding=64, hidden=256, heads=4, layers=2, steps=2000,
                   batch_size=256)
    run_id = manager.submit(lab, spec)
    phases: set = set()

    def first_step() -> bool:
        found = state(db, lab, run_id)
        if found.status == "running" and found.step == 0:
            phases.add(found.phase)
        return found.step > 0

    assert wait_until(first_step, WAIT, 0.01)
    assert phases and phases <= set(PHASES.values()), phases  # "starting on a training worker", ..., "training"
    pid = row(db, run_id)["worker_pid"]
    labs.forget(db, lab)
    assert runs.states(db, lab) == [] and row(db, run_id) is None
    assert wait_until(lambda: not held_keys(manager.cluster), WAIT), "the run did not end"
    assert row(db, run_id) is None and models.listed(db, lab) == []
    with db.transaction(reading=True) as session:
        assert session.scalars(select(Snapshot.id).where(Snapshot.run_id == run_id)).all() == []
    assert pid in worker_pids(manager.cluster)  # the worker lives on for the next run


def test_bag_of_words_counts_in_one_step(sqlite_db, managers):
    db = sqlite_db
    lab = new_lab(db)
    run_id = managers(db).submit(lab, RunSpec(task="emails", family="bow"))
    done = ended(db, lab, run_id)
    assert done.status == "finished" and done.step == done.steps == 1 and done.metric_history, done
    assert done.losses == ()  # counting has no loss
    assert [m.family for m in models.listed(db, lab)] == ["bow"]


# ---- failures ------------------------------------------------------------------------------------------------


class BrokenWatch:
    """A "watch it learn" view whose fields the worker cannot read: the run fails on its worker, as a bug would."""

    def to_dict(self) -> dict:
        return {"views": "none of them"}


def test_a_failing_run_reports_its_error_and_the_next_run_starts(sqlite_db, managers):
    db = sqlite_db
    manager = managers(db)
    lab = new_lab(db)
    failing = manager.submit(lab, tiny(steps=5), BrokenWatch())
    done = ended(db, lab, failing)
    assert done.status == "failed" and "KeyError" in done.error and done.fingerprint is None, done
    assert models.listed(db, lab) == []
    after = manager.submit(lab, tiny(steps=3))  # the lab's place is free again
    assert ended(db, lab, after).status == "finished"


def test_a_broken_snapshot_view_is_switched_off_not_fatal(sqlite_db, managers):
    db = sqlite_db
    lab = new_lab(db)
    broken = SnapshotView("emails", "lstm", tuple(TOKENS), ("no-such-view",))
    run_id = managers(db, snapshot_every_s=1e-6).submit(lab, tiny(steps=5), broken)
    done = ended(db, lab, run_id)
    assert done.status == "finished" and "snapshot failed" in done.error and done.snapshots == (), done


def test_a_damaged_saved_point_begins_again_from_step_0(sqlite_db, managers):
    """A run whose worker was lost, and whose saved point is damaged: the next worker begins it again, its record
    starts again (no step twice on its curve) and its weights are those of a run that never stopped."""
    db = sqlite_db
    lab = new_lab(db)
    spec = tiny(steps=30, seed=5)
    run_id = runs.create(db, lab, spec)
    with db.transaction() as session:
        session.execute(update(Run).where(Run.id == run_id).values(
            status="running", attempts=1, step=12, saved_step=10, losses=[[s, 1.0] for s in range(1, 13)],
            metric_history=[[1, 0.5]], started_at=time.time()))
        session.add(RunPoint(run_id=run_id, state=b"seqviz-trainst1\n damaged"))
        session.add(Snapshot(run_id=run_id, step=5, data=b"old"))
    managers(db)  # a server starts: the store's run is handed to the cluster
    done = ended(db, lab, run_id)
    assert done.status == "finished" and done.error is None and done.attempts == 2, done
    assert "could not be read" in done.note and "began again from step 0" in done.note
    assert [step for step, _ in done.losses] == list(range(1, 31))
    assert [step for step, _ in done.metric_history] == sorted({step for step, _ in done.metric_history})
    assert same_weights(weights(db, lab, done.fingerprint), uninterrupted(spec))


# ---- same weights, alone and under load ------------------------------------------------------------------------


def test_same_spec_and_seed_give_the_same_weights_alone_and_under_load(sqlite_db, managers):
    """A small transformer email classifier, seed 0, trained alone, then while another run trains on the other
    worker and this (web) process does what pages do: count a spec's parameters and build seeded untrained models
    (fork_rng + manual_seed on the process-wide generator)."""
    db = sqlite_db
    spec = RunSpec(task="emails", family="transformer", embedding=16, hidden=32, heads=2, layers=1, steps=40,
                   batch_size=16, seed=0)
    manager = managers(db)  # (every submission trains: the second does not take the first's model)
    alone_lab, loaded_lab, neighbour_lab = new_lab(db), new_lab(db), new_lab(db)
    alone = ended(db, alone_lab, manager.submit(alone_lab, spec))
    assert alone.status == "finished"
    stop = threading.Event()

    def browse() -> None:
        other = RunSpec(task="emails", family="lstm", embedding=8, hidden=8, steps=10, seed=3)
        while not stop.is_set():
            other.num_parameters()
            other.build()
            torch.randn(50)

    pages = threading.Thread(target=browse, daemon=True)
    pages.start()
    try:
        neighbour = manager.submit(neighbour_lab, RunSpec(task="emails", family="gru", embedding=8, hidden=8,
                                                          steps=2000, seed=1))
        reached(db, neighbour_lab, neighbour)
        loaded = ended(db, loaded_lab, manager.submit(loaded_lab, spec))
        assert loaded.status == "finished"
        manager.stop(neighbour_lab, neighbour)
        ended(db, neighbour_lab, neighbour)
    finally:
        stop.set()
        pages.join(10)
    assert same_weights(weights(db, alone_lab, alone.fingerprint), weights(db, loaded_lab, loaded.fingerprint))


def test_the_web_side_memory_does_not_grow_with_runs(sqlite_db, managers):
    db = sqlite_db
    manager = managers(db, snapshot_every_s=1e-6)
    process = psutil.Process()
    watch = SnapshotView.for_run(tiny(), TOKENS, story.models("watch"))

    def one_run(n: int) -> None:
        lab = new_lab(db)
        run_id = manager.submit(lab, tiny(steps=5, seed=n), watch)
        assert ended(db, lab, run_id).status == "finished"
        for _ in range(3):
            manager.runs_of(lab)  # what a page polls
        labs.forget(db, lab)

    for n in range(2):  # warm up: imports, the connection, the first messages
        one_run(n)
    gc.collect()
    before = process.memory_info().rss
    for n in range(2, 12):
        one_run(n)
    gc.collect()
    grown_mb = (process.memory_info().rss - before) / 2**20
    assert grown_mb < 30, f"the web side grew {grown_mb:.0f} MB over 10 runs"
