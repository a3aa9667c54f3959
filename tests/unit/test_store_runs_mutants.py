"""Tests written for mutmut's survivors in seqviz/store/runs.py (issue 28, scripts/mutation seqviz/store/runs.py), on
SQLite and PostgreSQL: a run from its submission to a worker's reports, read back with SQL: every field a new run
is written with, calls without ``now`` (the clock's time), which of two runs a join or a finished key finds, who
follows a run and in what order, what a second begin and ``begin_again`` say word for word and keep, the fields a
report writes, snapshots thinned exactly. Its end, a stop, what ``states`` and ``paces`` read, who waits for
whom: test_store_run_ends_mutants.py."""

from __future__ import annotations

import pickle
import time
from dataclasses import asdict

import pytest
import sqlalchemy as sa
from store_fixtures import count, named, spec

from seqviz import limits
from seqviz.progress import PHASES, Report
from seqviz.store import labs, models, runs
from seqviz.store.schema import Run, RunFollower

KEY = "k" * 64


def _lab(db, now=None) -> str:
    return labs.open_lab(db, None, now=now).id


def _row(db, run_id) -> dict | None:
    """The run's row, every column."""
    with db.transaction(reading=True) as session:
        run = session.get(Run, run_id)
        return None if run is None else {column.key: getattr(run, column.key) for column in Run.__table__.columns}


def _follower(db, run_id, lab_id) -> dict | None:
    with db.transaction(reading=True) as session:
        found = session.get(RunFollower, (run_id, lab_id))
        return None if found is None else {"joined_at": found.joined_at, "left_at": found.left_at,
                                           "model_id": found.model_id}


def _model_id(db, lab, name) -> int:
    model, _ = models.add(db, lab, named(name), within_limits=False)
    return models.model_id(db, lab, model.fingerprint)


def _sql(db, statement: str, **params) -> None:
    with db.engine.begin() as connection:
        connection.execute(sa.text(statement), params)


# --- A new run, and a join -----------------------------------------------------------------------------------


def test_a_new_run_is_written_queued_with_nothing_done_and_its_lab_following_it(db):
    lab = _lab(db)
    run_id, how = runs.create_or_join(db, lab, spec("recorded", steps=40), watch={"sentence": "a cat"}, now=7.0,
                                      key=KEY)
    assert how == "new" and len(run_id) == 32 and int(run_id, 16) >= 0
    assert _row(db, run_id) == {
        "id": run_id, "lab_id": lab, "key": KEY, "name": "recorded", "spec": asdict(spec("recorded", steps=40)),
        "watch": {"sentence": "a cat"}, "status": "queued", "phase": None, "step": 0, "steps": 40,
        "trained_s": 0.0, "losses": [], "metric_history": [], "stop_requested": False, "stop_reason": None,
        "error": None, "note": None, "metrics": None, "train_seconds": None, "model_id": None, "worker": None,
        "worker_pid": None, "attempts": 0, "saved_step": 0, "submitted_at": 7.0, "started_at": None,
        "ended_at": None, "updated_at": 7.0}
    assert _follower(db, run_id, lab) == {"joined_at": 7.0, "left_at": None, "model_id": None}
    assert runs.create(db, lab, spec("plain")) != run_id and _row(db, runs.create(db, lab, spec()))["key"] is None


def test_a_run_of_a_family_that_counts_is_written_as_one_step(db):
    """steps_to_run, not steps: the bag of words learns in one pass whatever ``steps`` says."""
    from seqviz.runs import RunSpec

    run_id = runs.create(db, _lab(db), RunSpec(task="emails", family="bow", steps=50))
    assert _row(db, run_id)["steps"] == 1


def test_create_or_join_without_now_takes_the_clocks_time_for_the_run_and_for_a_joining_lab(db):
    first, second = _lab(db), _lab(db)
    before = time.time()
    run_id = runs.create_or_join(db, first, spec(), key=KEY)[0]
    after = time.time()
    row = _row(db, run_id)
    assert before <= row["submitted_at"] == row["updated_at"] <= after
    assert _follower(db, run_id, first)["joined_at"] == row["submitted_at"]
    before = time.time()
    assert runs.create_or_join(db, second, spec(), key=KEY) == (run_id, "joined")
    assert before <= _follower(db, run_id, second)["joined_at"] <= time.time()


