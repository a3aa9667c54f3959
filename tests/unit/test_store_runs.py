"""A lab's runs in the store (seqviz.store.runs), on SQLite and PostgreSQL: from the queue to their end, what the
worker writes and reads back, going on after a lost worker, snapshots thinned and damaged ones left out, ended runs
pruned per lab."""

import pickle
import time
from dataclasses import asdict

import pytest
from store_fixtures import count, in_threads, meeting_at_first_write, named, spec

from seqviz import limits
from seqviz.progress import ACTIVE, Control, Report
from seqviz.store import labs, models, runs


def _lab(db, now=None):
    return labs.open_lab(db, None, now=now).id


def _state(db, lab_id, run_id):
    (state,) = runs.states(db, lab_id, run_id)
    return state


def test_a_new_run_is_queued_with_its_spec(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec("first", steps=40), watch={"sentence": "the cat"}, now=1000.0)
    state = _state(db, lab, run_id)
    assert (state.name, state.status, state.queue_position, state.step, state.steps) == ("first", "queued", 1, 0, 40)
    assert state.spec == spec("first", steps=40) and state.submitted_at == 1000.0
    assert (state.started_at, state.ended_at, state.attempts, state.eta_s, state.note) == (None, None, 0, None, None)
    assert state.losses == () and state.snapshots == () and not state.ended
    assert runs.counts(db) == {"queued": 1, "running": 0} == runs.counts(db, lab)
    assert runs.unfinished(db) == [(run_id, "queued", 1000.0)]
    assert runs.queued_specs(db)[0][0] == run_id and runs.queued_specs(db)[0][1]["steps"] == 40


def test_queue_positions_count_every_labs_queued_runs(db):
    first, second = _lab(db), _lab(db)
    a = runs.create(db, first, spec("a"), now=1.0)
    b = runs.create(db, second, spec("b"), now=2.0)
    c = runs.create(db, first, spec("c"), now=3.0)
    assert [(s.id, s.queue_position) for s in runs.states(db, first)] == [(c, 3), (a, 1)]  # newest first
    assert [(s.id, s.queue_position) for s in runs.states(db, second)] == [(b, 2)]
    assert runs.counts(db) == {"queued": 3, "running": 0} and runs.counts(db, second) == {"queued": 1, "running": 0}
    runs.begin(db, a, "worker", 7)
    assert [(s.id, s.queue_position) for s in runs.states(db, first)] == [(c, 2), (a, None)]
    assert _state(db, second, b).queue_position == 1
    assert runs.counts(db) == {"queued": 2, "running": 1} and runs.counts(db, first) == {"queued": 1, "running": 1}
    assert [row[:2] for row in runs.unfinished(db)] == [(a, "running"), (b, "queued"), (c, "queued")]
    assert runs.states(db, second, a) == []  # a lab sees its own runs only


def test_a_worker_begins_reports_saves_and_ends_a_run(db):
    lab = _lab(db, now=5000.0)
    run_id = runs.create(db, lab, spec(steps=100), watch={"w": 1})
    began = runs.begin(db, run_id, "tcp://worker:1", 4321, now=time.time() - 30)
    assert began == {"spec": asdict(spec(steps=100)), "watch": {"w": 1}, "key": None,
                     "saved_state": None, "saved_step": 0, "attempts": 1, "stop": False}
    control = runs.report(db, run_id, Report(phase="training", step=10, trained_s=2.0, losses=[(5, 2.5), (10, 2.0)],
                                             metrics=[(10, 0.5)]))
    assert control == Control(stop=False, last_seen=5000.0)
    runs.report(db, run_id, Report(step=20, trained_s=4.0, losses=[(20, 1.5)]))
    runs.save_point(db, run_id, 20, b"the state at step 20")
    state = _state(db, lab, run_id)
    assert (state.status, state.step, state.trained_s, state.worker, state.worker_pid) == (
        "running", 20, 4.0, "tcp://worker:1", 4321)
    assert state.losses == ((5, 2.5), (10, 2.0), (20, 1.5)) and state.metric_history == ((10, 0.5),)
    assert state.phase == "training" and state.eta_s == pytest.approx(4.0 / 20 * 80)
    assert runs.running(db) == [(asdict(spec(steps=100)), 20, 100, 4.0, state.started_at)]
    runs.end(db, run_id, "finished", step=100, metrics={"accuracy": 0.9}, train_seconds=20.0, trained_s=20.0,
             headline=0.9)
    state = _state(db, lab, run_id)
    assert (state.status, state.step, state.metrics, state.train_seconds, state.phase) == (
        "finished", 100, {"accuracy": 0.9}, 20.0, None)
    assert state.metric_history == ((10, 0.5), (100, 0.9)) and state.ended and state.eta_s == 0.0
    assert runs.counts(db) == {"queued": 0, "running": 0} and runs.unfinished(db) == []
    assert runs.begin(db, run_id, "worker", 1) is None  # ended: nothing to train
    assert runs.report(db, run_id, Report(step=101)) == Control(stop=True, last_seen=None)
    assert _state(db, lab, run_id).step == 100
    runs.end(db, run_id, "failed", error="too late")  # an ended run stays as it ended
    assert _state(db, lab, run_id).status == "finished"


