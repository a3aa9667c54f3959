"""The cluster runs train on: the local cluster's size rule, a configured scheduler that cannot be reached, and
scale-out to separate `dask scheduler` and `dask worker` processes on loopback through SEQVIZ_DASK_SCHEDULER.

Every process started here listens on 127.0.0.1 and is stopped at the end; each wait is bounded.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import psutil
import pytest
from polling import wait_until

from seqviz import limits
from seqviz.cluster import SCHEDULER_ENV, WORKERS_ENV, Cluster, local_worker_count, separate_processes
from seqviz.jobs import RunManager, RunRefused
from seqviz.runs import RunSpec
from seqviz.store import Database, labs, models, runs
from seqviz.store.engine import URL_ENV

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_local_workers_follow_cores_and_memory_and_the_setting():
    big = 64_000.0
    assert local_worker_count(cores=2, memory=big, env={}) == 1  # this host: one core stays with the pages
    assert local_worker_count(cores=8, memory=big, env={}) == 7
    assert local_worker_count(cores=1, memory=big, env={}) == 1  # at least one
    assert local_worker_count(cores=8, memory=1024, env={}) == 1  # a 1 GB host (Community Cloud)
    fits = limits.TRAIN_WEB_MB + 3 * limits.TRAIN_WORKER_MB
    assert local_worker_count(cores=16, memory=fits, env={}) == 3  # memory is short: fewer than the cores
    assert local_worker_count(cores=2, memory=big, env={WORKERS_ENV: "4"}) == 4
    assert local_worker_count(cores=2, memory=big, env={WORKERS_ENV: "lots"}) == 1  # not a number: the rule


def test_an_unreachable_scheduler_makes_training_unavailable_and_says_why(tmp_path):
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    db = Database(f"sqlite:///{tmp_path / 'seqviz.db'}")
    manager = RunManager(db, cluster=Cluster(address=address))
    try:
        began = time.monotonic()
        problem = manager.unavailable(wait_s=120)
        # A promise to the visitor, not a speed: a scheduler nobody answers for is said after CONNECT_TIMEOUT_S
        # (4 s), not after the whole wait. 60 s is generous slack for a loaded machine; only the wait ran out past it.
        took = time.monotonic() - began
        assert took < 60, f"an unreachable scheduler was said after {took:.0f} s: the page waited out its wait"
        assert problem and address in problem and SCHEDULER_ENV in problem
        lab = labs.open_lab(db, None).id
        with pytest.raises(RunRefused, match="unavailable"):
            manager.submit(lab, RunSpec(task="emails", family="bow"))
        assert manager.load()["unavailable"] == problem
        assert runs.states(db, lab) == []  # refused: nothing recorded
    finally:
        manager.close()
        db.dispose()
        db.dispose()


def test_slots_are_the_workers_train_resources():
    """Runs are submitted with resources={"train": 1}: a worker without that resource takes none, whatever its
    threads."""

    class Scheduler:
        def scheduler_info(self, n_workers=-1):
            return {"workers": {"a": {"nthreads": 1, "resources": {"train": 1.0}},
                                "b": {"nthreads": 4, "resources": {}}, "c": {"nthreads": 2}}}

    cluster = Cluster(address="tcp://127.0.0.1:1")
    assert cluster.slots() == 0  # not connected
    cluster._client = Scheduler()
    assert cluster.slots() == 1


@pytest.fixture
def store_url(tmp_path, monkeypatch):
    """The lab store every process started from here finds by its setting (the workers read their own)."""
    url = f"sqlite:///{tmp_path / 'store' / 'seqviz.db'}"
    monkeypatch.setenv(URL_ENV, url)
    return url


@pytest.fixture
def loopback_cluster(store_url):
    """`dask scheduler` and one `dask worker` (one thread, one "train" resource) as separate processes on
    127.0.0.1."""
    with separate_processes(workers=1) as (address, workers):
        yield address, workers[0]


@pytest.mark.timeout(120)
def test_runs_scale_out_to_a_separate_scheduler_and_worker(loopback_cluster, store_url, monkeypatch):
    address, worker = loopback_cluster
    monkeypatch.setenv(SCHEDULER_ENV, address)
    db = Database(store_url)
    manager = RunManager(db)  # the app's way: the cluster comes from the environment
    try:
        assert manager.cluster.external and manager.cluster.address == address
        deadline = time.monotonic() + 60
        while manager.unavailable(wait_s=5) and time.monotonic() < deadline:  # the scheduler is still starting
            time.sleep(0.5)
        assert manager.unavailable() is None
        lab = labs.open_lab(db, None).id
        run_id = manager.submit(lab, RunSpec(task="emails", family="lstm", embedding=4, hidden=4, steps=10,
                                             batch_size=8))
        state = wait_until(lambda: (lambda s: s if s.ended else None)(runs.states(db, lab, run_id)[0]), 90)
        assert state is not None, runs.states(db, lab, run_id)
        assert state.status == "finished" and state.error is None, state
        assert [m.fingerprint for m in models.listed(db, lab)] == [state.fingerprint]  # written by the worker
        # It trained in a process of the `dask worker` command, not here.
        worker_pids = {p.pid for p in psutil.Process(worker.pid).children(recursive=True)} | {worker.pid}
        assert state.worker_pid in worker_pids and state.worker_pid != os.getpid()
        assert manager.load()["max_running"] == 1
    finally:
        manager.close()
        db.dispose()