def test_a_join_follows_the_longest_queued_of_two_active_runs_with_the_key(db):
    """Two active runs share a key once a worker rekeys them: a join takes the one submitted first, though it was
    written second."""
    first, second, joiner = _lab(db), _lab(db), _lab(db)
    newer = runs.create_or_join(db, first, spec(), key="a" * 64, now=20.0)[0]
    older = runs.create_or_join(db, second, spec(), key="b" * 64, now=10.0)[0]
    runs.rekey(db, older, KEY)
    assert (_row(db, older)["key"], _row(db, newer)["key"]) == (KEY, "a" * 64)  # only the run named
    runs.rekey(db, newer, KEY)
    assert runs.create_or_join(db, joiner, spec(), key=KEY, now=30.0) == (older, "joined")
    assert _follower(db, older, joiner) == {"joined_at": 30.0, "left_at": None, "model_id": None}


def test_admission_counts_the_store_and_the_lab_asking(db):
    mine, other = _lab(db), _lab(db)
    runs.create(db, other, spec())
    runs.begin(db, runs.create(db, other, spec()), "worker", 1)
    runs.create(db, mine, spec())
    told = []
    runs.create_or_join(db, mine, spec(), admit=lambda total, lab, joining: told.append((total, lab, joining)))
    assert told == [({"queued": 2, "running": 1}, {"queued": 1, "running": 0}, False)]


# --- A finished run, followers --------------------------------------------------------------------------------


def test_a_finished_key_finds_the_run_that_ended_last(db):
    lab = _lab(db)
    found = []
    for n in range(2):  # the second is new: the first has finished
        run_id = runs.create_or_join(db, lab, spec(f"run {n}"), key=KEY)[0]
        runs.begin(db, run_id, "worker", 1)
        runs.end(db, run_id, "finished", step=1, model_id=_model_id(db, lab, f"model {n}"))
        found.append(run_id)
    other = runs.create_or_join(db, lab, spec("another key"), key="o" * 64)[0]
    runs.end(db, other, "finished", step=1, model_id=_model_id(db, lab, "another key's"))  # ended last
    assert found[0] != found[1]
    assert runs.finished_model(db, KEY) == (found[1], named("model 1"))


def test_following_a_finished_run_records_the_lab_now_with_its_copy_and_again_after_it_left(db):
    first, second = _lab(db), _lab(db)
    run_id = runs.create(db, first, spec())
    model_id = _model_id(db, second, "a copy")
    before = time.time()
    runs.follow_finished(db, second, run_id, model_id)
    assert before <= _follower(db, run_id, second)["joined_at"] <= time.time()
    assert _follower(db, run_id, second)["model_id"] == model_id
    joined_at = _follower(db, run_id, second)["joined_at"]
    _sql(db, "UPDATE run_followers SET left_at = 5.0, model_id = NULL")
    runs.follow_finished(db, second, run_id, model_id)
    assert _follower(db, run_id, second) == {"joined_at": joined_at, "left_at": None, "model_id": model_id}
    assert _follower(db, run_id, first) == {"joined_at": _row(db, run_id)["submitted_at"], "left_at": 5.0,
                                            "model_id": None}


def test_followers_come_in_the_order_they_joined_and_a_delivered_copy_is_the_followers_own(db):
    first, second, third = _lab(db), _lab(db), _lab(db)
    run_id = runs.create_or_join(db, first, spec(), key=KEY, now=20.0)[0]
    runs.create_or_join(db, second, spec(), key=KEY, now=10.0)  # (a clock behind: joined "before")
    runs.create_or_join(db, third, spec(), key=KEY, now=30.0)
    assert runs.following(db, run_id) == [second, first, third]
    own = runs.create(db, first, spec())
    runs.delivered(db, run_id, first, model_id := _model_id(db, first, "delivered"))
    assert [_follower(db, run_id, lab)["model_id"] for lab in (first, second, third)] == [model_id, None, None]
    assert _follower(db, own, first)["model_id"] is None  # the lab's other run: not this copy
    assert runs.following(db, run_id, without_model=True) == [second, third]
    runs.request_stop(db, second, run_id)
    assert runs.following(db, run_id) == [first, third]


