"""The run engine tests' shared helpers and fixtures (tests/unit/test_jobs.py, test_jobs_queue.py,
test_jobs_durability.py and test_jobs_identical.py): runs read from the store, weights compared with an
uninterrupted run's, a Dask cluster of two workers and the RunManagers (web servers) on it.

A test module takes the fixtures by assigning them to its own names (``cluster, managers, sqlite_db =
jobs_support.cluster, ...``): ``cluster`` is module-scoped, so each such module starts a cluster of its own.
"""

from __future__ import annotations

import functools
import os
import time

import pytest
import torch
from polling import wait_until
from sqlalchemy import update

from seqviz import driver
from seqviz.checkpoints import load_bytes
from seqviz.cluster import Cluster
from seqviz.jobs import RunManager, _scheduler_keys
from seqviz.runs import RunSpec
from seqviz.store import Database, labs, models, runs
from seqviz.store.schema import Run

WAIT = 120.0  # seconds a test waits for a run before it fails (a shared, busy machine: training is niced)
# Trains until it is stopped (about 20 s of steps on this machine's cores).
LONG = RunSpec(task="emails", family="lstm", embedding=16, hidden=16, steps=5000, batch_size=16)


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
