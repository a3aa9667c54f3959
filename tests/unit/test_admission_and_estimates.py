"""Whether the server takes a run (seqviz.admission) and when a waiting run is expected to start
(seqviz.queue_estimate): plain numbers in and out, no Dask, no database."""

from __future__ import annotations

import pytest

from seqviz import limits
from seqviz.admission import Load, RunRefused, admit
from seqviz.queue_estimate import GUESS_RUN_S, OVERHEAD_GUESS_S, Paces, Training, expected_starts, shape, steps_to_run

LSTM = {"task": "emails", "family": "lstm", "embedding": 16, "hidden": 16, "heads": 4, "layers": 1,
        "batch_size": 16, "steps": 100, "seed": 0, "lr": 0.003, "name": ""}
GRU = {**LSTM, "family": "gru"}
BOW = {"task": "emails", "family": "bow", "embedding": 64, "hidden": 64, "heads": 4, "layers": 1,
       "batch_size": 64, "steps": 600, "seed": 0, "lr": 0.003, "name": ""}


# ---- admission ---------------------------------------------------------------------------------------------------


def test_a_lab_one_below_its_cap_is_admitted_and_at_its_cap_refused():
    admit(Load(running=0, queued=0, lab_active=0), max_active_per_lab=1, max_queued=5)
    admit(Load(running=3, queued=2, lab_active=1), max_active_per_lab=2, max_queued=5)
    with pytest.raises(RunRefused, match="TRAIN_MAX_ACTIVE_PER_OWNER") as one:
        admit(Load(running=0, queued=0, lab_active=1), max_active_per_lab=1, max_queued=5)
    assert "You already have a run queued or training" in str(one.value)
    with pytest.raises(RunRefused) as two:
        admit(Load(running=1, queued=1, lab_active=2), max_active_per_lab=2, max_queued=5)
    assert "You already have 2 runs queued or training" in str(two.value)
    with pytest.raises(RunRefused, match="stop it or wait"):
        admit(Load(running=0, queued=0, lab_active=3), max_active_per_lab=2, max_queued=5)  # over: still refused


def test_a_queue_one_below_its_limit_admits_and_a_full_one_refuses_saying_how_busy():
    admit(Load(running=2, queued=4, lab_active=0), max_active_per_lab=1, max_queued=5)
    with pytest.raises(RunRefused) as full:
        admit(Load(running=2, queued=5, lab_active=0), max_active_per_lab=1, max_queued=5)
    message = str(full.value)
    assert message.startswith("The server is busy: 2 runs training and 5 waiting")
    assert "TRAIN_MAX_QUEUED" in message and "Try again" in message
    with pytest.raises(RunRefused, match="busy"):
        admit(Load(running=0, queued=0, lab_active=0), max_active_per_lab=1, max_queued=0)  # a queue of none


def test_the_lab_cap_is_said_before_the_full_queue_and_the_defaults_are_the_limits():
    with pytest.raises(RunRefused, match="You already have"):
        admit(Load(running=9, queued=9, lab_active=1), max_active_per_lab=1, max_queued=9)
    admit(Load(running=limits.TRAIN_MAX_QUEUED, queued=limits.TRAIN_MAX_QUEUED - 1,
               lab_active=limits.TRAIN_MAX_ACTIVE_PER_OWNER - 1))
    with pytest.raises(RunRefused, match="busy"):
        admit(Load(running=0, queued=limits.TRAIN_MAX_QUEUED, lab_active=0))
    with pytest.raises(RunRefused, match="already"):
        admit(Load(running=0, queued=0, lab_active=limits.TRAIN_MAX_ACTIVE_PER_OWNER))
    assert issubclass(RunRefused, RuntimeError)


# ---- paces --------------------------------------------------------------------------------------------------------


def test_a_shape_is_what_a_steps_pace_depends_on():
    assert shape(LSTM) == shape({**LSTM, "seed": 7, "lr": 0.01, "steps": 5000, "name": "mine"})
    assert shape(LSTM) != shape(GRU) and shape(LSTM) != shape({**LSTM, "hidden": 32})
    assert shape(LSTM) != shape({**LSTM, "batch_size": 32}) and shape(LSTM) != shape({**LSTM, "task": "memory"})


def test_steps_to_run_are_one_pass_for_a_family_that_counts():
    assert steps_to_run(LSTM) == 100 and steps_to_run(BOW) == 1
    assert steps_to_run({"family": "no such family", "steps": 7}) == 7 and steps_to_run({}) == 1


def test_without_history_a_run_is_guessed():
    paces = Paces([])
    assert paces.overhead == OVERHEAD_GUESS_S and paces.per_step == {}
    assert paces.run_s(LSTM) == GUESS_RUN_S + OVERHEAD_GUESS_S
    assert paces.run_s(BOW) == GUESS_RUN_S + OVERHEAD_GUESS_S