def test_a_forgotten_labs_run_goes_to_the_follower_that_came_first_among_those_still_following(db):
    owner, left, later, earlier = _lab(db), _lab(db), _lab(db), _lab(db)
    run_id = runs.create_or_join(db, owner, spec(), key=KEY, now=1.0)[0]
    for lab, now in ((left, 2.0), (later, 4.0), (earlier, 3.0)):
        runs.create_or_join(db, lab, spec(), key=KEY, now=now)
    runs.request_stop(db, left, run_id)
    bystander = runs.create(db, by := _lab(db), spec(), now=0.5)  # follows another run only: no heir
    kept = runs.create_or_join(db, first := _lab(db), spec(), key="q" * 64, now=0.1)[0]
    runs.create_or_join(db, _lab(db), spec(), key="q" * 64, now=0.2)
    runs.request_stop(db, first, kept)  # its lab left it: still the lab its record hangs off
    labs.forget(db, owner)
    assert _row(db, run_id)["lab_id"] == earlier
    assert (_row(db, kept)["lab_id"], _row(db, bystander)["lab_id"]) == (first, by)
    labs.forget(db, earlier)
    assert _row(db, run_id)["lab_id"] == later
    labs.forget(db, later)
    assert _row(db, run_id)["lab_id"] == left  # one that left is an heir too, the last one
    labs.forget(db, left)
    assert _row(db, run_id) is None and _row(db, bystander) is not None


# --- A worker's calls -------------------------------------------------------------------------------------------


def test_unfinished_running_workers_and_queued_specs_read_the_right_runs_in_submission_order(db):
    lab = _lab(db)
    late = runs.create(db, lab, spec("late", steps=30), now=30.0)
    early = runs.create(db, lab, spec("early", steps=10), now=10.0)
    middle = runs.create(db, lab, spec("middle", steps=20), now=20.0)
    ended = runs.create(db, lab, spec("ended"), now=5.0)
    runs.begin(db, middle, "tcp://a:1", 11, now=40.0)
    runs.begin(db, ended, "tcp://b:2", 22, now=40.0)
    runs.end(db, ended, "failed")
    assert runs.unfinished(db) == [(early, "queued", 10.0), (middle, "running", 40.0), (late, "queued", 30.0)]
    assert runs.workers(db) == {middle: ("tcp://a:1", 11)}
    assert [(run_id, fields["steps"]) for run_id, fields in runs.queued_specs(db)] == [(early, 10), (late, 30)]
    assert runs.running(db) == [(asdict(spec("middle", steps=20)), 0, 20, 0.0, 40.0)]


def test_the_queued_phase_is_written_to_queued_runs_only(db):
    lab = _lab(db)
    queued, running = runs.create(db, lab, spec()), runs.create(db, lab, spec())
    runs.begin(db, running, "worker", 1)
    runs.set_queued_phase(db, "cluster")
    assert (_row(db, queued)["phase"], _row(db, running)["phase"]) == ("cluster", "starting")
    assert runs.states(db, lab, queued)[0].phase == PHASES["cluster"]
    runs.set_queued_phase(db, None)
    assert _row(db, queued)["phase"] is None


def test_a_queued_run_asked_to_stop_is_cancelled_when_a_worker_would_begin_it(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec(), now=1.0)
    _sql(db, "UPDATE runs SET stop_requested = :yes", yes=True)
    assert runs.begin(db, run_id, "worker", 1, now=50.0) is None
    row = _row(db, run_id)
    assert (row["status"], row["ended_at"], row["updated_at"], row["attempts"], row["worker"]) == (
        "cancelled", 50.0, 50.0, 0, None)