def test_the_paces_of_ended_runs(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec(steps=100))
    runs.begin(db, run_id, "worker", 1, now=time.time() - 30)
    runs.end(db, run_id, "finished", step=100, train_seconds=20.0)
    (spec_fields, per_step, outside), = runs.paces(db)
    assert spec_fields["steps"] == 100 and per_step == pytest.approx(0.2)
    assert outside == pytest.approx(10.0, abs=5.0)
    failed = runs.create(db, lab, spec())
    runs.begin(db, failed, "worker", 1)
    runs.end(db, failed, "failed", step=3, train_seconds=1.0, error="it broke")
    assert len(runs.paces(db)) == 1  # only finished and stopped runs tell a pace


def test_asking_a_queued_run_to_stop_cancels_it_at_once(db):
    lab, other = _lab(db), _lab(db)
    run_id = runs.create(db, lab, spec())
    assert runs.request_stop(db, other, run_id) is None  # another lab's run: not found
    assert _state(db, lab, run_id).status == "queued"
    assert runs.request_stop(db, lab, run_id) == "cancelled"
    state = _state(db, lab, run_id)
    assert state.status == "cancelled" and state.ended_at is not None and state.queue_position is None
    assert runs.begin(db, run_id, "worker", 1) is None
    assert runs.counts(db) == {"queued": 0, "running": 0}
    assert runs.request_stop(db, lab, "no such run") is None


def test_asking_a_running_run_to_stop_flags_it_for_its_worker(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "worker", 1)
    assert runs.request_stop(db, lab, run_id) == "running"
    state = _state(db, lab, run_id)
    assert (state.status, state.stop_reason) == ("running", "asked")
    assert runs.report(db, run_id, Report(step=5, stop_reason="time limit")).stop
    assert _state(db, lab, run_id).stop_reason == "asked"  # the first reason stays
    runs.end(db, run_id, "stopped", step=5, stop_reason="asked")
    assert _state(db, lab, run_id).status == "stopped"


def test_a_second_begin_goes_on_from_the_saved_point(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec(steps=100))
    runs.begin(db, run_id, "lost worker", 1)
    runs.report(db, run_id, Report(step=10, losses=[(s, 1.0 / s) for s in range(1, 11)], metrics=[(5, 0.1)]))
    runs.save_point(db, run_id, 6, b"state at 6")
    runs.report(db, run_id, Report(step=14, losses=[(s, 1.0 / s) for s in range(11, 15)], metrics=[(12, 0.2)]))
    again = runs.begin(db, run_id, "new worker", 2)
    assert (again["saved_state"], again["saved_step"], again["attempts"]) == (b"state at 6", 6, 2)
    state = _state(db, lab, run_id)
    assert state.step == 6 and [s for s, _ in state.losses] == [1, 2, 3, 4, 5, 6]
    assert state.metric_history == ((5, 0.1),) and state.attempts == 2 and state.worker == "new worker"
    assert "step 14" in state.note and "step 6" in state.note


def test_a_second_begin_before_any_saved_point_begins_again(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "lost worker", 1)
    runs.report(db, run_id, Report(step=3, losses=[(1, 3.0), (2, 2.0), (3, 1.0)]))
    assert runs.begin(db, run_id, "new worker", 2)["saved_state"] is None
    state = _state(db, lab, run_id)
    assert (state.step, state.losses, state.attempts) == (0, (), 2) and "began again" in state.note


