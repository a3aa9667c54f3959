"""Tests written for mutmut's survivors in seqviz/store/runs.py (issue 28, scripts/mutation seqviz/store/runs.py), on
SQLite and PostgreSQL: a run's end (the fields it writes and those it leaves, its model, pruning), a lab asking it
to stop, what ``states`` reads for a page (the expected end, times, a lab that left, damaged records) and the
paces of ended runs, read back with SQL; who waits for whom. A run's start and reports: test_store_runs_mutants.py."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from store_fixtures import backend, count, in_threads, meeting_at_first_write, spec
from test_store_runs_mutants import KEY, _follower, _lab, _model_id, _row, _sql

from seqviz import limits
from seqviz.progress import PHASES, Report
from seqviz.store import models, runs
from seqviz.store.schema import Run


def _running(db, lab, **report) -> str:
    run_id = runs.create(db, lab, spec(steps=100))
    runs.begin(db, run_id, "worker", 1)
    if report:
        runs.report(db, run_id, Report(**report))
    return run_id


# --- The end -----------------------------------------------------------------------------------------------------


def test_an_end_writes_the_clocks_time_drops_its_saved_point_and_keeps_what_it_is_not_given(db):
    lab = _lab(db)
    run_id, other = _running(db, lab, step=7, trained_s=3.0), _running(db, lab)
    for each in (run_id, other):
        runs.save_point(db, each, 5, b"at 5")
    before = time.time()
    runs.end(db, run_id, "failed")
    row = _row(db, run_id)
    assert (row["status"], row["phase"], row["step"], row["trained_s"], row["metrics"], row["train_seconds"],
            row["model_id"], row["error"], row["stop_reason"]) == ("failed", None, 7, 3.0, None, None, None, None, None)
    assert before <= row["ended_at"] == row["updated_at"] <= time.time()
    assert count(db, "run_points") == 1 and _row(db, other)["saved_step"] == 5  # the other run's point stays


def test_an_end_writes_every_field_it_is_given(db):
    lab = _lab(db)
    run_id = _running(db, lab, step=7, trained_s=3.0)
    model_id = _model_id(db, lab, "ended")
    runs.end(db, run_id, "failed", step=9, metrics={"accuracy": 0.5}, train_seconds=4.5, trained_s=4.0,
             model_id=model_id, error="out of memory", stop_reason="time limit")
    row = _row(db, run_id)
    assert (row["step"], row["metrics"], row["train_seconds"], row["trained_s"], row["model_id"], row["error"],
            row["stop_reason"]) == (9, {"accuracy": 0.5}, 4.5, 4.0, model_id, "out of memory", "time limit")


def test_the_headline_replaces_the_metric_at_the_last_step(db):
    lab = _lab(db)
    run_id = _running(db, lab, step=20, metrics=[(10, 0.5), (20, 0.7)])
    runs.end(db, run_id, "finished", headline=1)
    assert _row(db, run_id)["metric_history"] == [[10, 0.5], [20, 1.0]]
    assert type(_row(db, run_id)["metric_history"][1][1]) is float
    other = _running(db, lab, step=20, metrics=[(10, 0.5)])
    runs.end(db, other, "finished", step=30, headline=0.75)
    assert _row(db, other)["metric_history"] == [[10, 0.5], [30, 0.75]]


def test_an_ends_stop_reason_is_kept_only_when_there_is_none_and_a_finished_run_has_none(db):
    lab = _lab(db)
    asked = _running(db, lab, stop_reason="asked")
    runs.end(db, asked, "stopped", stop_reason="time limit")
    assert _row(db, asked)["stop_reason"] == "asked"
    finished = _running(db, lab, stop_reason="time limit")
    runs.end(db, finished, "finished", stop_reason="nobody looking")
    assert _row(db, finished)["stop_reason"] is None


def test_an_ends_model_is_the_copy_of_the_lab_the_record_hangs_off_only(db):
    owner, joiner = _lab(db), _lab(db)
    run_id = runs.create_or_join(db, owner, spec(), key=KEY)[0]
    runs.create_or_join(db, joiner, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    other = runs.create(db, owner, spec())
    owners = _model_id(db, owner, "the owner's")
    runs.end(db, run_id, "finished", model_id=owners)
    assert [_follower(db, run_id, lab)["model_id"] for lab in (owner, joiner)] == [owners, None]
    assert _follower(db, other, owner)["model_id"] is None  # the lab's other run: not this model
    runs.end(db, other, "finished", model_id=_model_id(db, joiner, "another lab's"))  # not the owner's: no copy
    assert _follower(db, other, owner)["model_id"] is None
    third = runs.create(db, owner, spec())
    runs.delivered(db, third, owner, delivered := _model_id(db, owner, "delivered"))
    runs.end(db, third, "finished", model_id=owners)  # a copy delivered already stays
    assert _follower(db, third, owner)["model_id"] == delivered


def test_an_end_prunes_every_following_labs_oldest_ended_runs_and_a_run_another_lab_follows_stays(db, monkeypatch):
    bystander = _lab(db)
    for _ in range(2):
        runs.end(db, runs.create(db, bystander, spec()), "finished")
    monkeypatch.setattr(limits, "TRAIN_MAX_KEPT_PER_OWNER", 1)  # (the bystander's two: none of its runs ends now)
    mine, yours = _lab(db), _lab(db)
    shared = runs.create_or_join(db, mine, spec(), key=KEY, now=1.0)[0]
    runs.create_or_join(db, yours, spec(), key=KEY, now=2.0)
    runs.end(db, shared, "finished")
    own = runs.create(db, yours, spec(), now=3.0)
    runs.end(db, own, "finished")  # yours: the shared run (joined at 2.0) goes for it, not for mine
    assert [s.id for s in runs.states(db, yours)] == [own] and [s.id for s in runs.states(db, mine)] == [shared]
    mine_later = runs.create(db, mine, spec(), now=4.0)
    active = runs.create(db, mine, spec(), now=5.0)
    runs.end(db, mine_later, "finished")  # mine too: the shared run, which nobody follows now, is gone
    assert [s.id for s in runs.states(db, mine)] == [active, mine_later] and _row(db, shared) is None
    late = runs.create(db, yours, spec(), now=6.0)
    runs.create_or_join(db, yours, spec(), key="j" * 64, now=7.0)
    joined = runs.create_or_join(db, mine, spec(), key="j" * 64, now=0.5)[0]  # (a clock behind: mine's oldest)
    runs.end(db, joined, "stopped")  # an end prunes every follower's runs: yours lose `own`, mine this one
    assert [s.id for s in runs.states(db, yours)] == [joined, late] and _row(db, own) is None
    assert [s.id for s in runs.states(db, mine)] == [active, mine_later]
    assert len(runs.states(db, bystander)) == 2  # a lab following none of the runs that ended is not pruned


# --- Asking to stop ----------------------------------------------------------------------------------------------


def test_a_queued_run_asked_to_stop_is_cancelled_at_the_clocks_time(db):
    lab = _lab(db)
    runs.create(db, _lab(db), spec(), now=0.5)  # another lab's run: its follower follows no run of this lab's
    run_id = runs.create(db, lab, spec(), now=1.0)
    before = time.time()
    assert runs.request_stop(db, lab, run_id) == "cancelled"
    row = _row(db, run_id)
    assert before <= row["ended_at"] == row["updated_at"] <= time.time() and row["stop_requested"] is True
    assert runs.request_stop(db, lab, run_id) == "cancelled" and _row(db, run_id) == row


def test_a_running_run_asked_to_stop_is_flagged_once_and_keeps_a_reason_it_had(db):
    lab = _lab(db)
    run_id = _running(db, lab, stop_reason="time limit")
    _sql(db, "UPDATE runs SET updated_at = 1.0")
    before = time.time()
    assert runs.request_stop(db, lab, run_id) == "running"
    row = _row(db, run_id)
    assert (row["stop_requested"], row["stop_reason"], row["ended_at"]) == (True, "time limit", None)
    assert before <= row["updated_at"] <= time.time()
    _sql(db, "UPDATE runs SET updated_at = 1.0")
    assert runs.request_stop(db, lab, run_id) == "running" and _row(db, run_id)["updated_at"] == 1.0
    runs.end(db, run_id, "stopped")
    assert runs.request_stop(db, lab, run_id) == "stopped" and _row(db, run_id)["status"] == "stopped"


def test_a_shared_run_that_ended_is_left_as_it_ended_when_a_lab_asks_it_to_stop(db):
    first, second = _lab(db), _lab(db)
    run_id = runs.create_or_join(db, first, spec(), key=KEY)[0]
    runs.create_or_join(db, second, spec(), key=KEY)
    runs.end(db, run_id, "finished")
    row = _row(db, run_id)
    assert runs.request_stop(db, first, run_id) == "finished"
    assert _row(db, run_id) == row and _follower(db, run_id, first)["left_at"] is None


def test_a_lab_leaving_a_shared_run_leaves_at_the_clocks_time_and_one_that_left_does_not_count(db):
    first, second = _lab(db), _lab(db)
    run_id = runs.create_or_join(db, first, spec(), key=KEY)[0]
    runs.create_or_join(db, second, spec(), key=KEY)
    before = time.time()
    assert runs.request_stop(db, second, run_id) == "left"
    assert before <= _follower(db, run_id, second)["left_at"] <= time.time()
    assert _row(db, run_id)["status"] == "queued"
    assert runs.request_stop(db, first, run_id) == "cancelled"  # the one that left is no other follower


# --- What a page reads -------------------------------------------------------------------------------------------


def test_reading_the_runs_never_waits_for_a_writer(db):
    lab = _lab(db)
    run_id = runs.create_or_join(db, lab, spec(), key=KEY, now=1.0)[0]
    with db.engine.begin() as writer:  # SQLite: the write lock (BEGIN IMMEDIATE); PostgreSQL: the run's row
        writer.execute(sa.text("UPDATE runs SET step = 3"))
        # Each returns while the writer holds its lock (a wait would end in SQLite's busy timeout's error, or
        # outlast in_threads' 30 s), with what was committed before the writer began.
        found = in_threads(lambda: runs.finished_model(db, KEY), lambda: runs.following(db, run_id),
                           lambda: runs.counts(db, lab), lambda: runs.unfinished(db), lambda: runs.workers(db),
                           lambda: [s.step for s in runs.states(db, lab)], lambda: runs.paces(db),
                           lambda: runs.running(db), lambda: runs.queued_specs(db)[0][0])
    assert found == [None, [lab], {"queued": 1, "running": 0}, [(run_id, "queued", 1.0)], {}, [0], [], [], run_id]



@pytest.mark.parametrize(("step", "trained_s", "eta"), [(10, 10.0, 90.0), (10, 100.0, 80.0), (10, 200.0, 0.0),
                                                         (0, 0.0, None)])
def test_a_running_runs_expected_end_is_its_pace_within_train_max_seconds(db, step, trained_s, eta):
    lab = _lab(db)
    run_id = _running(db, lab, step=step, trained_s=trained_s)
    assert limits.TRAIN_MAX_SECONDS == 180.0
    assert runs.states(db, lab, run_id)[0].eta_s == (None if eta is None else pytest.approx(eta))


def test_times_a_page_reads_queued_running_ended_and_begun_by_a_clock_ahead(db):
    lab = _lab(db)
    queued = runs.create(db, lab, spec())
    running = runs.create(db, lab, spec())
    runs.begin(db, running, "worker", 1, now=time.time() - 50)
    ended = _running(db, lab)
    runs.end(db, ended, "failed")
    _sql(db, "UPDATE runs SET started_at = 100.0, ended_at = 130.0 WHERE id = :id", id=ended)
    ahead = runs.create(db, lab, spec())
    runs.begin(db, ahead, "worker", 1, now=time.time() + 1000)
    states = {s.id: s for s in runs.states(db, lab)}
    assert (states[queued].elapsed_s, states[queued].eta_s, states[ended].eta_s) == (0.0, None, 0.0)
    assert states[running].elapsed_s == pytest.approx(50.0, abs=5.0) and states[ended].elapsed_s == 30.0
    assert states[ahead].elapsed_s == 0.0


def test_a_lab_that_left_sees_the_run_stopped_when_it_left_without_its_metrics(db):
    first, second = _lab(db), _lab(db)
    run_id = runs.create_or_join(db, first, spec(), key=KEY)[0]
    runs.create_or_join(db, second, spec(), key=KEY)
    runs.request_stop(db, second, run_id)
    _sql(db, "UPDATE run_followers SET left_at = 40.0 WHERE lab_id = :lab", lab=second)
    runs.begin(db, run_id, "worker", 1, now=10.0)
    runs.end(db, run_id, "finished", metrics={"accuracy": 0.5})
    gone, kept = runs.states(db, second, run_id)[0], runs.states(db, first, run_id)[0]
    assert (gone.status, gone.stop_reason, gone.metrics, gone.ended_at, gone.elapsed_s, gone.eta_s) == (
        "stopped", "left", None, 40.0, 30.0, 0.0)
    assert (kept.status, kept.metrics, kept.followers, gone.followers) == ("finished", {"accuracy": 0.5}, 1, 1)
    _sql(db, "UPDATE run_followers SET left_at = 50.0")
    assert runs.states(db, first, run_id)[0].followers == 0


def test_a_lab_that_left_a_queued_run_has_no_place_in_the_queue_nor_a_phase(db):
    first, second = _lab(db), _lab(db)
    run_id = runs.create_or_join(db, first, spec(), key=KEY)[0]
    runs.create_or_join(db, second, spec(), key=KEY)
    runs.set_queued_phase(db, "cluster")
    runs.request_stop(db, second, run_id)
    gone, kept = runs.states(db, second, run_id)[0], runs.states(db, first, run_id)[0]
    assert (gone.queue_position, gone.phase, kept.queue_position, kept.phase) == (None, None, 1, PHASES["cluster"])


def test_a_phase_the_pages_do_not_know_reads_as_written_and_an_ended_run_has_none(db):
    lab = _lab(db)
    run_id = _running(db, lab, phase="warming up")
    assert runs.states(db, lab, run_id)[0].phase == "warming up"
    runs.end(db, run_id, "stopped")
    _sql(db, "UPDATE runs SET phase = 'training'")
    assert runs.states(db, lab, run_id)[0].phase is None


def test_a_lab_joining_at_the_moment_the_run_was_submitted_asked_for_it_first_too(db):
    first, second, third = _lab(db), _lab(db), _lab(db)
    run_id = runs.create_or_join(db, first, spec(), key=KEY, now=10.0)[0]
    runs.create_or_join(db, second, spec(), key=KEY, now=10.0)
    runs.create_or_join(db, third, spec(), key=KEY, now=10.5)
    assert [runs.states(db, lab, run_id)[0].asked_first for lab in (first, second, third)] == [True, True, False]


def test_a_labs_runs_come_newest_joined_first_and_a_damaged_record_is_left_out(db):
    mine, yours = _lab(db), _lab(db)
    own = runs.create(db, mine, spec("own"), now=10.0)
    joined = runs.create_or_join(db, yours, spec("joined"), key=KEY, now=5.0)[0]
    runs.create_or_join(db, mine, spec(), key=KEY, now=20.0)
    damaged = runs.create(db, mine, spec("damaged"), now=15.0)
    wrong = runs.create(db, mine, spec("wrong"), now=12.0)
    assert [s.id for s in runs.states(db, mine)] == [joined, damaged, wrong, own]
    _sql(db, "UPDATE runs SET spec = :spec WHERE id = :id", spec='{"steps": 50, "colour": "red"}', id=damaged)
    _sql(db, "UPDATE runs SET spec = :spec WHERE id = :id", spec='{"task": "memory", "steps": 0}', id=wrong)
    assert [s.id for s in runs.states(db, mine)] == [joined, own]  # TypeError and ValueError: left out
    assert runs.states(db, mine, own)[0].metric_name == "held-out accuracy at distance 20"


def test_a_finished_runs_fingerprint_is_the_followers_own_copys(db):
    lab = _lab(db)
    run_id = _running(db, lab)
    model_id = _model_id(db, lab, "kept")
    runs.end(db, run_id, "finished", model_id=model_id)
    (model,) = [m for m in models.listed(db, lab) if m.name == "kept"]
    assert runs.states(db, lab, run_id)[0].fingerprint == model.fingerprint
    assert runs.states(db, lab, _running(db, lab))[0].fingerprint is None


# --- Paces --------------------------------------------------------------------------------------------------------


def _ended(db, lab, status, step, train_seconds, started_at, ended_at) -> str:
    run_id = _running(db, lab)
    runs.end(db, run_id, status, step=step, train_seconds=train_seconds)
    _sql(db, "UPDATE runs SET started_at = :started, ended_at = :ended WHERE id = :id", started=started_at,
         ended=ended_at, id=run_id)
    return run_id


def test_paces_are_of_finished_and_stopped_runs_that_took_a_timed_step_newest_ended_first(db, monkeypatch):
    monkeypatch.setattr(limits, "TRAIN_MAX_KEPT_PER_OWNER", 20)  # (none pruned)
    lab = _lab(db)
    _ended(db, lab, "finished", 10, 20.0, 100.0, 130.0)
    _ended(db, lab, "stopped", 4, 2.0, 100.0, 150.0)
    _ended(db, lab, "finished", 5, 10.0, None, 140.0)
    _ended(db, lab, "finished", 5, 10.0, 100.0, 100.0)
    _ended(db, lab, "failed", 5, 1.0, 100.0, 160.0)
    _ended(db, lab, "cancelled", 5, 1.0, 100.0, 170.0)
    _ended(db, lab, "finished", 0, 1.0, 100.0, 180.0)
    run_id = _ended(db, lab, "finished", 5, 1.0, 100.0, 190.0)
    _sql(db, "UPDATE runs SET train_seconds = NULL WHERE id = :id", id=run_id)
    paces = runs.paces(db)
    assert [(per_step, outside) for _spec, per_step, outside in paces] == [
        (0.5, 48.0), (2.0, 130.0), (2.0, 10.0), (2.0, 0.0)]  # (started at None: 0; ended before it began: 0 s)
    assert [outside for _spec, _per_step, outside in runs.paces(db, limit=2)] == [48.0, 130.0]
    assert paces[0][0]["steps"] == 100


def test_a_pace_of_a_record_without_its_times_counts_no_seconds_outside_training(db):
    """A record whose times are gone (another version's, or damaged): both read as 0, so none are outside."""
    _ended(db, _lab(db), "finished", 1, 0.5, None, None)
    assert [(per_step, outside) for _spec, per_step, outside in runs.paces(db)] == [(0.5, 0.0)]


def test_paces_read_the_newest_200_ended_runs_by_default(db):
    lab = _lab(db)
    with db.transaction() as session:
        for n in range(201):
            session.add(Run(id=f"{n:032x}", lab_id=lab, name="", spec={}, status="finished", step=1, steps=1,
                            trained_s=0.0, losses=[], metric_history=[], stop_requested=False, attempts=1,
                            saved_step=0, submitted_at=float(n), started_at=0.0, ended_at=float(n + 1),
                            train_seconds=float(n), updated_at=float(n)))
    paces = runs.paces(db)
    assert len(paces) == 200 and paces[-1][1] == 1.0  # the oldest (ended at 1.0, 0 s a step) left out


# --- Who waits for whom ---------------------------------------------------------------------------------------


def test_two_runs_asked_for_one_lab_at_once_take_turns_and_the_second_is_counted_with_the_first(db):
    """The lab's row is locked first: on PostgreSQL the two meet at their first write unless the lock makes one
    wait (SQLite lets one writer in at a time)."""
    lab = _lab(db)
    told = []

    def create():
        return runs.create_or_join(db, lab, spec(), admit=lambda total, mine, joining: told.append(mine["queued"]))

    with meeting_at_first_write(db, timeout_s=3.0):
        in_threads(create, create)
    assert sorted(told) == [0, 1] and runs.counts(db, lab)["queued"] == 2


def test_a_run_asked_for_waits_for_no_other_labs_row(db):
    if backend(db) == "sqlite":
        pytest.skip("SQLite has no row locks: one writing transaction at a time")
    lab, other = _lab(db), _lab(db)
    with db.engine.begin() as writer:
        writer.execute(sa.text("SELECT id FROM labs WHERE id = :lab FOR UPDATE"), {"lab": other})
        (run_id,) = in_threads(lambda: runs.create(db, lab, spec()))  # returns while the writer holds the lock
    assert _row(db, run_id)["lab_id"] == lab


def test_two_workers_beginning_one_run_at_once_count_two_attempts(db):
    lab = _lab(db)
    run_id = runs.create(db, lab, spec())
    with meeting_at_first_write(db, timeout_s=3.0):  # they meet, unless the row lock makes one wait
        began = in_threads(lambda: runs.begin(db, run_id, "a", 1), lambda: runs.begin(db, run_id, "b", 2))
    assert sorted(each["attempts"] for each in began) == [1, 2] and _row(db, run_id)["attempts"] == 2


def test_the_last_two_labs_asking_a_shared_run_to_stop_at_once_stop_it(db):
    """The run's row is locked first: the second counts the first as gone (on PostgreSQL they meet at their first
    write unless the lock makes one wait), and the run stops rather than train for nobody."""
    first, second = _lab(db), _lab(db)
    run_id = runs.create_or_join(db, first, spec(), key=KEY)[0]
    runs.create_or_join(db, second, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    with meeting_at_first_write(db, timeout_s=3.0):
        said = in_threads(lambda: runs.request_stop(db, first, run_id), lambda: runs.request_stop(db, second, run_id))
    assert sorted(said) == ["left", "running"] and _row(db, run_id)["stop_requested"] is True