def test_a_begin_without_now_starts_the_run_at_the_clocks_time_and_a_second_keeps_its_start(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec(), now=1.0)
    before = time.time()
    began = runs.begin(db, run_id, "first", 1)
    row = _row(db, run_id)
    assert before <= row["started_at"] == row["updated_at"] <= time.time()
    assert (row["status"], row["phase"], row["note"], row["attempts"], began["stop"]) == (
        "running", "starting", None, 1, False)
    runs.request_stop(db, lab, run_id)
    again = runs.begin(db, run_id, "second", 2, now=row["started_at"] + 100)
    assert again["stop"] is True and again["attempts"] == 2
    assert _row(db, run_id)["started_at"] == row["started_at"]
    assert _row(db, run_id)["updated_at"] == row["started_at"] + 100


def test_a_second_begin_says_where_it_goes_on_from_and_keeps_what_came_up_to_the_saved_step(db):
    lab = _lab(db)
    run_id, other = runs.create(db, lab, spec()), runs.create(db, lab, spec())
    for each in (other, run_id):
        runs.begin(db, each, "lost", 1)
        runs.report(db, each, Report(step=9, losses=[(5, 0.5), (6, 0.6), (7, 0.7)], metrics=[(6, 0.1), (7, 0.2)],
                                     snapshots=[(s, pickle.dumps(s)) for s in (5, 6, 7)]))
    runs.save_point(db, run_id, 6, b"at 6")
    runs.begin(db, run_id, "new", 2)
    row = _row(db, run_id)
    assert row["note"] == ("Its worker stopped at step 9; it went on from its last saved point (step 6) on another "
                           "worker.")
    assert (row["step"], row["losses"], row["metric_history"]) == (6, [[5, 0.5], [6, 0.6]], [[6, 0.1]])
    assert [s for s, _ in runs.states(db, lab, run_id)[0].snapshots] == [5, 6]
    assert [s for s, _ in runs.states(db, lab, other)[0].snapshots] == [5, 6, 7]  # another run's stay


def test_a_second_begin_without_a_saved_point_says_it_began_again(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "lost", 1)
    runs.report(db, run_id, Report(step=4, losses=[(0, 1.0), (4, 0.5)]))
    runs.begin(db, run_id, "new", 2)
    row = _row(db, run_id)
    assert row["note"] == "Its worker stopped at step 4 before a point was saved; it began again."
    assert (row["step"], row["losses"]) == (0, [[0, 1.0]])


def test_begin_again_starts_the_runs_record_from_step_0_saying_why_in_at_most_1000_characters(db):
    lab = _lab(db)
    run_id, other = runs.create(db, lab, spec()), runs.create(db, lab, spec())
    for each in (run_id, other):
        runs.begin(db, each, "worker", 1)
        runs.report(db, each, Report(step=5, losses=[(5, 0.5)], metrics=[(5, 0.1)], snapshots=[(5, b"x")]))
        runs.save_point(db, each, 5, b"at 5")
    runs.begin_again(db, run_id, "The saved point was damaged")
    row = _row(db, run_id)
    assert row["note"] == "The saved point was damaged; it began again from step 0."
    assert (row["step"], row["saved_step"], row["losses"], row["metric_history"]) == (0, 0, [], [])
    for table in ("run_snapshots", "run_points"):  # this run's go, the other run's stay
        assert [count(db, table, "WHERE run_id = :id", id=each) for each in (run_id, other)] == [0, 1]
    assert _row(db, other)["saved_step"] == 5
    runs.begin_again(db, run_id, "w" * 971)  # a note of 1000 characters exactly, and one more cut
    assert _row(db, run_id)["note"] == "w" * 971 + "; it began again from step 0."
    runs.begin_again(db, run_id, "w" * 972)
    assert _row(db, run_id)["note"] == "w" * 972 + "; it began again from step 0"
    runs.end(db, other, "failed")
    runs.begin_again(db, other, "too late")
    assert _row(db, other)["note"] is None and _row(db, other)["saved_step"] == 5  # ended: left as it is


# --- Reports --------------------------------------------------------------------------------------------------


