"""Identical runs are trained once, in the store: the identity key, labs following one run, leaving it, its model
delivered to each, a finished run taken at once, and a run that outlives the lab that first asked for it.

On both backends (the ``db`` fixture: SQLite and PostgreSQL). The run engine on a real cluster:
tests/unit/test_jobs_identical.py.
"""

from __future__ import annotations

import dataclasses
import functools
import time

import pytest
from store_fixtures import in_threads, named, spec

from seqviz import run_identity
from seqviz.progress import Control, Report
from seqviz.runs import RunSpec
from seqviz.store import labs, models, runs
from seqviz.store.schema import Lab

KEY = "k" * 64


def _lab(db) -> str:
    return labs.open_lab(db, None).id


def _state(db, lab_id, run_id):
    found = runs.states(db, lab_id, run_id)
    return found[0] if found else None


def _finish(db, run_id, data: bytes):
    """What the worker does at the end: a copy of the model for every follower, then the run's end."""
    for lab_id in runs.following(db, run_id, without_model=True):
        kept, _ = models.add(db, lab_id, data, within_limits=False)
        runs.delivered(db, run_id, lab_id, models.model_id(db, lab_id, kept.fingerprint))
    runs.end(db, run_id, "finished", step=3, train_seconds=1.0, headline=0.5)


# ---- the key ------------------------------------------------------------------------------------------------------


def test_the_key_names_the_spec_but_its_label_the_code_and_the_arithmetic(monkeypatch):
    base = RunSpec(task="emails", family="lstm", embedding=8, hidden=8, steps=30, seed=1)
    key = run_identity.identity_key(base)
    assert len(key) == 64 and key == run_identity.identity_key(RunSpec(**dataclasses.asdict(base)))
    assert run_identity.identity_key(dataclasses.replace(base, name="my run")) == key  # a label changes nothing
    for change in ({"seed": 2}, {"hidden": 16}, {"steps": 31}, {"lr": 0.002}, {"batch_size": 32}):
        assert run_identity.identity_key(dataclasses.replace(base, **change)) != key, change
    monkeypatch.setattr(run_identity, "arithmetic", lambda: {"torch": "2.13.0", "cpu": "AVX512"})
    other_cpu = run_identity.identity_key(base)
    monkeypatch.setattr(run_identity, "arithmetic", lambda: {"torch": "2.14.0", "cpu": "AVX512"})
    assert len({key, other_cpu, run_identity.identity_key(base)}) == 3


