"""RunManager on a real Dask cluster (two worker processes, one thread each): runs train in the workers, never in
this process; the queue, stop that keeps the model, owners and the reaper; a killed worker; same seed, same weights
under load; the web side's memory after many runs.

Tiny models, a few steps; tests wait with timeouts and never assert on timings (the killed worker's "within 10 s"
is the wait's bound, as the issue asks). A snapshot function crosses to the worker by value (cloudpickle), so the
tests use small lambdas.
"""

from __future__ import annotations

import gc
import os
import signal
import threading

import psutil
import pytest
import torch
from polling import wait_until

from seqviz import limits
from seqviz.checkpoints import fingerprint, load_bytes
from seqviz.cluster import Cluster
from seqviz.jobs import RunManager, RunRefused
from seqviz.runs import RunSpec

WAIT = 60.0  # seconds a test waits for a run before it fails


def tiny(steps: int = 20, seed: int = 0, family: str = "lstm") -> RunSpec:
    return RunSpec(task="emails", family=family, embedding=4, hidden=4, steps=steps, batch_size=8, seed=seed)


def wait_for(condition, timeout: float = WAIT, every: float = 0.05):
    return wait_until(condition, timeout, every)


def training(run, at_step: int = 1) -> bool:
    state = run.state()
    return state.status == "running" and state.step >= at_step


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(workers=2)
    cluster.client()
    yield cluster
    cluster.close()


@pytest.fixture
def managers(cluster):
    made: list[RunManager] = []

    def make(**options) -> RunManager:
        made.append(RunManager(cluster=cluster, **options))
        return made[-1]

    yield make
    for manager in made:
        manager.close()


def test_a_run_trains_in_a_worker_process_and_hands_out_history_snapshots_and_a_checkpoint(managers, cluster):
    manager = managers()
    run = manager.submit("alice", tiny(steps=25), snapshot_fn=lambda m: float(m.head.weight.sum())
                         if hasattr(m, "head") else 0.0, snapshot_every_s=1e-6)
    assert run.wait(WAIT)
    state = run.state()
    assert state.status == "finished" and state.error is None and state.ended
    # The web process never trains: the run says which process did, one of the cluster's workers.
    worker_pids = set(cluster.client().run(os.getpid).values())
    assert state.worker_pid in worker_pids and state.worker_pid != os.getpid()
    assert state.step == state.steps == 25
    assert [step for step, _ in state.losses] == list(range(1, 26))
    assert state.metric_history[0][0] == 1 and state.metric_history[-1][0] == 25
    assert state.metric == state.metrics["test_accuracy"]
    assert 0 < len(state.snapshots) <= limits.TRAIN_MAX_SNAPSHOTS and state.snapshots[-1][0] == 25
    assert all(isinstance(value, float) for _, value in state.snapshots)
    assert state.eta_s == 0.0 and state.train_seconds is not None and state.phase is None
    assert isinstance(state.checkpoint, bytes) and state.fingerprint == fingerprint(state.checkpoint)
    checkpoint = load_bytes(state.checkpoint)
    assert checkpoint.family == "lstm" and checkpoint.task == "emails"
    assert checkpoint.meta["steps"] == 25 and checkpoint.meta["seed"] == 0
    assert checkpoint.meta["spec"]["hidden"] == 4 and checkpoint.meta["train"]["steps"] == 25
    assert checkpoint.metrics["test_accuracy"] == state.metrics["test_accuracy"]
    with pytest.raises(AttributeError):
        state.status = "failed"  # snapshots are immutable
    state.metrics["test_accuracy"] = -1.0  # a copy: the run's own numbers do not change
    assert run.state().metrics["test_accuracy"] != -1.0


def test_a_run_says_what_it_does_before_its_first_step(managers):
    manager = managers(max_running=1)
    run = manager.submit("alice", RunSpec(task="memory", family="gru", embedding=8, hidden=16, steps=2000))
    phases = set()

    def seen_step() -> bool:
        state = run.state()
        if state.status == "running" and state.step == 0:
            phases.add(state.phase)
        return state.step > 0

    assert wait_for(seen_step, every=0.01)
    run.stop()
    assert run.wait(WAIT) and run.state().status == "stopped"
    assert phases and None not in phases, phases  # "starting on a training worker", "building the model", ...


def test_bag_of_words_counts_in_one_step(managers):
    run = managers().submit("alice", RunSpec(task="emails", family="bow"))
    assert run.wait(WAIT)
    state = run.state()
    assert state.status == "finished" and state.steps == 1 and state.metric_history
    assert load_bytes(state.checkpoint).family == "bow"