def test_a_report_writes_each_field_it_brings_as_numbers_and_leaves_the_others(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "worker", 1, now=1.0)
    runs.report(db, run_id, Report(phase="data", step=3, trained_s=1.5, losses=[(1.0, 2)], metrics=[(2.0, 1)],
                                   error="a warning", stop_reason="time limit"), now=2.0)
    runs.report(db, run_id, Report(losses=[(4, 0.5)]), now=3.0)
    row = _row(db, run_id)
    assert (row["phase"], row["step"], row["trained_s"], row["error"], row["stop_reason"], row["updated_at"]) == (
        "data", 3, 1.5, "a warning", "time limit", 3.0)
    assert row["losses"] == [[1, 2.0], [4, 0.5]] and row["metric_history"] == [[2, 1.0]]
    assert [type(v) for pair in row["losses"][:1] + row["metric_history"] for v in pair] == [int, float] * 2
    runs.report(db, run_id, Report(stop_reason="nobody looking"))
    assert _row(db, run_id)["stop_reason"] == "time limit"
    before = time.time()
    runs.report(db, run_id, Report())
    assert before <= _row(db, run_id)["updated_at"] <= time.time()


def test_a_report_reads_the_latest_look_of_the_labs_still_following(db):
    first, second, third = _lab(db, now=100.0), _lab(db, now=300.0), _lab(db, now=200.0)
    run_id = runs.create_or_join(db, first, spec(), key=KEY)[0]
    for lab in (second, third):
        runs.create_or_join(db, lab, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    assert runs.report(db, run_id, Report()).last_seen == 300.0
    runs.request_stop(db, second, run_id)
    assert runs.report(db, run_id, Report()).last_seen == 200.0


@pytest.mark.parametrize(("stored", "kept"), [(6, [1, 2, 3, 4, 5, 6]), (7, [1, 3, 5, 7]), (8, [2, 4, 6, 8]),
                                              (13, [1, 5, 9, 13])])
def test_snapshots_are_thinned_to_every_other_one_from_the_newest_only_when_over_the_limit(db, monkeypatch, stored,
                                                                                          kept):
    monkeypatch.setattr(limits, "TRAIN_MAX_SNAPSHOTS", 6)
    lab = _lab(db)
    run_id, other = runs.create(db, lab, spec()), runs.create(db, lab, spec())
    for each in (other, run_id):
        runs.begin(db, each, "worker", 1)
    runs.report(db, other, Report(snapshots=[(s, pickle.dumps(s)) for s in range(1, 7)]))
    runs.report(db, run_id, Report(snapshots=[(s, pickle.dumps(s)) for s in range(stored, 0, -1)]))
    assert [s for s, _ in runs.states(db, lab, run_id)[0].snapshots] == kept
    assert len(runs.states(db, lab, other)[0].snapshots) == 6  # another run's are not counted


def test_snapshots_of_one_step_are_thinned_newest_written_first(db, monkeypatch):
    monkeypatch.setattr(limits, "TRAIN_MAX_SNAPSHOTS", 3)
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    runs.begin(db, run_id, "worker", 1)
    runs.report(db, run_id, Report(snapshots=[(1, pickle.dumps(name)) for name in ("a", "b", "c", "d")]))
    assert runs.states(db, lab, run_id)[0].snapshots == ((1, "b"), (1, "d"))  # d, c, b, a: every other one goes


def test_a_saved_point_records_its_step_and_the_clocks_time(db):
    lab = _lab(db)
    run_id, other = runs.create(db, lab, spec()), runs.create(db, lab, spec())
    for each in (run_id, other):
        runs.begin(db, each, "worker", 1, now=1.0)
    before = time.time()
    runs.save_point(db, run_id, 8, b"at 8")
    row = _row(db, run_id)
    assert row["saved_step"] == 8 and before <= row["updated_at"] <= time.time()
    assert (_row(db, other)["saved_step"], _row(db, other)["updated_at"]) == (0, 1.0)  # another running run's
    runs.save_point(db, run_id, 9, b"at 9")  # the newest replaces it
    assert count(db, "run_points") == 1 and runs.begin(db, run_id, "new", 2)["saved_state"] == b"at 9"