def test_the_code_version_follows_the_training_paths_source(tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    for name in run_identity.TRAINING_PATH:
        if not name.endswith(".py"):
            continue
        (tmp_path / name).write_text(f"# {name}\n")
    (tmp_path / "models" / "a.py").write_text("x = 1\n")
    (tmp_path / "data").mkdir()
    monkeypatch.setattr(run_identity, "PACKAGE", tmp_path)
    run_identity.code_version.cache_clear()
    try:
        before = run_identity.code_version()
        (tmp_path / "models" / "a.py").write_text("x = 2\n")
        run_identity.code_version.cache_clear()
        assert run_identity.code_version() != before
        (tmp_path / "models" / "a.py").write_text("x = 1\n")
        (tmp_path / "unrelated.py").write_text("y = 1\n")  # not on the training path
        run_identity.code_version.cache_clear()
        assert run_identity.code_version() == before
    finally:
        run_identity.code_version.cache_clear()


# ---- following one run ------------------------------------------------------------------------------------------


def test_a_second_lab_asking_for_a_queued_run_follows_it_and_nothing_more_is_queued(db):
    first, second, other = _lab(db), _lab(db), _lab(db)
    run_id, how = runs.create_or_join(db, first, spec("quick"), key=KEY)
    assert how == "new"
    assert runs.create_or_join(db, second, spec("quick, again"), key=KEY) == (run_id, "joined")
    different, how = runs.create_or_join(db, other, spec("quick"), key="d" * 64)
    assert how == "new" and different != run_id
    assert runs.counts(db) == {"queued": 2, "running": 0}
    assert runs.counts(db, second) == {"queued": 1, "running": 0}
    assert runs.following(db, run_id) == [first, second]
    seen = {lab: _state(db, lab, run_id) for lab in (first, second)}
    assert all(s.followers == 2 and s.status == "queued" and s.queue_position == 1 for s in seen.values())
    assert seen[second].joined_at >= seen[first].joined_at
    assert seen[first].asked_first and not seen[second].asked_first  # (whose sentence its snapshots read)
    assert _state(db, other, run_id) is None and _state(db, first, different) is None


def test_admission_is_told_whether_the_lab_joins(db):
    first, second = _lab(db), _lab(db)
    told = []
    runs.create_or_join(db, first, spec(), key=KEY, admit=lambda total, mine, joining: told.append(joining))
    runs.create_or_join(db, second, spec(), key=KEY, admit=lambda total, mine, joining: told.append(joining))
    assert told == [False, True]

    def refuse(total, mine, joining):
        raise RuntimeError("full")

    with pytest.raises(RuntimeError):
        runs.create_or_join(db, _lab(db), spec(), key=KEY, admit=refuse)
    assert len(runs.following(db, runs.states(db, first)[0].id)) == 2  # the refused lab follows nothing


def test_a_run_being_stopped_is_not_joined(db):
    first, second = _lab(db), _lab(db)
    run_id, _ = runs.create_or_join(db, first, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    assert runs.request_stop(db, first, run_id) == "running"  # its only follower: the training stops
    again, how = runs.create_or_join(db, second, spec(), key=KEY)
    assert how == "new" and again != run_id


def test_stopping_a_shared_run_leaves_it_for_the_others_and_the_last_one_stops_it(db):
    first, second, third = _lab(db), _lab(db), _lab(db)
    run_id, _ = runs.create_or_join(db, first, spec(), key=KEY)
    for lab in (second, third):
        runs.create_or_join(db, lab, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    assert runs.request_stop(db, first, run_id) == "left"
    assert runs.request_stop(db, first, run_id) == "left"  # (twice: nothing more)
    gone = _state(db, first, run_id)
    assert (gone.status, gone.stop_reason, gone.fingerprint, gone.ended) == ("stopped", "left", None, True)
    assert runs.counts(db, first) == {"queued": 0, "running": 0}
    assert _state(db, second, run_id).status == "running" and _state(db, second, run_id).followers == 2
    assert runs.report(db, run_id, Report(step=2)).stop is False
    assert runs.request_stop(db, second, run_id) == "left"
    assert runs.request_stop(db, third, run_id) == "running"  # the last one: the training itself stops
    assert runs.report(db, run_id, Report(step=3)).stop is True
    _finish(db, run_id, named("shared"))
    assert _state(db, third, run_id).fingerprint is not None
    assert [_state(db, lab, run_id).fingerprint for lab in (first, second)] == [None, None]
    assert models.listed(db, first) == [] and models.listed(db, second) == []


def test_a_queued_shared_run_is_cancelled_only_by_its_last_follower(db):
    first, second = _lab(db), _lab(db)
    run_id, _ = runs.create_or_join(db, first, spec(), key=KEY)
    runs.create_or_join(db, second, spec(), key=KEY)
    assert runs.request_stop(db, second, run_id) == "left"
    assert _state(db, first, run_id).status == "queued"
    assert runs.request_stop(db, first, run_id) == "cancelled"
    assert runs.create_or_join(db, second, spec(), key=KEY)[1] == "new"  # a cancelled run is never joined


def test_a_lab_that_left_may_follow_again(db):
    first, second = _lab(db), _lab(db)
    run_id, _ = runs.create_or_join(db, first, spec(), key=KEY)
    runs.create_or_join(db, second, spec(), key=KEY)
    runs.request_stop(db, second, run_id)
    assert runs.create_or_join(db, second, spec(), key=KEY) == (run_id, "joined")
    assert _state(db, second, run_id).status == "queued" and runs.following(db, run_id) == [first, second]


def test_every_follower_gets_its_own_copy_of_the_model(db):
    class_labs = [_lab(db) for _ in range(5)]
    run_id, _ = runs.create_or_join(db, class_labs[0], spec(), key=KEY)
    for lab in class_labs[1:]:
        runs.create_or_join(db, lab, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    _finish(db, run_id, named("for the class"))
    ends = [_state(db, lab, run_id) for lab in class_labs]
    assert {s.status for s in ends} == {"finished"} and {s.followers for s in ends} == {5}
    fingerprints = {s.fingerprint for s in ends}
    assert len(fingerprints) == 1 and None not in fingerprints
    for lab in class_labs:
        (model,) = models.listed(db, lab)
        assert models.data(db, lab, model.fingerprint) == named("for the class")
    models.remove(db, class_labs[2], ends[2].fingerprint)  # one lab's copy goes: the others keep theirs
    assert _state(db, class_labs[2], run_id).fingerprint is None
    assert _state(db, class_labs[3], run_id).fingerprint == ends[3].fingerprint


def test_thirty_labs_asking_at_once_follow_one_run(db):
    class_labs = [_lab(db) for _ in range(30)]
    found = in_threads(*[functools.partial(runs.create_or_join, db, lab, spec(), key=KEY) for lab in class_labs])
    assert len({run_id for run_id, _how in found}) == 1
    assert sorted(how for _id, how in found) == ["joined"] * 29 + ["new"]
    assert runs.counts(db) == {"queued": 1, "running": 0}
    assert len(runs.following(db, found[0][0])) == 30


# ---- a finished run ---------------------------------------------------------------------------------------------


def test_a_finished_runs_model_is_found_by_its_key_while_a_lab_keeps_it(db):
    first, second = _lab(db), _lab(db)
    assert runs.finished_model(db, KEY) is None
    run_id, _ = runs.create_or_join(db, first, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    _finish(db, run_id, named("done once"))
    assert runs.finished_model(db, KEY) == (run_id, named("done once"))
    kept, _ = models.add(db, second, named("done once"))
    runs.follow_finished(db, second, run_id, models.model_id(db, second, kept.fingerprint))
    taken = _state(db, second, run_id)
    assert (taken.status, taken.followers, taken.fingerprint) == ("finished", 2, kept.fingerprint)
    assert taken.losses == _state(db, first, run_id).losses  # its history, to replay
    models.remove(db, first, kept.fingerprint)
    assert runs.finished_model(db, KEY) == (run_id, named("done once"))  # the second lab's copy
    models.remove(db, second, kept.fingerprint)
    assert runs.finished_model(db, KEY) is None  # no lab keeps its model: it would be trained again


def test_a_stopped_or_failed_run_is_never_taken_as_finished(db):
    lab = _lab(db)
    for status in ("stopped", "failed"):
        run_id, _ = runs.create_or_join(db, lab, spec(), key=KEY)
        runs.begin(db, run_id, "worker", 1)
        kept, _ = models.add(db, lab, named(status), within_limits=False)
        runs.delivered(db, run_id, lab, models.model_id(db, lab, kept.fingerprint))
        runs.end(db, run_id, status)
    assert runs.finished_model(db, KEY) is None


# ---- a run outlives the lab that asked first ----------------------------------------------------------------------


def test_a_shared_run_outlives_the_first_lab_being_forgotten_or_purged(db):
    first, second = _lab(db), _lab(db)
    run_id, _ = runs.create_or_join(db, first, spec(), key=KEY)
    runs.create_or_join(db, second, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    labs.forget(db, first)
    control = runs.report(db, run_id, Report(step=1))
    assert control.stop is False and control.last_seen is not None
    assert _state(db, second, run_id).followers == 1
    labs.forget(db, second)  # nobody follows it any more: the worker is told the run is gone
    assert runs.report(db, run_id, Report(step=2)) == Control(stop=True, last_seen=None)

    old, young = _lab(db), _lab(db)
    run_id, _ = runs.create_or_join(db, old, spec(), key="o" * 64)
    runs.create_or_join(db, young, spec(), key="o" * 64)
    with db.transaction() as session:  # the first lab's last look, long ago
        session.get(Lab, old).last_seen_at = 1.0
    assert labs.purge(db) >= 1
    assert _state(db, young, run_id).status == "queued" and runs.following(db, run_id) == [young]


def test_the_report_reads_the_latest_look_of_any_follower(db):
    first, second = _lab(db), _lab(db)
    run_id, _ = runs.create_or_join(db, first, spec(), key=KEY)
    runs.create_or_join(db, second, spec(), key=KEY)
    runs.begin(db, run_id, "worker", 1)
    labs.seen(db, second, now=time.time() + 1000)
    assert runs.report(db, run_id, Report(step=1)).last_seen == pytest.approx(time.time() + 1000, abs=5)
    runs.request_stop(db, second, run_id)  # a lab that left is nobody looking
    assert runs.report(db, run_id, Report(step=2)).last_seen < time.time() + 500


def test_a_lab_joining_another_keeps_one_following_of_a_run_both_follow(db):
    mine, theirs = _lab(db), _lab(db)
    shared, _ = runs.create_or_join(db, mine, spec(), key=KEY)
    runs.create_or_join(db, theirs, spec(), key=KEY)
    own, _ = runs.create_or_join(db, mine, spec("own"), key="m" * 64)
    code = labs.transfer_code(db, theirs)
    labs.join(db, code, mine)
    assert runs.following(db, shared) == [theirs] and runs.following(db, own) == [theirs]
    assert {s.id for s in runs.states(db, theirs)} == {shared, own}
