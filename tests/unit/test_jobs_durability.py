"""The run engine's durability, on a real Dask cluster and lab store (tests/unit/test_jobs.py says how), the issue's
key cases: a killed worker's run goes on from its saved point on another worker; a web server restarted with its
embedded cluster finds its run and goes on; a restart with 30 queued runs hands them all to the new cluster. The
weights end bit for bit as an uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import jobs_support
import psutil
import pytest
from jobs_support import (
    WAIT,
    ended,
    new_lab,
    row,
    same_weights,
    state,
    tiny,
    uninterrupted,
    weights,
    worker_pids,
)
from polling import wait_until

from seqviz import jobs
from seqviz.cluster import SCHEDULER_ENV, WORKERS_ENV, Cluster, ClusterUnavailable
from seqviz.jobs import RunManager
from seqviz.runs import RunSpec
from seqviz.store import models, runs

cluster, managers, sqlite_db = jobs_support.cluster, jobs_support.managers, jobs_support.sqlite_db  # its fixtures
# Saved every SAVE_S of training in the tests that kill its worker (a quiet, fast core trains it in a few seconds:
# the default TRAIN_SAVE_EVERY_S of 5 s could come after its end).
SAVE_S = 0.5
RESUMED = RunSpec(task="emails", family="lstm", embedding=16, hidden=16, steps=2200, batch_size=16, seed=3)


def past_a_saved_point(db, run_id: str, timeout: float = WAIT) -> dict:
    found = wait_until(lambda: (lambda r: r if r["status"] == "running" and r["saved_step"] > 0 else None)(
        row(db, run_id)), timeout, 0.05)
    assert found is not None, f"the run saved no point: {row(db, run_id)}"
    return found


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
