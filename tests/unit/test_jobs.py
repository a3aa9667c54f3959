"""The run engine on a real Dask cluster (two worker processes, one thread and one "train" resource each) and a real
lab store: runs are records in the store, trained by Dask workers that write their own progress, saved points and
models; the web side (RunManager) admits, queues, stops and recovers them.

- What a run does: it trains in a worker process (never here), its losses, held-out measures and "watch it learn"
  snapshots land in its record, its model in the lab's models; what it does before its first step; bag of words.
- The queue: runs wait in order with queue places and expected starts; a cancelled run never starts; stop and the
  time limit keep what was learned; the per-lab cap and the full queue are refused from the store's counts, so two
  web servers on one store share them; a lab never sees another's runs.
- Labs: a lab nobody looks at has its run stopped (and kept); a lab forgotten mid-run leaves nothing behind.
- Failures: a failing run says why and the next one starts; a damaged saved point begins again.
- Durability (the issue's key cases): a killed worker's run goes on from its saved point on another worker; a web
  server restarted with its embedded cluster finds its run and goes on; a restart with 30 queued runs hands them all
  to the new cluster. The weights end bit for bit as an uninterrupted run's.

SQLite in the test's folder for most tests, and PostgreSQL (tests/databases.py) too for the end-to-end run, the
shared admission and a killed worker. Tiny models; every wait is bounded and nothing asserts on timings.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import signal
import threading
import time

import psutil
import pytest
import torch
from polling import wait_until
from sqlalchemy import select, update
from store_fixtures import in_threads, meeting_at_first_write

from seqviz import driver, jobs, limits, story
from seqviz.checkpoints import load_bytes
from seqviz.cluster import SCHEDULER_ENV, WORKERS_ENV, Cluster, ClusterUnavailable
from seqviz.jobs import RunManager, RunRefused, _scheduler_keys
from seqviz.progress import PHASES
from seqviz.runs import RunSpec
from seqviz.store import Database, labs, models, runs
from seqviz.store.schema import Run, RunPoint, Snapshot
from seqviz.watch import Snapshot as WatchSnapshot
from seqviz.watch import watched_view
from seqviz.worker import SnapshotView, train_on_worker

WAIT = 120.0  # seconds a test waits for a run before it fails (a shared, busy machine: training is niced)
TOKENS = "win a free prize now".split()
# Trains until it is stopped (about 20 s of steps on this machine's cores).
LONG = RunSpec(task="emails", family="lstm", embedding=16, hidden=16, steps=5000, batch_size=16)
# Saved every SAVE_S of training in the tests that kill its worker (a quiet, fast core trains it in a few seconds:
# the default TRAIN_SAVE_EVERY_S of 5 s could come after its end).
SAVE_S = 0.5
RESUMED = RunSpec(task="emails", family="lstm", embedding=16, hidden=16, steps=2200, batch_size=16, seed=3)


def tiny(steps: int = 20, seed: int = 0, family: str = "lstm") -> RunSpec:
    return RunSpec(task="emails", family=family, embedding=4, hidden=4, steps=steps, batch_size=8, seed=seed)


# ---- reading the store ----------------------------------------------------------------------------------------


def new_lab(db, now: float | None = None) -> str:
    return labs.open_lab(db, None, now=now).id


def state(db, lab: str, run_id: str):
    found = runs.states(db, lab, run_id)
    return found[0] if found else None


def row(db, run_id: str) -> dict | None:
    """The run's row as the store has it (what a page does not see: its saved point, its stop flag)."""
    with db.transaction(reading=True) as session:
        run = session.get(Run, run_id)
        if run is None:
            return None
        return {name: getattr(run, name) for name in ("status", "step", "saved_step", "worker_pid", "attempts",
                                                      "stop_requested", "started_at")}


def ended(db, lab: str, run_id: str, timeout: float = WAIT):
    found = wait_until(lambda: (lambda s: s if s is not None and s.ended else None)(state(db, lab, run_id)), timeout)
    assert found is not None, f"the run did not end within {timeout:.0f} s: {state(db, lab, run_id)}"
    return found


