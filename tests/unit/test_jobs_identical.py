"""Identical runs are trained once, on a real Dask cluster and lab store: labs asking for the same run while it
waits or trains follow the one run, which trains once and gives each its own copy of the same weights (bit for bit
an uninterrupted run's); a lab asking after it finished has the model at once, with nothing trained; stopping a
shared run leaves it to the others. The store's side on both backends: tests/unit/test_store_identical_runs.py.
"""

from __future__ import annotations

import dataclasses

import test_jobs as engine
from test_jobs import LONG, ended, held_keys, new_lab, reached, same_weights, state, tiny, uninterrupted, weights

from seqviz.jobs import KEY_PREFIX
from seqviz.runs import RunSpec
from seqviz.store import models, runs

cluster, managers, sqlite_db = engine.cluster, engine.managers, engine.sqlite_db  # the run engine's fixtures
# Long enough that the class asks while it trains (a few seconds here), short enough to finish.
CLASS_RUN = RunSpec(task="emails", family="lstm", embedding=8, hidden=8, steps=300, batch_size=16, seed=5)


def test_a_class_asking_for_one_run_trains_it_once_and_each_gets_the_same_weights(sqlite_db, managers, cluster):
    db = sqlite_db
    manager = managers(db, train_identical_once=True)
    class_labs = [new_lab(db) for _ in range(6)]
    first = manager.submit(class_labs[0], CLASS_RUN)
    reached(db, class_labs[0], first)
    asked = [manager.submit(lab, dataclasses.replace(CLASS_RUN, name=f"student {n}"))
             for n, lab in enumerate(class_labs[1:], 1)]
    assert set(asked) == {first}
    assert runs.counts(db) == {"queued": 0, "running": 1} and len(held_keys(cluster)) == 1
    assert state(db, class_labs[3], first).followers == 6
    ends = [ended(db, lab, first) for lab in class_labs]
    assert {s.status for s in ends} == {"finished"} and len({s.fingerprint for s in ends}) == 1
    expected = uninterrupted(CLASS_RUN)
    for lab, done in zip(class_labs, ends, strict=True):
        assert same_weights(weights(db, lab, done.fingerprint), expected)

    late = new_lab(db)  # after it finished: its model at once, nothing trained
    assert manager.submit(late, CLASS_RUN) == first
    taken = state(db, late, first)
    assert taken.status == "finished" and taken.fingerprint == ends[0].fingerprint and taken.followers == 7
    assert taken.losses == ends[0].losses and taken.metric_history == ends[0].metric_history
    assert [m.fingerprint for m in models.listed(db, late)] == [ends[0].fingerprint]
    assert runs.counts(db) == {"queued": 0, "running": 0}
    assert set(held_keys(cluster)) <= {KEY_PREFIX + first}  # (the ended run's task may still be finishing)


def test_a_different_seed_trains_apart_and_a_follower_that_stops_leaves_the_run_to_the_others(sqlite_db, managers):
    db = sqlite_db
    manager = managers(db, train_identical_once=True)
    leaver, stayer, apart = new_lab(db), new_lab(db), new_lab(db)
    shared = manager.submit(leaver, LONG)
    assert manager.submit(stayer, LONG) == shared
    other = manager.submit(apart, dataclasses.replace(LONG, seed=LONG.seed + 1))
    assert other != shared
    reached(db, leaver, shared, 5)
    assert manager.stop(leaver, shared) == "left"
    assert state(db, leaver, shared).stop_reason == "left" and state(db, stayer, shared).status == "running"
    reached(db, stayer, shared, state(db, stayer, shared).step + 5)  # it trains on for the other
    assert manager.stop(stayer, shared) == "running"  # the last one: the training stops, keeping what it learned
    done = ended(db, stayer, shared)
    assert done.status == "stopped" and done.fingerprint is not None
    assert models.listed(db, leaver) == [] and state(db, leaver, shared).fingerprint is None
    reached(db, apart, other)  # (on the other worker, at the same time)
    manager.stop(apart, other)
    assert ended(db, apart, other).fingerprint is not None


def test_a_stopped_run_is_not_taken_as_finished(sqlite_db, managers):
    db = sqlite_db
    manager = managers(db, train_identical_once=True)
    first, second = new_lab(db), new_lab(db)
    run_id = manager.submit(first, tiny(steps=4000))
    reached(db, first, run_id, 3)
    manager.stop(first, run_id)
    assert ended(db, first, run_id).status == "stopped"
    again = manager.submit(second, tiny(steps=4000))
    assert again != run_id and state(db, second, again).status in ("queued", "running")
    manager.stop(second, again)