def test_cap_one_queues_in_order_with_expected_starts_and_a_queued_run_can_be_cancelled(managers):
    manager = managers(max_running=1)
    first = manager.submit("a", tiny(steps=5000))
    second = manager.submit("b", tiny(steps=5))
    third = manager.submit("c", tiny(steps=5))
    assert wait_for(lambda: training(first, 20))
    assert (second.state().status, second.state().queue_position) == ("queued", 1)
    assert (third.state().status, third.state().queue_position) == ("queued", 2)
    assert second.state().expected_start_at <= third.state().expected_start_at
    assert manager.cancel("c", third.id)
    assert third.state().status == "cancelled" and third.wait(0)
    assert second.state().queue_position == 1
    load = manager.load()
    assert (load["running"], load["queued"], load["max_running"], load["unavailable"]) == (1, 1, 1, None)
    assert load["wait_s"] > 0  # a run submitted now waits for the two ahead of it
    first.stop()
    assert first.wait(WAIT) and second.wait(WAIT)
    assert first.state().status == "stopped" and second.state().status == "finished"
    assert third.state().status == "cancelled" and third.state().step == 0


def test_stop_keeps_what_was_learned(managers):
    manager = managers()
    spec = tiny(steps=5000)
    initial, _, _ = spec.build()
    run = manager.submit("alice", spec)
    assert wait_for(lambda: training(run, 20))
    run.stop()
    assert run.wait(WAIT)
    state = run.state()
    assert state.status == "stopped" and state.stop_reason == "asked"
    assert 20 <= state.step < 5000 and state.metrics is not None
    learned = load_bytes(state.checkpoint).model.state_dict()
    assert any(not torch.equal(learned[k], v) for k, v in initial.state_dict().items())


def test_a_run_over_its_time_limit_is_stopped_and_kept(managers):
    run = managers(max_seconds=0.01).submit("alice", tiny(steps=5000))
    assert run.wait(WAIT)
    state = run.state()
    assert state.status == "stopped" and state.stop_reason == "time limit" and state.checkpoint is not None


def test_full_queue_and_too_many_runs_of_one_session_are_refused(managers):
    with pytest.raises(ValueError, match="max_active_per_owner"):
        managers(max_active_per_owner=limits.TRAIN_MAX_ACTIVE_PER_OWNER_MOST + 1)
    assert limits.TRAIN_MAX_QUEUED >= 60 and limits.TRAIN_MAX_ACTIVE_PER_OWNER == 1
    one = managers()
    first = one.submit("a", tiny(steps=5000))
    with pytest.raises(RunRefused, match="TRAIN_MAX_ACTIVE_PER_OWNER"):
        one.submit("a", tiny(steps=3))  # one run per session by default
    first.stop()
    manager = managers(max_running=1, max_queued=1, max_active_per_owner=2)
    busy = manager.submit("a", tiny(steps=5000))
    assert wait_for(lambda: training(busy))
    manager.submit("a", tiny(steps=3))
    with pytest.raises(RunRefused, match="TRAIN_MAX_ACTIVE_PER_OWNER"):
        manager.submit("a", tiny(steps=3))
    with pytest.raises(RunRefused, match="busy"):
        manager.submit("b", tiny(steps=3))
    busy.stop()
    assert first.wait(WAIT) and busy.wait(WAIT)


def test_runs_of_and_get_never_show_another_owners_runs(managers):
    manager = managers()
    mine = manager.submit("alice", tiny(steps=3))
    theirs = manager.submit("bob", tiny(steps=3))
    assert mine.wait(WAIT) and theirs.wait(WAIT)
    assert manager.runs_of("alice") == [mine]
    assert manager.runs_of("bob") == [theirs]
    assert manager.get("alice", theirs.id) is None
    assert manager.get("bob", theirs.id) is theirs
    assert not manager.cancel("alice", theirs.id) and not manager.forget("alice", theirs.id)
    assert manager.forget("bob", theirs.id)
    assert manager.runs_of("bob") == [] and theirs.state().checkpoint is None
    with pytest.raises(ValueError, match="owner"):
        manager.runs_of("")


def test_a_session_that_stops_polling_loses_its_runs_on_the_worker(managers, cluster):
    manager = managers(max_running=1, orphan_timeout_s=0.5, reaper_interval_s=0.05, max_active_per_owner=2)
    running = manager.submit("gone", tiny(steps=5000), snapshot_fn=lambda m: None, snapshot_every_s=1e-6)
    queued = manager.submit("gone", tiny(steps=5))
    assert running.wait(WAIT) and queued.wait(WAIT)  # nobody touched: the reaper stopped both
    assert queued.state().status == "cancelled"
    state = running.state()
    assert state.status == "stopped" and state.stop_reason == "session gone" and state.step < 5000
    assert state.checkpoint is None and state.snapshots == ()  # freed, not evaluated or saved
    assert manager.runs_of("gone") == []
    assert manager.load()["running"] == 0
    assert wait_for(lambda: not any(cluster.client().processing().values()), 10)  # the worker is free
    after = manager.submit("next", tiny(steps=2))  # the slot is free again
    assert after.wait(WAIT) and after.state().status == "finished"


def test_a_silent_session_whose_tab_is_still_connected_keeps_its_run(managers):
    connected = {"slow-tab": True, "closed-tab": False}
    manager = managers(max_running=2, orphan_timeout_s=0.3, reaper_interval_s=0.05,
                       still_there=lambda owner: connected[owner])
    kept = manager.submit("slow-tab", tiny(steps=5000))
    lost = manager.submit("closed-tab", tiny(steps=5000))
    assert lost.wait(WAIT) and lost.state().stop_reason == "session gone"
    assert kept.status == "running"  # silent for far longer than the timeout, but its tab is there
    kept.stop()
    assert kept.wait(WAIT) and kept.state().status == "stopped" and kept.state().checkpoint is not None