def test_ended_runs_of_the_same_shape_give_the_pace_and_every_ended_run_the_overhead():
    paces = Paces([(LSTM, 0.01, 2.0), ({**LSTM, "seed": 3}, 0.03, 4.0), (GRU, 1.0, 6.0)])
    assert paces.overhead == pytest.approx(4.0)  # of every run that ended
    assert paces.run_s(LSTM) == pytest.approx(0.02 * 100 + 4.0)  # the mean of its shape's paces, times its steps
    assert paces.run_s({**LSTM, "steps": 1000}) == pytest.approx(0.02 * 1000 + 4.0)
    assert paces.run_s({**LSTM, "hidden": 64}) == pytest.approx(GUESS_RUN_S + 4.0)  # no run of its shape yet
    slow = Paces([(LSTM, 10.0, 1.0)])
    assert slow.run_s({**LSTM, "steps": 5000}) == pytest.approx(limits.TRAIN_MAX_SECONDS + 1.0)  # the time limit


def test_a_bag_of_words_run_takes_its_one_pass_not_its_steps():
    paces = Paces([(BOW, 0.5, 1.0)])
    assert paces.run_s(BOW) == pytest.approx(0.5 + 1.0)


def test_without_an_ended_run_the_pace_of_runs_training_now_of_the_same_shape_is_used():
    training = [Training({**LSTM, "seed": 1}, step=10, steps=100, trained_s=2.0, started_ago_s=3.0),
                Training({**LSTM, "seed": 2}, step=20, steps=100, trained_s=2.0, started_ago_s=3.0),
                Training(LSTM, step=4, steps=100, trained_s=100.0, started_ago_s=101.0),  # too few steps to tell
                Training(GRU, step=50, steps=100, trained_s=500.0, started_ago_s=501.0)]  # another shape
    paces = Paces([])
    assert paces.run_s(LSTM, training) == pytest.approx((0.2 + 0.1) / 2 * 100 + OVERHEAD_GUESS_S)
    assert Paces([(LSTM, 0.5, 1.0)]).run_s(LSTM, training) == pytest.approx(0.5 * 100 + 1.0)  # ended runs first


# ---- expected starts ------------------------------------------------------------------------------------------


def test_with_free_workers_the_first_runs_start_now_and_the_rest_when_one_is_free():
    paces = Paces([(LSTM, 0.1, 2.0)])  # a run: 12 s
    assert expected_starts([], [LSTM, LSTM, LSTM, LSTM, LSTM], 2, paces) == pytest.approx([0, 0, 12, 12, 24])
    assert expected_starts([], [LSTM, LSTM], 1, paces) == pytest.approx([0, 12])
    assert expected_starts([], [LSTM, LSTM], 0, paces) == pytest.approx([0, 12])  # no slots counted yet: one
    assert expected_starts([], [], 3, paces) == []


def test_runs_training_free_their_workers_by_their_own_pace_or_by_their_shapes():
    paces = Paces([(LSTM, 0.1, 2.0)])
    going = Training(LSTM, step=50, steps=100, trained_s=10.0, started_ago_s=12.0)  # 0.2 s a step: 10 s left
    young = Training(LSTM, step=2, steps=100, trained_s=1.0, started_ago_s=5.0)  # its shape's 12 s, 5 s gone
    assert expected_starts([going], [LSTM], 1, paces) == pytest.approx([10.0 + 1.0])  # and half an overhead
    assert expected_starts([young], [LSTM], 1, paces) == pytest.approx([7.0])
    assert expected_starts([going, young], [LSTM, LSTM, LSTM], 2, paces) == pytest.approx([7.0, 11.0, 19.0])
    overdue = Training(LSTM, step=2, steps=100, trained_s=1.0, started_ago_s=60.0)
    assert expected_starts([overdue], [LSTM], 1, paces) == [0.0]  # never in the past
    capped = Training(LSTM, step=10, steps=5000, trained_s=limits.TRAIN_MAX_SECONDS - 4.0, started_ago_s=200.0)
    assert expected_starts([capped], [LSTM], 1, paces) == pytest.approx([4.0 + 1.0])  # it stops at the time limit


def test_more_slots_than_runs_training_leave_free_slots_and_starts_never_go_back():
    paces = Paces([(LSTM, 0.1, 2.0), (GRU, 0.3, 2.0)])
    going = Training(LSTM, step=50, steps=100, trained_s=10.0, started_ago_s=12.0)
    assert expected_starts([going], [GRU, LSTM], 3, paces) == [0.0, 0.0]
    starts = expected_starts([going], [GRU, LSTM, GRU, LSTM, LSTM, GRU], 2, paces)
    assert starts == sorted(starts) and starts[0] == 0.0


def test_extra_runs_are_like_the_last_one_and_a_run_submitted_now_waits_behind_the_queue():
    paces = Paces([(LSTM, 0.1, 2.0)])
    assert expected_starts([], [LSTM], 1, paces, extra=2) == pytest.approx([0, 12, 24])
    going = Training(LSTM, step=50, steps=100, trained_s=10.0, started_ago_s=12.0)
    assert expected_starts([going], [], 1, paces, extra=1) == pytest.approx([11.0])  # an empty queue: next free
    assert expected_starts([], [], 2, paces, extra=1) == [0.0]
