"""RunManager: background runs with a cap, a FIFO queue, stop that keeps the model, owners and the reaper.

Tiny models, a few steps; tests wait on events with timeouts and never assert on timings.
"""

from __future__ import annotations

import threading

import pytest
import torch

from seqviz import limits
from seqviz.checkpoints import fingerprint, load_bytes
from seqviz.jobs import RunManager, RunRefused
from seqviz.runs import RunSpec

WAIT = 30.0  # seconds a test waits for a run before it fails


def tiny(steps: int = 20, seed: int = 0, family: str = "lstm") -> RunSpec:
    return RunSpec(task="emails", family=family, embedding=4, hidden=4, steps=steps, batch_size=8, seed=seed)


@pytest.fixture
def managers():
    made: list[RunManager] = []

    def make(**options) -> RunManager:
        made.append(RunManager(**options))
        return made[-1]

    yield make
    for manager in made:
        manager.close()


def gate_at_first_snapshot(gate: threading.Event, started: threading.Event):
    """A snapshot function that holds the run at its first snapshot until ``gate`` opens."""

    def snapshot(model):
        started.set()
        gate.wait(WAIT)
        return None

    return snapshot


def test_a_run_trains_and_hands_out_history_snapshots_and_a_checkpoint(managers):
    manager = managers()
    run = manager.submit("alice", tiny(steps=25), snapshot_fn=lambda m: float(m.head.weight.sum())
                         if hasattr(m, "head") else 0.0, snapshot_every_s=1e-6)
    assert run.wait(WAIT)
    state = run.state()
    assert state.status == "finished" and state.error is None and state.ended
    assert state.step == state.steps == 25
    assert [step for step, _ in state.losses] == list(range(1, 26))
    assert state.metric_history[0][0] == 1 and state.metric_history[-1][0] == 25
    assert state.metric == state.metrics["test_accuracy"]
    assert 0 < len(state.snapshots) <= limits.TRAIN_MAX_SNAPSHOTS and state.snapshots[-1][0] == 25
    assert state.eta_s == 0.0 and state.train_seconds is not None
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


def test_bag_of_words_counts_in_one_step(managers):
    run = managers().submit("alice", RunSpec(task="emails", family="bow"))
    assert run.wait(WAIT)
    state = run.state()
    assert state.status == "finished" and state.steps == 1 and state.metric_history
    assert load_bytes(state.checkpoint).family == "bow"


def test_cap_one_queues_in_order_and_a_queued_run_can_be_cancelled(managers):
    manager = managers(max_running=1)
    gate, started = threading.Event(), threading.Event()
    first = manager.submit("a", tiny(steps=5000), snapshot_fn=gate_at_first_snapshot(gate, started),
                           snapshot_every_s=1e-6)
    second = manager.submit("b", tiny(steps=5))
    third = manager.submit("c", tiny(steps=5))
    assert started.wait(WAIT)
    assert first.status == "running"
    assert (second.state().status, second.state().queue_position) == ("queued", 1)
    assert (third.state().status, third.state().queue_position) == ("queued", 2)
    assert manager.cancel("c", third.id)
    assert third.state().status == "cancelled" and third.wait(0)
    assert second.state().queue_position == 1
    assert manager.load() == {"running": 1, "queued": 1, "max_running": 1}
    first.stop()
    gate.set()
    assert first.wait(WAIT) and second.wait(WAIT)
    assert first.state().status == "stopped" and second.state().status == "finished"
    assert third.state().status == "cancelled" and third.state().step == 0


def test_stop_keeps_what_was_learned(managers):
    manager = managers()
    spec = tiny(steps=5000)
    initial, _, _ = spec.build()
    far_enough = threading.Event()

    def snapshot(model):
        if run_ref and run_ref[0].state().step >= 20:
            far_enough.set()
        return None

    run_ref: list = []
    run = manager.submit("alice", spec, snapshot_fn=snapshot, snapshot_every_s=1e-6)
    run_ref.append(run)
    assert far_enough.wait(WAIT)
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
    manager = managers(max_running=1, max_queued=1, max_active_per_owner=2)
    gate, started = threading.Event(), threading.Event()
    first = manager.submit("a", tiny(steps=5000), snapshot_fn=gate_at_first_snapshot(gate, started),
                           snapshot_every_s=1e-6)
    manager.submit("a", tiny(steps=3))
    with pytest.raises(RunRefused, match="TRAIN_MAX_ACTIVE_PER_OWNER"):
        manager.submit("a", tiny(steps=3))
    with pytest.raises(RunRefused, match="busy"):
        manager.submit("b", tiny(steps=3))
    first.stop()
    gate.set()
    assert first.wait(WAIT)


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