class BrokenSpec(RunSpec):
    """A spec whose run cannot be prepared: the run fails on its worker, as a bug in training would."""

    def train_config(self):
        raise RuntimeError("boom while preparing the run")


def test_a_failing_run_reports_its_error_and_frees_its_slot(managers):
    manager = managers(max_running=1)
    failing = manager.submit("alice", BrokenSpec(task="emails", family="lstm", embedding=4, hidden=4, steps=5))
    after = manager.submit("bob", tiny(steps=3))
    assert failing.wait(WAIT) and after.wait(WAIT)
    state = failing.state()
    assert state.status == "failed" and "boom while preparing the run" in state.error and state.checkpoint is None
    assert after.state().status == "finished"


def test_a_broken_snapshot_function_is_switched_off_not_fatal(managers):
    run = managers().submit("alice", tiny(steps=5), snapshot_fn=lambda m: 1 / 0, snapshot_every_s=1e-6)
    assert run.wait(WAIT)
    state = run.state()
    assert state.status == "finished" and "ZeroDivisionError" in state.error and state.snapshots == ()


def test_a_queued_run_begins_when_the_one_before_it_ends_and_says_how_long_it_waited(managers):
    manager = managers(max_running=1)
    first = manager.submit("alice", tiny(steps=5000))
    second = manager.submit("bob", tiny(steps=3))
    assert wait_for(lambda: training(first))
    waiting = second.state()
    assert waiting.status == "queued" and waiting.started_at is None and waiting.waited_s is None
    first.stop()
    assert first.wait(WAIT) and second.wait(WAIT)
    one, two = first.state(), second.state()
    assert one.submitted_at <= one.started_at <= one.ended_at
    assert two.started_at >= one.ended_at  # the slot was given on only when the first run had ended
    assert two.waited_s == two.started_at - two.submitted_at > 0
    assert two.ended_at >= two.started_at


def test_a_killed_worker_fails_its_run_plainly_and_the_next_run_starts(managers, cluster):
    manager = managers(max_running=1)
    doomed = manager.submit("alice", tiny(steps=5000))
    after = manager.submit("bob", tiny(steps=3))
    assert wait_for(lambda: training(doomed, 5))
    pid = doomed.state().worker_pid
    assert pid and pid != os.getpid()
    os.kill(pid, signal.SIGKILL)
    assert doomed.wait(10), "the run did not end within 10 s of its worker's death"
    state = doomed.state()
    assert state.status == "failed" and "worker process stopped" in state.error and state.checkpoint is None
    assert after.wait(WAIT) and after.state().status == "finished"
    assert after.state().worker_pid != pid
    # Dask's nanny starts a new worker in place of the killed one.
    assert wait_for(lambda: len(cluster.client().scheduler_info()["workers"]) == 2, 30)


def test_same_spec_and_seed_give_the_same_weights_alone_and_under_load(managers):
    """The issue's case: a small transformer email classifier, seed 0, trained alone, then while another run
    trains on the other worker and this (web) process does what pages do on every view: count a spec's
    parameters and build seeded untrained models (fork_rng + manual_seed on the process-wide generator)."""
    spec = RunSpec(task="emails", family="transformer", embedding=16, hidden=32, heads=2, layers=1, steps=40,
                   batch_size=16, seed=0)
    manager = managers(max_running=2)
    alone = manager.submit("alone", spec)
    assert alone.wait(WAIT) and alone.state().status == "finished"

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
        neighbour = manager.submit("neighbour", RunSpec(task="emails", family="gru", embedding=8, hidden=8,
                                                        steps=2000, seed=1))
        loaded = manager.submit("loaded", spec)
        assert loaded.wait(WAIT) and loaded.state().status == "finished"
        neighbour.stop()
        assert neighbour.wait(WAIT)
    finally:
        stop.set()
        pages.join(10)
    one = load_bytes(alone.state().checkpoint).model.state_dict()
    two = load_bytes(loaded.state().checkpoint).model.state_dict()
    assert one.keys() == two.keys()
    assert all(torch.equal(one[key], two[key]) for key in one)


def test_the_web_side_memory_does_not_grow_with_runs(managers):
    manager = managers(max_running=2)
    process = psutil.Process()

    def one_run(n: int) -> None:
        run = manager.submit(f"visitor-{n}", tiny(steps=5, seed=n), snapshot_fn=lambda m: [0.0] * 100,
                             snapshot_every_s=1e-6)
        assert run.wait(WAIT) and run.state().status == "finished"
        assert manager.forget(f"visitor-{n}", run.id)

    for n in range(2):  # warm up: imports, the connection, the first messages
        one_run(n)
    gc.collect()
    before = process.memory_info().rss
    for n in range(2, 22):
        one_run(n)
    gc.collect()
    grown_mb = (process.memory_info().rss - before) / 2**20
    assert grown_mb < 50, f"the web side grew {grown_mb:.0f} MB over 20 runs"