def test_a_saved_point_is_kept_only_while_the_run_runs(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.save_point(db, run_id, 3, b"queued: not kept")
    runs.begin(db, run_id, "worker", 1)
    runs.save_point(db, run_id, 4, b"kept")
    runs.end(db, run_id, "failed", error="out of memory")
    runs.save_point(db, run_id, 5, b"ended: not kept")
    assert count(db, "runs", "WHERE saved_step = 4") == 1 and count(db, "run_points") == 0  # dropped at its end


def _snapshot(step):
    return step, pickle.dumps({"step": step, "weights": [step] * 3})


def test_snapshots_are_thinned_to_the_limit_keeping_the_newest(db, monkeypatch):
    monkeypatch.setattr(limits, "TRAIN_MAX_SNAPSHOTS", 6)  # even, as the shipped 40
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "worker", 1)
    for step in range(1, 21):
        runs.report(db, run_id, Report(step=step, snapshots=[_snapshot(step)]))
        steps = [s for s, _ in _state(db, lab, run_id).snapshots]
        assert len(steps) <= 6 and steps[-1] == step and steps == sorted(steps)
    assert steps[0] == 1 and len(steps) >= 4  # the run's first look stays; the others thin out


def test_a_report_of_many_snapshots_is_thinned_to_the_limit_too(db, monkeypatch):
    monkeypatch.setattr(limits, "TRAIN_MAX_SNAPSHOTS", 8)
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "worker", 1)
    runs.report(db, run_id, Report(step=30, snapshots=[_snapshot(s) for s in range(1, 31)]))
    snapshots = _state(db, lab, run_id).snapshots
    assert snapshots[-1] == (30, {"step": 30, "weights": [30] * 3})
    assert len(snapshots) <= 8


def test_a_damaged_snapshot_is_left_out_and_the_rest_shows(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "worker", 1)
    runs.report(db, run_id, Report(step=3, losses=[(3, 0.5)],
                                   snapshots=[_snapshot(1), (2, b"\x80\x04not a pickle"), _snapshot(3)]))
    state = _state(db, lab, run_id)
    assert [s for s, _ in state.snapshots] == [1, 3] and state.losses == ((3, 0.5),)
    assert runs.states(db, lab, snapshots=False)[0].snapshots == ()


def test_a_labs_oldest_ended_runs_go_beyond_the_limit_and_their_models_stay(db, monkeypatch):
    monkeypatch.setattr(limits, "TRAIN_MAX_KEPT_PER_OWNER", 3)
    lab, other = _lab(db), _lab(db)
    others = [runs.create(db, other, spec(f"other {n}"), now=float(n)) for n in range(3)]
    for run_id in others:
        runs.begin(db, run_id, "worker", 1)
        runs.end(db, run_id, "finished", step=1)
    active = runs.create(db, lab, spec("still queued"), now=0.5)
    ended = []
    for n in range(5):
        run_id = runs.create(db, lab, spec(f"run {n}"), now=10.0 + n)
        runs.begin(db, run_id, "worker", 1)
        model, _ = models.add(db, lab, named(f"model of run {n}"), within_limits=False)
        runs.end(db, run_id, "finished", step=1, model_id=models.model_id(db, lab, model.fingerprint))
        ended.append(run_id)
    kept = [s.id for s in runs.states(db, lab)]
    assert kept == [ended[4], ended[3], ended[2], active]
    assert [s.id for s in runs.states(db, other)] == others[::-1]
    assert len(models.listed(db, lab)) == 5
    assert [s.fingerprint for s in runs.states(db, lab)[:3]] == [m.fingerprint for m in models.listed(db, lab)][:1:-1]


def test_a_report_on_a_run_that_is_gone_says_stop(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    assert runs.report(db, run_id, Report(step=1)) == Control(stop=True, last_seen=None)  # queued: not begun
    runs.begin(db, run_id, "worker", 1)
    labs.forget(db, lab)
    assert runs.report(db, run_id, Report(step=1)) == Control(stop=True, last_seen=None)
    assert runs.begin(db, run_id, "worker", 1) is None


def test_two_workers_reporting_to_one_run_at_once_lose_no_loss(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "worker", 1)
    with meeting_at_first_write(db, timeout_s=10.0):  # they meet, unless the row lock makes one wait
        results = in_threads(lambda: runs.report(db, run_id, Report(step=1, losses=[(1, 1.0)])),
                             lambda: runs.report(db, run_id, Report(step=2, losses=[(2, 0.5)])))
    assert all(isinstance(result, Control) for result in results), results
    assert sorted(_state(db, lab, run_id).losses) == [(1, 1.0), (2, 0.5)]


def test_every_status_the_store_writes_is_one_the_pages_know(db):
    lab = _lab(db)
    for status in ("finished", "stopped", "failed", "cancelled"):
        run_id = runs.create(db, lab, spec(status))
        runs.begin(db, run_id, "worker", 1)
        runs.end(db, run_id, status)
    assert {s.status for s in runs.states(db, lab)} == {"finished", "stopped", "failed", "cancelled"}
    assert all(s.status not in ACTIVE and s.ended for s in runs.states(db, lab))