def test_a_session_that_stops_polling_loses_its_runs(managers):
    manager = managers(max_running=1, orphan_timeout_s=0.5, reaper_interval_s=0.05)
    running = manager.submit("gone", tiny(steps=5000), snapshot_fn=lambda m: torch.zeros(1000),
                             snapshot_every_s=1e-6)
    queued = manager.submit("gone", tiny(steps=5))
    assert running.wait(WAIT) and queued.wait(WAIT)  # nobody touched: the reaper stopped both
    assert queued.state().status == "cancelled"
    state = running.state()
    assert state.status == "stopped" and state.stop_reason == "session gone" and state.step < 5000
    assert state.checkpoint is None and state.snapshots == ()  # freed, not evaluated or saved
    assert manager.runs_of("gone") == []
    assert manager.load()["running"] == 0
    after = manager.submit("next", tiny(steps=2))  # the slot is free again
    assert after.wait(WAIT) and after.state().status == "finished"


def test_a_silent_session_whose_tab_is_still_connected_keeps_its_run(managers):
    connected = {"slow-tab": True, "closed-tab": False}
    manager = managers(max_running=2, orphan_timeout_s=0.3, reaper_interval_s=0.05,
                       still_there=lambda owner: connected[owner])
    gate = threading.Event()
    kept = manager.submit("slow-tab", tiny(steps=50), snapshot_fn=gate_at_first_snapshot(gate, threading.Event()),
                          snapshot_every_s=1e-6)
    lost = manager.submit("closed-tab", tiny(steps=5000), snapshot_fn=lambda m: None, snapshot_every_s=1e-6)
    assert lost.wait(WAIT) and lost.state().stop_reason == "session gone"
    assert kept.status == "running"  # silent for far longer than the timeout, but its tab is there
    gate.set()
    assert kept.wait(WAIT) and kept.state().status == "finished"


def test_a_failing_run_reports_its_error_and_frees_its_slot(managers, monkeypatch):
    import seqviz.train

    real_train = seqviz.train.train

    def train(model, task, config, **kwargs):
        if config.seed == 7:
            raise RuntimeError("boom at step 0")
        return real_train(model, task, config, **kwargs)

    monkeypatch.setattr(seqviz.train, "train", train)
    manager = managers(max_running=1)
    failing = manager.submit("alice", tiny(steps=5, seed=7))
    after = manager.submit("bob", tiny(steps=3))
    assert failing.wait(WAIT) and after.wait(WAIT)
    state = failing.state()
    assert state.status == "failed" and "boom at step 0" in state.error and state.checkpoint is None
    assert after.state().status == "finished"


def test_a_broken_snapshot_function_is_switched_off_not_fatal(managers):
    run = managers().submit("alice", tiny(steps=5), snapshot_fn=lambda m: 1 / 0, snapshot_every_s=1e-6)
    assert run.wait(WAIT)
    state = run.state()
    assert state.status == "finished" and "ZeroDivisionError" in state.error and state.snapshots == ()


def test_a_run_leaves_torchs_global_state_alone(managers):
    manager = managers()  # configures torch once per process (one thread)
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    rng = torch.random.get_rng_state()
    run = manager.submit("alice", tiny(steps=10, seed=5))
    assert run.wait(WAIT) and run.state().status == "finished"
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic
    assert torch.equal(torch.random.get_rng_state(), rng)


def test_a_queued_run_begins_when_the_one_before_it_ends_and_says_how_long_it_waited(managers):
    manager = managers(max_running=1)
    gate, started = threading.Event(), threading.Event()
    first = manager.submit("alice", tiny(steps=5), snapshot_fn=gate_at_first_snapshot(gate, started),
                           snapshot_every_s=1e-6)
    second = manager.submit("bob", tiny(steps=3))
    assert started.wait(WAIT)
    waiting = second.state()
    assert waiting.status == "queued" and waiting.started_at is None and waiting.waited_s is None
    gate.set()
    assert first.wait(WAIT) and second.wait(WAIT)
    one, two = first.state(), second.state()
    assert one.submitted_at <= one.started_at <= one.ended_at
    assert two.started_at >= one.ended_at  # the slot was given on only when the first run had ended
    assert two.waited_s == two.started_at - two.submitted_at > 0
    assert two.ended_at >= two.started_at