def reached(db, lab: str, run_id: str, step: int = 1, timeout: float = WAIT):
    """Wait until the run trains at ``step`` or later; returns its state."""
    found = wait_until(lambda: (lambda s: s if s.status == "running" and s.step >= step else None)(
        state(db, lab, run_id)), timeout, 0.05)
    assert found is not None, f"the run did not reach step {step}: {state(db, lab, run_id)}"
    return found


def past_a_saved_point(db, run_id: str, timeout: float = WAIT) -> dict:
    found = wait_until(lambda: (lambda r: r if r["status"] == "running" and r["saved_step"] > 0 else None)(
        row(db, run_id)), timeout, 0.05)
    assert found is not None, f"the run saved no point: {row(db, run_id)}"
    return found


def weights(db, lab: str, fingerprint: str) -> dict:
    return load_bytes(models.data(db, lab, fingerprint)).model.state_dict()


def same_weights(one: dict, two: dict) -> bool:
    return one.keys() == two.keys() and all(torch.equal(one[key], two[key]) for key in one)


@functools.cache
def uninterrupted(spec: RunSpec) -> dict:
    """The spec trained here, in one piece, through the one driver, with torch set as on a worker (one thread,
    deterministic algorithms: seqviz.runtime.configure_torch) while it trains."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        return driver.run(driver.from_spec(spec, "trained in the app")).model.state_dict()
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def stop_everything(db) -> None:
    """Every queued run cancelled and every running one asked to stop (a test's leftovers)."""
    now = time.time()
    with db.transaction() as session:
        session.execute(update(Run).where(Run.status == "queued").values(status="cancelled", stop_requested=True,
                                                                         ended_at=now, updated_at=now))
        session.execute(update(Run).where(Run.status == "running").values(stop_requested=True))


# ---- the cluster and the managers ------------------------------------------------------------------------------


def worker_pids(cluster) -> set[int]:
    return set(cluster.client().run(os.getpid).values())


def held_keys(cluster) -> list[str]:
    return cluster.client().run_on_scheduler(_scheduler_keys)


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(workers=2)
    cluster.client()
    yield cluster
    cluster.close()


@pytest.fixture
def managers(cluster):
    """make(db, **options): a RunManager on the module's cluster (a web server); each is closed afterwards, and the
    runs it left stopped, so the next test finds both workers free."""
    assert wait_until(lambda: cluster.slots() == 2, 90), "the cluster has not two workers"  # (after a killed one)
    made: list[RunManager] = []

    def make(db, **options) -> RunManager:
        # Identical runs trained once is tests/unit/test_jobs_identical.py's; here every submission is a run.
        options.setdefault("train_identical_once", False)
        made.append(RunManager(db, cluster=cluster, **options))
        return made[-1]

    yield make
    for manager in made:
        manager.close()
    for db in {id(manager.db): manager.db for manager in made}.values():
        stop_everything(db)
    assert wait_until(lambda: not held_keys(cluster), WAIT), "runs were still on the cluster"


@pytest.fixture
def sqlite_db(tmp_path):
    database = Database(f"sqlite:///{tmp_path / 'store' / 'seqviz.db'}")
    yield database
    database.dispose()


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


# ---- the queue, stop and the time limit ---------------------------------------------------------------------


def test_a_worker_reuses_freed_memory_as_a_plain_process_does(cluster):
    """Dask's nanny starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which made every tensor over 128 KiB a fresh
    mmap, faulted in page by page (issue 26: each step took 1.75x the CPU of the command line's); a worker of the
    app's cluster reuses freed memory, as a plain process does."""

    def faults_of_fresh_tensors() -> int:  # (in a task's thread, as a run's steps are)
        import resource

        import torch

        for _ in range(10):
            torch.ones(2**20)  # 4 MiB, allocated and freed
        before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        for _ in range(100):
            torch.ones(2**20)
        return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before

    faults = cluster.client().submit(faults_of_fresh_tensors, pure=False).result(WAIT)
    assert faults < 100 * 1024 // 8  # each fresh mmap would fault its 1024 pages in (51 k faults here, 0 reused)


def test_runs_wait_with_places_and_expected_starts_and_a_cancelled_one_never_starts(sqlite_db, managers, cluster):
    """Both workers busy: runs wait in the store's order, each with its place and expected start; a cancelled one
    never starts, even on a worker that gets its task. (Which waiting run a freed worker takes is Dask's choice
    across workers: the order on one worker is the restart test's.)"""
    db = sqlite_db
    manager = managers(db, max_active_per_lab=2)
    a, b, c, e = (new_lab(db) for _ in range(4))
    first, second = manager.submit(a, LONG), manager.submit(b, LONG)
    reached(db, a, first, 10)
    reached(db, b, second, 10)
    third, fourth, fifth = manager.submit(c, tiny(steps=5)), manager.submit(c, tiny(steps=5)), \
        manager.submit(e, tiny(steps=5))
    looked = time.time()
    mine = {s.id: s for s in manager.runs_of(c)}  # one look: both of lab c's waiting runs
    waiting = [mine[third], mine[fourth], manager.runs_of(e)[0]]
    assert [(s.status, s.queue_position) for s in waiting] == [("queued", 1), ("queued", 2), ("queued", 3)]
    assert all(s.started_at is None and s.waited_s is None and s.phase is None for s in waiting)
    assert looked < waiting[0].expected_start_at <= waiting[1].expected_start_at  # behind two runs training
    assert looked < waiting[2].expected_start_at
    load = manager.load()
    assert (load["running"], load["queued"], load["max_running"], load["unavailable"]) == (2, 3, 2, None)
    assert load["wait_s"] > 0  # a run submitted now waits for the runs ahead of it

    assert manager.stop(c, fourth) == "cancelled"  # a queued run: cancelled at once, for every tab
    assert state(db, c, fourth).status == "cancelled" and state(db, c, fourth).ended
    assert [state(db, c, third).queue_position, state(db, e, fifth).queue_position] == [1, 2]
    assert manager.load()["queued"] == 2

    assert manager.stop(a, first) == "running"  # a training run stops after its step, and frees its worker
    stopped = ended(db, a, first)
    assert stopped.status == "stopped"
    for lab, run_id in ((c, third), (e, fifth)):
        done = ended(db, lab, run_id)
        assert done.status == "finished" and done.started_at >= stopped.ended_at, done  # it waited for a worker
        assert done.waited_s == done.started_at - done.submitted_at > 0
    manager.stop(b, second)
    ended(db, b, second)

    cancelled = state(db, c, fourth)
    assert cancelled.status == "cancelled" and cancelled.step == 0 and cancelled.started_at is None
    assert cancelled.attempts == 0 and cancelled.worker_pid is None and len(models.listed(db, c)) == 1
    # A worker that gets it anyway (Dask may still hold the task) finds it cancelled.
    again = cluster.client().submit(train_on_worker, fourth, db.url, 60.0, resources={"train": 1}, pure=False)
    assert again.result(WAIT) == "nothing to do"
    assert state(db, c, fourth).status == "cancelled" and row(db, fourth)["attempts"] == 0


def test_stop_keeps_what_was_learned(sqlite_db, managers):
    db = sqlite_db
    manager = managers(db)
    lab = new_lab(db)
    run_id = manager.submit(lab, LONG)
    reached(db, lab, run_id, 20)
    assert manager.stop(lab, run_id) == "running" and row(db, run_id)["stop_requested"]
    done = ended(db, lab, run_id)
    assert done.status == "stopped" and done.stop_reason == "asked"
    assert 20 <= done.step < LONG.steps and done.metrics is not None and done.fingerprint
    checkpoint = load_bytes(models.data(db, lab, done.fingerprint))
    assert checkpoint.meta["steps"] == done.step
    initial, _, _ = LONG.build()
    learned = checkpoint.model.state_dict()
    assert any(not torch.equal(learned[k], v) for k, v in initial.state_dict().items())
    assert manager.stop(lab, run_id) == "stopped"  # stopping an ended run changes nothing


def test_a_run_over_its_time_limit_is_stopped_and_kept(sqlite_db, managers):
    db = sqlite_db
    lab = new_lab(db)
    run_id = managers(db, max_seconds=2.0).submit(lab, LONG)
    done = ended(db, lab, run_id)
    assert done.status == "stopped" and done.stop_reason == "time limit" and 0 < done.step < LONG.steps, done
    assert done.trained_s >= 2.0 and [m.fingerprint for m in models.listed(db, lab)] == [done.fingerprint]


# ---- admission, shared by every web server on the store ----------------------------------------------------


def test_the_lab_cap_and_the_full_queue_are_refused_and_two_servers_share_them(db, managers):
    with pytest.raises(ValueError, match="max_active_per_lab"):
        managers(db, max_active_per_lab=limits.TRAIN_MAX_ACTIVE_PER_OWNER_MOST + 1)
    assert limits.TRAIN_MAX_QUEUED >= 60 and limits.TRAIN_MAX_ACTIVE_PER_OWNER == 1
    one, two = managers(db, max_queued=1), managers(db, max_queued=1)  # two web servers, one store
    a, b, c, d, e = (new_lab(db) for _ in range(5))
    first = one.submit(a, LONG)
    with pytest.raises(RunRefused, match="TRAIN_MAX_ACTIVE_PER_OWNER"):
        two.submit(a, tiny(steps=3))  # the other server counts the lab's run
    reached(db, a, first)  # (until a worker takes it, it fills the queue of one)
    second = two.submit(b, LONG)
    reached(db, b, second)
    waiting = one.submit(c, tiny(steps=3))  # both workers busy: it waits, the queue is full
    for manager in (one, two):
        with pytest.raises(RunRefused, match="busy"):
            manager.submit(d, tiny(steps=3))
        assert manager.runs_of(c)[0].queue_position == 1 and manager.load()["queued"] == 1
    assert runs.counts(db) == {"queued": 1, "running": 2} and runs.counts(db, d) == {"queued": 0, "running": 0}
    assert two.stop(a, first) == "running"  # any server stops any run of the lab
    assert ended(db, a, first).status == "stopped"
    assert ended(db, c, waiting).status == "finished"
    later = two.submit(d, tiny(steps=3))  # room again
    assert ended(db, d, later).status == "finished"
    # Two tabs of one lab on two servers at the same moment: one run is taken, the other refused.
    with meeting_at_first_write():
        results = in_threads(lambda: one.submit(e, tiny(steps=3)), lambda: two.submit(e, tiny(steps=3)))
    assert sorted(type(result).__name__ for result in results) == ["RunRefused", "str"], results
    assert "TRAIN_MAX_ACTIVE_PER_OWNER" in str(next(r for r in results if isinstance(r, RunRefused)))
    assert len(runs.states(db, e)) == 1
    assert ended(db, e, next(r for r in results if isinstance(r, str))).status == "finished"
    two.stop(b, second)
    ended(db, b, second)


def test_a_lab_never_sees_another_labs_runs(sqlite_db, managers):
    db = sqlite_db
    manager = managers(db)
    alice, bob = new_lab(db), new_lab(db)
    mine, theirs = manager.submit(alice, tiny(steps=3)), manager.submit(bob, tiny(steps=3))
    ended(db, alice, mine)
    ended(db, bob, theirs)
    assert [s.id for s in manager.runs_of(alice)] == [mine] and [s.id for s in manager.runs_of(bob)] == [theirs]
    assert runs.states(db, alice, theirs) == []
    assert manager.stop(alice, theirs) is None  # not hers: not found
    assert [m.fingerprint for m in models.listed(db, alice)] == [state(db, alice, mine).fingerprint]
    assert [m.fingerprint for m in models.listed(db, bob)] == [state(db, bob, theirs).fingerprint]


# ---- labs that stop looking ----------------------------------------------------------------------------------


def test_a_lab_nobody_looks_at_has_its_run_stopped_and_kept_while_a_looking_lab_trains_on(sqlite_db, managers):
    """Lab ``gone``'s page closes once its run trains (labs.seen is called no more): the run stops after
    orphan_timeout_s, plus the LAB_SEEN_EVERY_S that a look may be newer than the lab's last-seen time, keeping its
    model. Lab ``here``, whose page looks all along, trains on past that."""
    db = sqlite_db
    manager = managers(db, orphan_timeout_s=2.0)
    here, gone = new_lab(db), new_lab(db)
    pages = {here: threading.Event(), gone: threading.Event()}  # set: the lab's page is closed

    def page(lab: str) -> None:
        while not pages[lab].wait(0.2):
            labs.seen(db, lab)

    watchers = [threading.Thread(target=page, args=(lab,), daemon=True) for lab in pages]
    for watcher in watchers:
        watcher.start()
    try:
        kept, lost = manager.submit(here, LONG), manager.submit(gone, LONG)
        reached(db, gone, lost)
        pages[gone].set()  # the visitor closes the tab
        done = ended(db, gone, lost)
        assert done.status == "stopped" and done.stop_reason == "nobody looking", done
        assert 0 < done.step < LONG.steps and [m.fingerprint for m in models.listed(db, gone)] == [done.fingerprint]
        time.sleep(1.0)  # as long again as the gone lab's run went on after its stop was due
        assert state(db, here, kept).status == "running"
    finally:
        for closed in pages.values():
            closed.set()
        for watcher in watchers:
            watcher.join(5)
    assert manager.stop(here, kept) == "running"
    assert ended(db, here, kept).stop_reason == "asked"


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


# ---- durability: a killed worker, a restarted server -----------------------------------------------------------


def test_a_killed_workers_run_goes_on_from_its_saved_point_with_an_uninterrupted_runs_weights(db, managers,
                                                                                               cluster):
    """SIGKILL the worker of a run that has saved a point: Dask starts the task again on another worker, which goes
    on from that point; the weights end bit for bit as those of the same spec trained here in one piece."""
    manager = managers(db, save_every_s=SAVE_S)
    lab = new_lab(db)
    run_id = manager.submit(lab, RESUMED)
    saved = past_a_saved_point(db, run_id)
    pid = saved["worker_pid"]
    assert pid in worker_pids(cluster) and pid != os.getpid()
    os.kill(pid, signal.SIGKILL)
    done = ended(db, lab, run_id)
    assert done.status == "finished" and done.error is None, done
    assert done.attempts == 2 and done.worker_pid != pid and done.worker_pid != os.getpid()
    assert "went on from its last saved point" in done.note, done.note
    assert done.step == done.steps == RESUMED.steps
    assert [step for step, _ in done.losses] == list(range(1, RESUMED.steps + 1))  # whole, no step twice
    assert [step for step, _ in done.metric_history] == sorted({step for step, _ in done.metric_history})
    assert same_weights(weights(db, lab, done.fingerprint), uninterrupted(RESUMED))
    # Dask's nanny starts a new worker in place of the killed one.
    assert wait_until(lambda: cluster.slots() == 2 and pid not in worker_pids(cluster), 90)


@pytest.fixture
def own_cluster_env(monkeypatch):
    """The app's way: no scheduler configured, so a RunManager starts a local cluster of its own (one worker)."""
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    monkeypatch.setenv(WORKERS_ENV, "1")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.timeout(300)
def test_a_restarted_web_server_with_its_embedded_cluster_finds_its_runs_and_goes_on(sqlite_db, own_cluster_env):
    """A server with its own one-worker cluster trains a run, three more waiting behind it; after a saved point the
    server stops, and its worker with it. A new server on the same store hands them all to its new cluster: the
    run goes on from its saved point to an uninterrupted run's weights, and the three then train in their order."""
    db = sqlite_db
    lab, behind = new_lab(db), [new_lab(db) for _ in range(3)]
    first = RunManager(db, save_every_s=SAVE_S)  # its own cluster: the workers live and die with this server
    try:
        run_id = first.submit(lab, RESUMED)
        waiting = [first.submit(other, tiny(steps=5, seed=n)) for n, other in enumerate(behind)]
        saved = past_a_saved_point(db, run_id, timeout=120)  # (the cluster starts first)
        pid = saved["worker_pid"]
        assert pid != os.getpid() and pid in worker_pids(first.cluster)
        assert [state(db, other, w).queue_position for other, w in zip(behind, waiting, strict=True)] == [1, 2, 3]
        assert first.load()["max_running"] == 1
        # The server's process stops, its worker with it: frozen first, so that it cannot train to the end while
        # the cluster closes (a graceful close waits seconds for a busy worker before it kills it).
        os.kill(pid, signal.SIGSTOP)
    finally:
        first.close()  # the server stops, and its cluster with it
    assert wait_until(lambda: gone(pid), 30), "the first server's worker lives on"
    assert row(db, run_id)["status"] == "running"  # nobody ended it: the store still says it trains
    assert runs.counts(db) == {"queued": 3, "running": 1}
    second = RunManager(db, save_every_s=SAVE_S)  # the server starts again: a new cluster, the same store
    try:
        done = ended(db, lab, run_id, timeout=120)
        assert done.status == "finished" and done.error is None, done
        assert done.attempts == 2 and "went on from its last saved point" in done.note, done
        assert done.worker_pid != pid and done.worker_pid in worker_pids(second.cluster)
        assert [step for step, _ in done.losses] == list(range(1, RESUMED.steps + 1))
        assert same_weights(weights(db, lab, done.fingerprint), uninterrupted(RESUMED))
        after = [ended(db, other, w) for other, w in zip(behind, waiting, strict=True)]
        assert all(s.status == "finished" and s.attempts == 1 for s in after), after
        starts = [s.started_at for s in after]
        assert done.ended_at <= starts[0] < starts[1] < starts[2], starts  # one worker: oldest first
    finally:
        second.close()


class StartingCluster(Cluster):
    """A local cluster still starting (the server's first run): its client() waits until released, then fails."""

    def __init__(self):
        super().__init__(workers=1)
        self.release = threading.Event()

    def client(self):
        self.release.wait(WAIT)
        raise ClusterUnavailable("this server stopped before its workers started")


@pytest.mark.timeout(300)
def test_a_restart_with_30_queued_runs_hands_them_all_to_the_new_cluster(sqlite_db, managers, cluster, monkeypatch):
    """A server stops before its workers ever started, with 30 runs of 30 labs waiting. A new server finds them in
    the store and hands them all to its cluster (it looks for such runs every second here, not every 5 s, and leaves
    a run to the server that submitted it for 1 s, not 10)."""
    monkeypatch.setattr(jobs, "RECOVER_EVERY_S", 1.0)  # (this process's manager: the workers are not involved)
    monkeypatch.setattr(jobs, "RECOVER_GRACE_S", 1.0)
    db = sqlite_db
    starting = StartingCluster()
    first = RunManager(db, cluster=starting)
    class_labs = [new_lab(db) for _ in range(30)]
    try:
        submitted = [first.submit(lab, RunSpec(task="emails", family="bow", seed=n))
                     for n, lab in enumerate(class_labs)]
        assert runs.counts(db) == {"queued": 30, "running": 0}
    finally:
        first.close(timeout=1.0)  # the server stops before its workers ever started
        starting.release.set()
        first._tender.join(WAIT)
    assert runs.counts(db) == {"queued": 30, "running": 0}  # still queued in the store
    second = managers(db)  # the server starts again, on a cluster that works
    # The queue, read at one moment (the new cluster may have started the first ones already): in the order they came.
    last_place = second.runs_of(class_labs[-1])[0].queue_position
    waiting = [run_id for run_id, _ in runs.queued_specs(db)]
    assert len(waiting) <= last_place <= 30  # (places only fall as the queue moves)
    assert len(waiting) >= 20 and waiting == submitted[len(submitted) - len(waiting):]
    pids = worker_pids(cluster)
    for lab, run_id in zip(class_labs, submitted, strict=True):
        done = ended(db, lab, run_id, timeout=120)
        assert done.status == "finished" and done.attempts == 1 and done.worker_pid in pids, done
        assert [m.fingerprint for m in models.listed(db, lab)] == [done.fingerprint]
    assert runs.counts(db) == {"queued": 0, "running": 0}
    with contextlib.suppress(Exception):
        starting.close()
